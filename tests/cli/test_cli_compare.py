"""--compare on the command line: the values of compare_systems on the real movie data and on
the bundled example (by model, with the chosen method and level, Holm's correction), systems
that cannot be paired refused, usage errors."""

import json

import pytest
from cli_cases import BY_MODEL, EXAMPLE, _assert_close, _jsonl
from conftest import MOVIE_REVIEWS, load_movie_reviews, require_shared

from opinion_metrics.cli import main
from opinion_metrics.io.read import load_table


def test_compare_matches_compare_systems_on_the_real_movie_data(tmp_path, capsys):
    from opinion_metrics import compare_systems
    from opinion_metrics.view.significance import signed  # +0.0000 for a difference that rounds to 0, never -0.0000

    directory = require_shared(MOVIE_REVIEWS)
    output = tmp_path / "out.json"
    arguments = [str(directory / "SW_Episode4.jsonl.gz"), "--predictions", "keywords_*", "--scores", "scores_*"]
    arguments += ["--gold", str(directory / "ground_truth.jsonl"), "--clip-scores", "--compare", "base"]
    arguments += ["--metrics", "keyword_prf", "weighted_keyword_prf", "--n-resamples", "300"]
    assert main([*arguments, "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    written = json.loads(output.read_text())
    assert list(written["results"]) == ["base", "reranker", "sentiment", "metadata"]
    comparison = written["comparison"]
    assert (comparison["base"], comparison["method"], comparison["confidence_level"]) == ("base", "permutation", 0.95)
    reviews = [r for r in load_movie_reviews() if r["movie"] == "SW_Episode4"]
    references = [r["gold"] for r in reviews]
    assert list(comparison["differences"]) == ["reranker", "sentiment", "metadata"]
    significant = 0
    for model in comparison["differences"]:
        expected = compare_systems(
            "keyword_prf", [r["keywords_base"] for r in reviews], [r[f"keywords_{model}"] for r in reviews],
            references, n_resamples=300,
        )  # fmt: skip
        _assert_close(comparison["differences"][model]["keyword_prf"], expected)
        expected = compare_systems(
            "weighted_keyword_prf", [r["keywords_base"] for r in reviews], [r[f"keywords_{model}"] for r in reviews],
            references, scores_a=[r["scores_base"] for r in reviews], scores_b=[r[f"scores_{model}"] for r in reviews],
            n_resamples=300, clip_scores=True,
        )  # fmt: skip
        _assert_close(comparison["differences"][model]["weighted_keyword_prf"], expected)
        for family in ("keyword_prf", "weighted_keyword_prf"):
            block = next(b for b in printed.split("\n\n") if b.startswith(f"{family}: each model against base"))
            for key, result in comparison["differences"][model][family].items():
                line = next(line for line in block.splitlines() if line.split()[:3] == [model, key, "↑"])
                assert line.split()[3:8] == [
                    f"{result['a']:.4f}", f"{result['b']:.4f}", signed(result["difference"]),
                    f"[{signed(result['difference_ci_low'])},", f"{signed(result['difference_ci_high'])}]",
                ]  # fmt: skip
                # Holm over the 3 models compared with base: at least the p-value, which the 9th field shows
                assert result["p_value_holm"] >= result["p_value"] and result["pairs"] == len(reviews)
                assert line.rstrip("‡").endswith("†") == (result["p_value_holm"] < 0.05)
                significant += result["p_value_holm"] < 0.05
    # the "sentiment" model differs from "base" beyond doubt; "reranker" has the same keywords (p = 1)
    assert comparison["differences"]["sentiment"]["keyword_prf"]["f1"]["p_value"] < 0.01
    assert comparison["differences"]["reranker"]["keyword_prf"]["f1"]["p_value"] == 1.0
    assert significant > 0
    assert "\n† significant at the 0.05 level, after Holm's correction for the 3 systems compared with base" in printed


def test_compare_by_model_pairs_rows_by_position_with_the_chosen_method_and_level(tmp_path, capsys):
    from opinion_metrics import compare_systems

    table = load_table(EXAMPLE, [], [])
    by_model = {m: [i for i, model in enumerate(table["model"]) if model == m] for m in ("baseline", "sentiment")}
    output = tmp_path / "out.json"
    arguments = ["--by", "model", "--compare", "baseline", "--compare-method", "bootstrap", "--ci", "0.8"]
    assert main([str(EXAMPLE), *arguments, "--metrics", "keyword_prf", "--output", str(output)]) == 0
    expected = compare_systems(
        "keyword_prf",
        [table["predictions"][i] for i in by_model["baseline"]],
        [table["predictions"][i] for i in by_model["sentiment"]],
        [table["references"][i] for i in by_model["baseline"]],
        method="bootstrap",
        confidence_level=0.8,
    )
    written = json.loads(output.read_text())
    _assert_close(written["comparison"]["differences"]["sentiment"]["keyword_prf"], expected)
    assert written["comparison"]["method"] == "bootstrap" and written["comparison"]["confidence_level"] == 0.8
    printed = capsys.readouterr().out
    assert "80% interval" in printed and "† significant at the 0.2 level" in printed
    assert "p-values and intervals: the same 1,000 paired bootstrap resamples" in printed
    assert "sentiment vs baseline: 6 pairs" in printed and "warning: sentiment vs baseline has only 6 pairs" in printed


def test_compare_refuses_systems_that_cannot_be_paired(tmp_path, capsys):
    rows = [dict(row) for row in BY_MODEL]  # m1 on lines 1 and 3, m2 on lines 2 and 4
    path = _jsonl(tmp_path / "x.jsonl", rows)
    assert main([str(path), "--by", "model", "--compare", "m1", "--metrics", "keyword_prf"]) == 0
    rows[3]["references"] = ["c"]
    _jsonl(path, rows)
    assert main([str(path), "--by", "model", "--compare", "m1", "--metrics", "keyword_prf"]) == 1
    assert (
        "cannot compare model 'm2' with 'm1': their references differ at line 4 of x.jsonl ('m2') and "
        "line 3 of x.jsonl ('m1'); examples are paired by position within each model's rows"
    ) in capsys.readouterr().err
    _jsonl(path, rows[:3])
    assert main([str(path), "--by", "model", "--compare", "m2", "--metrics", "keyword_prf"]) == 1
    assert "cannot compare model 'm1' with 'm2': 'm2' has 1 row, 'm1' has 2" in capsys.readouterr().err
    texts = [{**row, "review": f"a b {i // 2}"} for i, row in enumerate(BY_MODEL)]  # lines 3 and 4 differ
    path = _jsonl(tmp_path / "t.jsonl", [{**row, "review": "a b"} for row in BY_MODEL[:2]] + texts[2:])
    arguments = ["--by", "model", "--compare", "m1", "--metrics", "keyword_prf"]
    assert main([str(path), *arguments]) == 0  # the texts are not read
    texts[3]["review"] = "b"
    _jsonl(path, texts)
    assert main([str(path), *arguments, "--presence", "present"]) == 1
    assert "their texts differ at line 4 of t.jsonl ('m2') and line 3 of t.jsonl ('m1')" in capsys.readouterr().err
    # after a --gold join: the gold lists of the movies at the same position differ
    reviews = [
        {"model": m, "movie": movie, "predictions": ["x"]}
        for m, movie in [("a", "s"), ("b", "s"), ("a", "t"), ("b", "u")]
    ]
    gold = [{"movie": "s", "keywords": ["x"]}, {"movie": "t", "keywords": ["y"]}, {"movie": "u", "keywords": ["z"]}]
    arguments = ["--gold", str(_jsonl(tmp_path / "gold.jsonl", gold)), "--by", "model", "--compare", "a"]
    assert main([str(_jsonl(tmp_path / "r.jsonl", reviews)), *arguments]) == 1
    assert "their references differ at line 4 of r.jsonl ('b') and line 3 of r.jsonl ('a')" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--system", "none", "--baseline", "baseline"], "--baseline needs systems to compare: a system column"),
        (
            ["--baseline", "nope"],
            "--baseline 'nope' is not a system of column 'model' (there: baseline, sentiment)",
        ),
        (["--baseline", "Baseline"], "(there: baseline, sentiment); did you mean 'baseline'?"),
        (["--baseline", "sentimnt"], "(there: baseline, sentiment); did you mean 'sentiment'?"),
        (["--compare-method", "bootstrap"], "--compare-method needs --baseline NAME"),
        (["--by", "review_id", "--compare", "r1"], "--compare 'r1': there is no other value of --by review_id"),
    ],
)
def test_compare_usage_errors(tmp_path, capsys, arguments, message):
    rows = [{"review_id": "r1", "predictions": row["predictions"], "references": row["references"]} for row in BY_MODEL]
    path = _jsonl(tmp_path / "x.jsonl", rows[:2])  # one system
    source = EXAMPLE if "review_id" not in arguments else path
    assert main([str(source), *arguments]) == 2
    assert message in capsys.readouterr().err


def test_the_methods_note_gives_the_example_of_each_family_compared(capsys):
    """The report's last note says which pairs can move the test with an example of every family
    in the report, never keyword_prf's alone under another family."""
    arguments = [str(EXAMPLE), "--system", "model", "--baseline", "baseline", "--n-resamples", "50"]
    assert main([*arguments, "--metrics", "weighted_keyword_prf"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "for weighted_keyword_prf, the same keywords in another order can score differently" in printed
    assert "for keyword_prf," not in printed
    assert main([*arguments, "--metrics", "keyword_prf", "weighted_keyword_prf"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "for keyword_prf, the same keywords in another order score alike; for weighted_keyword_prf," in printed
