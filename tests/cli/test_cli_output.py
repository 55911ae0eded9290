"""What the CLI prints and writes for a person: counts, options, legends, per-example detail,
and a stderr free of third-party progress bars."""

from __future__ import annotations

import csv
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from opinion_metrics import keyword_diversity, keyword_prf, weighted_keyword_prf
from opinion_metrics.cli import main
from opinion_metrics.families.registry import FAMILIES
from opinion_metrics.io.read import load_table

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "reviews.jsonl"


def _by_model(column: str, model: str) -> list:
    table = load_table(EXAMPLE, ["predictions", "references", "scores"], [])
    return [value for value, name in zip(table[column], table["model"]) if name == model]


def _block(printed: str, family: str) -> list[str]:
    return next(block for block in printed.split("\n\n") if block.splitlines()[0] == family).splitlines()


def test_each_table_says_how_many_examples_each_row_covers_and_the_options(capsys):
    assert main([str(EXAMPLE), "--by", "model", "--metrics", "keyword_prf", "--match", "token", "--top-k", "3"]) == 0
    block = _block(capsys.readouterr().out, "keyword_prf")
    count = len(_by_model("predictions", "baseline"))
    assert count == len(_by_model("predictions", "sentiment")) == 6
    assert block[4] == "↑ higher is better · * best in its column"
    assert block[5] == f"examples per model: {count}"
    options = block[6].removeprefix("options: ").split(" · ")
    # the given options, and the library's defaults for the others
    assert options == [
        "presence all",
        "match token",
        "normalize default",
        "stemmer none",
        "one_to_one on",
        "average macro",
        "top_k 3",
        "zero_division 0",
        "no intervals",
    ]
    row = [cell.rstrip("*") for cell in block[2].split()]
    expected = keyword_prf(
        _by_model("predictions", "baseline"), _by_model("references", "baseline"), match="token", top_k=3
    )
    assert row == ["baseline", *(f"{value:.4f}" for value in expected.values())]


