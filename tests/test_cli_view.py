"""The CLI's systems-by-metrics view (issue 30): tables that fit the terminal without breaking a
word or a number, full names with their direction, the best value marked, the aspect family one
block per aspect, a baseline's differences and report; columns found under other names; the
per-example file joins back; misspelt families and options get a suggestion."""

from __future__ import annotations

import json
import re

import pytest
from conftest import MOVIE_REVIEWS, require_shared

from opinion_metrics import aspect_sentiment_score, keyword_prf
from opinion_metrics.cli import main

THREE = ["tfidf", "yake", "keybert"]


def _three_systems(tmp_path, rows=8):
    """Three systems over the same reviews, one row per system and review (a `model` column)."""
    gold = [[f"gold {i}", f"theme {i}", "acting"] for i in range(rows)]
    found = {
        "tfidf": [[f"gold {i}", "movie"] for i in range(rows)],
        "yake": [[f"theme {i}", f"gold {i}", "film"] if i % 2 else ["plot"] for i in range(rows)],
        "keybert": [["acting", f"theme {i}"] for i in range(rows)],
    }
    lines = []
    for system in THREE:
        for i in range(rows):
            scores = [round(0.9 - 0.1 * j, 2) for j in range(len(found[system][i]))]
            lines.append({"review_id": i, "model": system, "keywords": found[system][i], "gold": gold[i],
                          "scores": scores, "review": f"review {i}"})  # fmt: skip
    path = tmp_path / "three.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path, found, gold


def _numbers(text):
    return re.findall(r"[+-]?\d+\.\d{4}", text)


@pytest.mark.parametrize("columns", [100, 72, 40])
def test_a_wide_table_is_split_into_blocks_that_fit_and_no_number_is_broken(tmp_path, capsys, monkeypatch, columns):
    path, found, gold = _three_systems(tmp_path)
    arguments = [str(path), "--ci", "0.95", "--baseline", "tfidf", "--n-resamples", "200"]
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(arguments) == 0
    wide = capsys.readouterr().out
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(arguments) == 0
    fitted = capsys.readouterr().out
    lines = fitted.splitlines()
    # Prose is wrapped between words; a table line is wider than the terminal only where a single
    # value column (with its row names) is: it is never cut or wrapped.
    too_wide = [line for line in lines if len(line) > columns]
    assert all(columns == 40 and "·" not in line and len(_numbers(line)) <= 4 for line in too_wide), too_wide
    # The same numbers in the same order within each row: nothing cut, nothing wrapped mid-number.
    assert sorted(_numbers(fitted)) == sorted(_numbers(wide))
    assert "[0." in fitted
    # Every value of keybert's keyword_prf row is in the fitted table, whole.
    expected = keyword_prf(found["keybert"], gold)
    block = fitted.split("\nweighted_keyword_prf\n")[0]
    keybert = " ".join(line for line in block.splitlines() if line.startswith("keybert "))
    assert all(f"{value:.4f}" in keybert for value in expected.values())
    if columns < 100:  # split into stacked blocks, each under its own header
        assert block.count("\nmodel ") >= 2


