"""The opinion-metrics command line, on the bundled example and on the real shared files."""

import csv
import json

import pytest
from conftest import MOVIE_REVIEWS, REPO, TOURISM_REVIEWS, load_movie_reviews, require_shared

from opinion_metrics import keyword_prf, pool_by_group, weighted_keyword_prf
from opinion_metrics.aspects import VIETNAMESE_COLUMNS, aspect_sentiment_score
from opinion_metrics.cli import main
from opinion_metrics.tables import load_table

EXAMPLE = REPO / "examples" / "reviews.jsonl"


def test_bundled_example_prints_one_table_per_family_and_writes_json(tmp_path, capsys):
    output = tmp_path / "results.json"
    assert main([str(EXAMPLE), "--by", "model", "--output", str(output), "--plot", str(tmp_path / "r.png")]) == 0
    printed = capsys.readouterr().out
    assert "keyword_prf" in printed and "weighted_keyword_prf" in printed and "baseline" in printed
    results = json.loads(output.read_text())
    table = load_table(EXAMPLE, [], [])
    rows = [i for i, model in enumerate(table["model"]) if model == "baseline"]
    expected = keyword_prf([table["predictions"][i] for i in rows], [table["references"][i] for i in rows])
    assert results["baseline"]["keyword_prf"] == pytest.approx(expected)
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_csv_with_semicolon_lists_and_group_pooling(tmp_path, capsys):
    path = tmp_path / "data.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["movie", "predictions", "scores", "references"])
        writer.writerow(["m1", "war; jedi", "0.9; 0.1", "jedi; empire"])
        writer.writerow(["m1", "droid", "0.5", "jedi; empire"])
        writer.writerow(["m2", "ring", "1.0", "hobbit"])
    assert main([str(path), "--group", "movie", "--output", str(tmp_path / "out.json")]) == 0
    pooled = pool_by_group(
        [["war", "jedi"], ["droid"], ["ring"]],
        [["jedi", "empire"]] * 2 + [["hobbit"]],
        ["m1", "m1", "m2"],
        scores=[[0.9, 0.1], [0.5], [1.0]],
    )
    results = json.loads((tmp_path / "out.json").read_text())["all"]
    assert results["keyword_prf"] == pytest.approx(keyword_prf(pooled.predictions, pooled.references))
    assert results["weighted_keyword_prf"] == pytest.approx(
        weighted_keyword_prf(pooled.predictions, pooled.scores, pooled.references)
    )


def test_errors_are_one_readable_line(tmp_path, capsys):
    assert main([str(EXAMPLE), "--predictions", "nope"]) == 2
    assert "column 'nope' not found" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"predictions": ["a", 3], "references": ["a"]}\n')
    assert main([str(bad)]) == 1  # a data error
    assert "predictions: line 1 of bad.jsonl, keyword 1 must be a str, got int 3" in capsys.readouterr().err


def test_real_movie_reviews_with_a_separate_gold_file(tmp_path, capsys):
    directory = require_shared(MOVIE_REVIEWS)
    output = tmp_path / "out.json"
    code = main(
        [
            str(directory / "IndianaJones.jsonl.gz"),
            "--predictions",
            "keywords_base",
            "--scores",
            "scores_base",
            "--gold",
            str(directory / "ground_truth.jsonl"),
            "--clip-scores",
            "--output",
            str(output),
        ]
    )
    assert code == 0
    reviews = [r for r in load_movie_reviews() if r["movie"] == "IndianaJones"]
    predictions = [r["keywords_base"] for r in reviews]
    references = [r["gold"] for r in reviews]
    results = json.loads(output.read_text())["all"]
    assert results["keyword_prf"] == pytest.approx(keyword_prf(predictions, references))
    expected = weighted_keyword_prf(predictions, [r["scores_base"] for r in reviews], references, clip_scores=True)
    assert results["weighted_keyword_prf"] == pytest.approx(expected)


def test_real_tourism_ratings(tmp_path, capsys):
    source = require_shared(TOURISM_REVIEWS)
    with open(source, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:500]
    path = tmp_path / "ratings.csv"  # the gold columns plus a model's predictions
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(VIETNAMESE_COLUMNS) + [f"pred_{c}" for c in VIETNAMESE_COLUMNS])
        for i, row in enumerate(rows):
            gold = [int(row[c]) for c in VIETNAMESE_COLUMNS]
            writer.writerow(gold + [g if (i + j) % 7 else (g % 5) + 1 for j, g in enumerate(gold)])
    output = tmp_path / "out.json"
    assert main([str(path), "--aspects", ",".join(VIETNAMESE_COLUMNS), "--output", str(output)]) == 0
    table = load_table(path, [], [])
    gold = [[int(table[c][i]) for c in VIETNAMESE_COLUMNS] for i in range(len(rows))]
    predicted = [[int(table[f"pred_{c}"][i]) for c in VIETNAMESE_COLUMNS] for i in range(len(rows))]
    expected = aspect_sentiment_score(predicted, gold, aspects=VIETNAMESE_COLUMNS)
    assert json.loads(output.read_text())["all"]["aspect_sentiment_score"] == pytest.approx(expected)


def test_a_non_integer_rating_in_a_csv_is_an_error_not_truncated(tmp_path, capsys):
    path = tmp_path / "ratings.csv"
    path.write_text("x,y,pred_x,pred_y\n0,4,0,4.5\n", encoding="utf-8")
    assert main([str(path), "--aspects", "x,y"]) == 1
    assert "line 2 of ratings.csv, aspect 'y': rating must be an integer, got 4.5" in capsys.readouterr().err