def test_rows_of_different_sizes_are_counted_each(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    rows = [{"model": "a", "predictions": ["x"], "references": ["x"]}] * 3 + [
        {"model": "b", "predictions": ["y"], "references": ["x"]}
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert main([str(path), "--by", "model", "--metrics", "keyword_prf", "--ci", "0.9", "--n-resamples", "50"]) == 0
    block = _block(capsys.readouterr().out, "keyword_prf")
    assert "examples per model: a 3, b 1" in block
    assert block[-1].endswith("0.9 intervals · n_resamples 50 · random_state 0 · bootstrap multinomial")


def test_explain_gives_meaning_range_and_direction_of_each_column_from_the_declarations(capsys):
    assert main([str(EXAMPLE), "--by", "model", "--explain"]) == 0
    printed = capsys.readouterr().out
    for family in ("keyword_prf", "weighted_keyword_prf"):
        block = _block(printed, family)
        keys = [word for word in block[1].split()[1:] if word != "↑"]
        legend = block[-len(keys) :]
        for key, line in zip(keys, legend):
            output = next(o for o in FAMILIES[family].outputs if o.key == key.replace("@5", "@{k}"))
            assert line.split()[0] == key
            assert line.endswith(f"{output.range}, higher is better: {output.meaning}")


def test_keyword_diversity_shows_self_similarity_whenever_the_semantic_extra_is_installed(capsys, tmp_path):
    pytest.importorskip("sentence_transformers")
    output = tmp_path / "out.json"
    arguments = [str(EXAMPLE), "--by", "model", "--metrics", "keyword_diversity", "--explain", "--output", str(output)]
    assert main(arguments) == 0
    block = _block(capsys.readouterr().out, "keyword_diversity")
    assert block[1].split() == ["model", "unique_keyword_ratio", "↑", "unique_token_ratio", "↑", "self_similarity", "↓"]
    assert "↑ higher is better · ↓ lower is better · * best in its column" in block
    assert "lower is better" in block[-1] and block[-1].split()[0] == "self_similarity"
    predictions = _by_model("predictions", "baseline")
    expected = keyword_diversity(predictions, model="sentence-transformers/all-MiniLM-L6-v2")
    assert json.loads(output.read_text())["baseline"]["keyword_diversity"] == pytest.approx(expected)


def test_per_example_jsonl_gives_each_examples_values_and_its_matches(tmp_path, capsys):
    path = tmp_path / "detail.jsonl"
    assert main([str(EXAMPLE), "--by", "model", "--per-example", str(path)]) == 0
    assert f"wrote {path} (24 rows" in capsys.readouterr().out  # 2 models x 6 examples x 2 families
    records = [json.loads(line) for line in path.read_text().splitlines()]
    predictions, references = _by_model("predictions", "sentiment"), _by_model("references", "sentiment")
    scores = _by_model("scores", "sentiment")
    lexical = [r for r in records if r["model"] == "sentiment" and r["family"] == "keyword_prf"]
    expected = keyword_prf(predictions, references, return_per_example=True)["per_example"]
    assert [r["f1"] for r in lexical] == pytest.approx(expected["f1"])
    assert [r["precision"] for r in lexical] == pytest.approx(expected["precision"])
    # each record joins back to its row of the input by (model, review_id), and names its line
    table = load_table(EXAMPLE, ["predictions"], [])
    rows = {(model, review): i for i, (model, review) in enumerate(zip(table["model"], table["review_id"]))}
    for record in records:
        assert list(record)[:4] == ["model", "review_id", "line", "family"]
        row = rows[record["model"], record["review_id"]]
        assert record["line"] == row + 1 and record["detail"]["predictions"] == table["predictions"][row]
    for record, example_predictions, gold in zip(lexical, predictions, references):
        matches = record["detail"]["matches"]
        # one-to-one: distinct predictions and gold keywords, each pair related by substring
        assert len({m["prediction"] for m in matches}) == len({m["reference"] for m in matches}) == len(matches)
        assert all(m["prediction"] in m["reference"] or m["reference"] in m["prediction"] for m in matches)
        assert record["precision"] == pytest.approx(len(matches) / len(example_predictions))
        assert record["recall"] == pytest.approx(len(matches) / len(gold))
    weighted = [r for r in records if r["model"] == "sentiment" and r["family"] == "weighted_keyword_prf"]
    expected = weighted_keyword_prf(predictions, scores, references, return_per_example=True)["per_example"]
    assert [r["weighted_precision"] for r in weighted] == pytest.approx(expected["weighted_precision"])
    for record, example_scores in zip(weighted, scores):
        matched = sum(m["score"] for m in record["detail"]["matches"])
        assert record["weighted_precision"] == pytest.approx(matched / sum(example_scores))


def test_per_example_runs_each_family_once_and_writes_its_own_per_example_values(tmp_path, capsys, monkeypatch):
    import importlib

    lexical_module = importlib.import_module("opinion_metrics.families.keyword_prf")
    weighted_module = importlib.import_module("opinion_metrics.families.weighted_keyword_prf")

    calls = []
    for module, name in ((lexical_module, "keyword_prf"), (weighted_module, "weighted_keyword_prf")):
        function = getattr(module, name)

        @functools.wraps(function)  # its signature gives the family's defaults
        def counted(*args, _function=function, _name=name, **kwargs):
            calls.append(_name)
            return _function(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    path = tmp_path / "detail.jsonl"
    assert main([str(EXAMPLE), "--system", "none", "--per-example", str(path)]) == 0
    assert sorted(calls) == ["keyword_prf", "weighted_keyword_prf"]  # one run each, the detail included
    records = [json.loads(line) for line in path.read_text().splitlines()]
    table = load_table(EXAMPLE, ["predictions", "references", "scores"], [])
    predictions, references, scores = table["predictions"], table["references"], table["scores"]
    for family, expected in (
        ("keyword_prf", keyword_prf(predictions, references, return_per_example=True)["per_example"]),
        ("weighted_keyword_prf", weighted_keyword_prf(predictions, scores, references, return_per_example=True)),
    ):
        expected = expected.get("per_example", expected)
        written = [record for record in records if record["family"] == family]
        assert len(written) == len(predictions)
        for key, values in expected.items():
            assert [record[key] for record in written] == values


def test_per_example_csv_flattens_the_detail_and_a_wrong_extension_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "detail.csv"
    assert main([str(EXAMPLE), "--by", "model", "--metrics", "keyword_prf", "--per-example", str(path)]) == 0
    with open(path, newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 12
    first = rows[0]
    predictions, references = _by_model("predictions", "baseline")[0], _by_model("references", "baseline")[0]
    assert first["predictions"] == "; ".join(predictions) and first["references"] == "; ".join(references)
    pairs = [pair.split(" -> ") for pair in first["matches"].split("; ")]
    assert all(gold in prediction or prediction in gold for prediction, gold in pairs)
    assert float(first["precision"]) == pytest.approx(len(pairs) / len(predictions))
    assert main([str(EXAMPLE), "--per-example", str(tmp_path / "detail.txt")]) == 2
    assert "give a .jsonl or a .csv file" in capsys.readouterr().err


def test_model_loading_prints_no_third_party_progress_and_quiet_prints_nothing(tmp_path):
    pytest.importorskip("sentence_transformers")
    environment = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    command = [sys.executable, "-m", "opinion_metrics.cli", str(EXAMPLE), "--by", "model"]
    command += ["--metrics", "semantic_keyword_prf"]
    ran = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert "Loading weights" not in ran.stderr and "%|" not in ran.stderr, ran.stderr
    # the seconds of silence while sentence-transformers and the model load are announced
    assert "loading sentence-transformers and the model all-MiniLM-L6-v2" in ran.stderr
    assert ran.stdout.startswith("semantic_keyword_prf\n")
    # a long run: the CLI's own progress display on stderr, none with --quiet
    path = tmp_path / "many.jsonl"
    rows = [{"model": f"m{i % 2}", "predictions": ["a b"], "references": ["a"]} for i in range(2400)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    lexical = [sys.executable, "-m", "opinion_metrics.cli", str(path), "--by", "model"]
    shown = subprocess.run(lexical, capture_output=True, text=True, env=environment, timeout=600)
    assert "evaluating" in shown.stderr
    quiet = subprocess.run([*lexical, "--quiet"], capture_output=True, text=True, env=environment, timeout=600)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == shown.stdout


def test_the_plot_says_which_bar_is_lower_is_better():
    from opinion_metrics.view.figures import results_figure

    results = {"m": {"keyword_diversity": {"unique_keyword_ratio": 0.9, "self_similarity": 0.3}}}
    ticks = [label.get_text() for label in results_figure(results).axes[0].get_xticklabels()]
    assert ticks == ["unique\nkeyword_ratio", "self\nsimilarity\n(lower is better)"]


@pytest.mark.parametrize("family", [name for name in FAMILIES if name != "aspect_sentiment_score"])
def test_the_options_shown_are_the_declared_ones_that_change_a_value(family):
    from opinion_metrics.families.options import INTERVAL_OPTIONS
    from opinion_metrics.view.text import options_used

    declared = FAMILIES[family].options
    hidden = {option.name for option in declared if option.resource or option.kind == "object"}
    hidden.add("return_per_example")
    shown = {option.name for option in declared} - hidden
    assert set(options_used(family, {"confidence_level": 0.9})) == shown
    assert set(options_used(family, {})) == shown - (INTERVAL_OPTIONS - {"confidence_level"})