def test_the_table_marks_the_best_value_and_the_direction_of_each_metric(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    path, found, gold = _three_systems(tmp_path)
    assert main([str(path), "--metrics", "keyword_prf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [  # wrapped between parts at 100 columns
        "columns: predicted keywords from `keywords`; gold keywords from `gold`",
        "  3 systems from `model` (one row each; --system none pools them)",
    ]
    lines = lines[1:]
    assert lines[1] == "keyword_prf"
    assert lines[2].split() == ["model", "precision", "↑", "recall", "↑", "f1", "↑"]
    values = {system: keyword_prf(found[system], gold) for system in THREE}
    for line in lines[3:6]:
        system, *cells = line.split()
        for key, cell in zip(("precision", "recall", "f1"), cells):
            best = max(round(values[other][key], 4) for other in THREE)
            assert cell == f"{values[system][key]:.4f}" + ("*" if round(values[system][key], 4) == best else "")
    assert lines[6] == "↑ higher is better · * best in its column"
    assert lines[7] == "examples per model: 8"
    assert "· top_k M ·" in " ".join(lines[8:10])  # as the Spaces write it (M: all predictions)


def test_the_aspect_family_gets_one_block_per_aspect(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    rows = []
    ratings = {"a": [[5, 0, 3], [0, 4, 0], [2, 2, 0]], "b": [[4, 0, 3], [0, 0, 1], [2, 3, 0]]}
    gold = [[5, 0, 2], [0, 4, 0], [3, 2, 0]]
    for system, predicted in ratings.items():
        for row, (p, g) in enumerate(zip(predicted, gold)):
            rows.append({"model": system, "review_id": row, **dict(zip(["food", "hotel", "bus"], g)),
                         **{f"pred_{a}": v for a, v in zip(["food", "hotel", "bus"], p)}})  # fmt: skip
    path = tmp_path / "ratings.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert main([str(path), "--metrics", "aspect_sentiment_score", "--aspects", "food,hotel,bus"]) == 0
    printed = capsys.readouterr().out
    blocks = [line for line in printed.splitlines() if line.startswith("aspect_sentiment_score")]
    assert blocks == ["aspect_sentiment_score"] + [f"aspect_sentiment_score: {a}" for a in ("food", "hotel", "bus")]
    expected = aspect_sentiment_score(ratings["b"], gold, aspects=["food", "hotel", "bus"])
    hotel = printed.split("aspect_sentiment_score: hotel\n")[1].splitlines()
    assert hotel[0].split() == ["model", "f1", "↑", "r2", "↑", "score", "↑"]
    row = next(line for line in hotel if line.startswith("b "))
    assert [cell.rstrip("*") for cell in row.split()[1:]] == [
        f"{expected[key]:.4f}" for key in ("f1_hotel", "r2_hotel", "score_hotel")
    ]
    assert max(len(line) for line in printed.splitlines()) <= 100


def test_a_baseline_marks_differences_and_reports_pairs_and_holm(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    path, found, gold = _three_systems(tmp_path)
    output = tmp_path / "out.json"
    assert main([str(path), "--metrics", "keyword_prf", "--baseline", "tfidf", "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    differences = json.loads(output.read_text())["comparison"]["differences"]
    yake = differences["yake"]["keyword_prf"]["precision"]
    row = next(line for line in printed.splitlines() if line.startswith("yake "))
    mark = "†" if yake["p_value_holm"] < 0.05 else ""
    assert f"{yake['difference']:+.4f}{mark}" in row
    assert "tfidf (baseline)" in printed
    assert max(len(line) for line in printed.splitlines()) <= 100
    printed = " ".join(line.strip() for line in printed.splitlines())  # the notes wrap at 100 columns
    assert "Holm's correction for the 2 systems compared with tfidf" in printed
    assert (
        "yake vs tfidf: 8 pairs, 8 answered differently (other keywords, order or scores); p cannot go below 0.008"
        in printed
    )
    assert "warning: yake vs tfidf has only 8 pairs, too few for a reliable comparison (30 or more advised)" in printed
    assert yake["smallest_p_value"] == pytest.approx(2**-7) and yake["pairs"] == 8


def test_columns_side_by_side_are_systems_and_the_per_example_file_joins_back(tmp_path, capsys):
    directory = require_shared(MOVIE_REVIEWS)
    per_example = tmp_path / "detail.jsonl"
    arguments = [str(directory / "SW_Episode4.jsonl.gz"), "--gold", str(directory / "ground_truth.jsonl")]
    assert main([*arguments, "--metrics", "keyword_prf", "--per-example", str(per_example)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("columns: 4 systems side by side: predicted keywords from `keywords_*`\n")
    records = [json.loads(line) for line in per_example.read_text().splitlines()]
    assert {record["model"] for record in records} == {"base", "reranker", "sentiment", "metadata"}
    import gzip

    with gzip.open(directory / "SW_Episode4.jsonl.gz", "rt", encoding="utf-8") as stream:
        reviews = {row["review_id"]: row for row in map(json.loads, stream)}
    for record in records[::97]:
        review = reviews[record["review_id"]]
        assert record["detail"]["predictions"] == review[f"keywords_{record['model']}"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--metrics", "keyword_prff"], "no metric family 'keyword_prff'; did you mean 'keyword_prf'?"),
        (["--metrics", "semantic"], "no metric family 'semantic'; did you mean 'semantic_keyword_prf'?"),
        (["--top-kk", "3"], "unrecognized arguments: --top-kk 3 (did you mean --top-k?)"),
        (["--basline", "x"], "(did you mean --baseline?)"),
    ],
)
def test_a_misspelt_family_or_option_gets_the_closest_name(tmp_path, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit:
        main(["x.jsonl", *arguments])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 2  # the error and a one-line usage


def test_help_speaks_the_users_words_and_fits_100_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "MetricState" not in text and "model object" not in text and "_ci_low /" not in text.split("--ci")[0]
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "--baseline NAME" in text and "--system COLUMN" in text


def test_a_first_time_user_without_gold_lists_is_told_about_gold(capsys, monkeypatch):
    # the cold pass: the movie reviews keep their gold keywords in a file of their own
    directory = require_shared(MOVIE_REVIEWS)
    assert main([str(directory / "SW_Episode4.jsonl.gz"), "--metrics", "keyword_prf"]) == 2
    assert "choose one with --references, or join a file of gold lists with --gold FILE" in capsys.readouterr().err


def test_a_wrapped_options_line_starts_its_next_line_with_the_separator(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    path, _, _ = _three_systems(tmp_path)
    assert main([str(path), "--metrics", "keyword_prf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("options: "))
    continued = [line for line in lines[start + 1 :] if line.startswith("  ")]
    assert continued and all(
        line.startswith("  · ") for line in continued
    )  # "on" then "average macro" never read as one
