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
    assert lines[:2] == [  # wrapped between parts at 100 columns, the separator kept
        "columns: predicted keywords from `keywords`; gold keywords from `gold`;",
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
    # the pairs yake scores differently from tfidf: those whose per-example P, R or F1 differ
    per_example = {system: keyword_prf(found[system], gold, return_per_example=True)["per_example"] for system in THREE}
    differing = sum(
        any(per_example["yake"][key][i] != per_example["tfidf"][key][i] for key in ("precision", "recall", "f1"))
        for i in range(8)
    )
    assert yake["differing_pairs"] == differing == 8
    assert "yake vs tfidf: 8 pairs, 8 scored differently; p cannot go below 0.008" in printed
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


# --- the first-time user's pass (issue 30, after it was built) ---------------------------------------


def _present_systems(tmp_path, rows=40):
    """Three systems on reviews of which only every third mentions a gold keyword; "reordered"
    gives tfidf's keywords in another order."""
    gold = [[f"gold{i}", f"theme{i}"] for i in range(rows)]
    texts = [f"a review about gold{i} and more" if i % 3 == 0 else "a review about nothing" for i in range(rows)]
    found = {
        "tfidf": [[f"gold{i}", "review"] for i in range(rows)],
        "reordered": [["review", f"gold{i}"] for i in range(rows)],
        "yake": [[f"gold{i}"] if i % 2 else ["about"] for i in range(rows)],
    }
    lines = [{"review_id": i, "model": system, "keywords": found[system][i], "gold": gold[i], "review": texts[i]}
             for system in found for i in range(rows)]  # fmt: skip
    path = tmp_path / "present.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path, found, gold, texts


def test_a_presence_view_counts_only_the_examples_that_count_everywhere(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    path, found, gold, texts = _present_systems(tmp_path)
    per_example = tmp_path / "why.jsonl"
    arguments = [str(path), "--metrics", "keyword_prf", "--presence", "present", "--baseline", "tfidf"]
    assert main([*arguments, "--per-example", str(per_example)]) == 0
    printed = capsys.readouterr().out
    values = {system: keyword_prf(found[system], gold, texts=texts, presence="present", return_per_example=True)
              for system in found}  # fmt: skip
    counted = [i for i, value in enumerate(values["tfidf"]["per_example"]["f1"]) if value is not None]
    assert len(counted) == 14  # reviews 0, 3, ..., 39
    assert "examples per model: 14 (26 of 40 left out: no present gold keyword)" in printed
    assert "options: presence present ·" in printed
    # the report: the 14 pairs that count, of which those whose per-example values differ
    yake = values["yake"]["per_example"]
    differing = sum(any(yake[key][i] != values["tfidf"]["per_example"][key][i] for key in yake) for i in counted)
    assert (
        f"yake vs tfidf: 14 pairs (26 of 40 examples left out: no present gold keyword), {differing} scored" in printed
    )
    assert "reordered vs tfidf: 14 pairs (26 of 40 examples left out: no present gold keyword), 0 scored" in printed
    assert "warning: yake vs tfidf has only 14 pairs, too few for a reliable comparison" in printed
    # the per-example file says why an example has no values
    records = [json.loads(line) for line in per_example.read_text().splitlines()]
    tfidf = [record for record in records if record["model"] == "tfidf"]
    assert [record["left_out"] for record in tfidf] == [
        None if i in counted else "no present gold keyword" for i in range(40)
    ]
    assert all((record["f1"] is None) == (record["left_out"] is not None) for record in records)


def test_a_system_that_only_reorders_the_keywords_scores_every_pair_alike(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    path, found, gold, _ = _present_systems(tmp_path)
    output = tmp_path / "out.json"
    assert main([str(path), "--metrics", "keyword_prf", "--baseline", "tfidf", "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    reordered = json.loads(output.read_text())["comparison"]["differences"]["reordered"]["keyword_prf"]["f1"]
    assert (reordered["pairs"], reordered["differing_pairs"], reordered["p_value"]) == (40, 0, 1.0)
    assert "reordered vs tfidf: 40 pairs, 0 scored differently; the two score every pair alike: p is 1" in printed


def _side_by_side(tmp_path):
    """Two movies, three systems side by side (keywords_base, keywords_reranker, keywords_yake)."""
    rows = []
    for i in range(12):
        movie = "alien" if i < 6 else "heat"
        rows.append({"review_id": i, "movie": movie, "gold": [f"g{i}", "space"],
                     "keywords_base": [f"g{i}", "x"], "keywords_reranker": ["x", f"g{i}"],
                     "keywords_yake": [f"g{i}", "space"] if movie == "alien" else ["y"]})  # fmt: skip
    path = tmp_path / "wide.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path, rows


@pytest.mark.parametrize("given", [["keywords_base", "keywords_yake"], ["keywords_base,keywords_yake"]])
def test_several_prediction_columns_pick_some_of_the_systems_side_by_side(tmp_path, capsys, given):
    path, rows = _side_by_side(tmp_path)
    output = tmp_path / "out.json"
    assert main([str(path), "--predictions", *given, "--metrics", "keyword_prf", "--output", str(output)]) == 0
    written = json.loads(output.read_text())
    assert list(written) == ["base", "yake"]  # named by what the columns do not share; reranker left out
    gold = [row["gold"] for row in rows]
    for system in ("base", "yake"):
        expected = keyword_prf([row[f"keywords_{system}"] for row in rows], gold)
        assert written[system]["keyword_prf"] == pytest.approx(expected)
    assert main([str(path), "--predictions", "keywords_base", "keywords_nope"]) == 2
    assert "column 'keywords_nope' not found" in capsys.readouterr().err


def test_a_baseline_per_movie_marks_the_best_and_applies_holm_within_each_movie(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    path, rows = _side_by_side(tmp_path)
    arguments = [str(path), "--predictions", "keywords_*", "--by", "movie", "--baseline", "base"]
    assert main([*arguments, "--metrics", "keyword_prf"]) == 0
    printed = capsys.readouterr().out
    table = printed.split("\nkeyword_prf\n")[1].split("\n\n")[0].splitlines()
    cells = {line.split()[0]: line.split()[1:] for line in table[1:] if "/" in line.split()[0]}
    gold = [row["gold"] for row in rows]
    for movie in ("alien", "heat"):
        chosen = [i for i, row in enumerate(rows) if row["movie"] == movie]
        values = {system: keyword_prf([rows[i][f"keywords_{system}"] for i in chosen], [gold[i] for i in chosen])
                  for system in ("base", "reranker", "yake")}  # fmt: skip
        best = max(round(value["precision"], 4) for value in values.values())
        for system, value in values.items():  # precision: the first cell; the best within the movie marked
            assert cells[f"{system}/{movie}"][0] == f"{value['precision']:.4f}" + (
                "*" if round(value["precision"], 4) == best else ""
            )
    assert "* best in its column within each movie" in printed
    assert "Holm's correction for the 2 systems compared with base within each movie (per metric)" in printed
    assert "4 systems" not in printed


def test_metric_families_may_be_separated_by_commas(tmp_path, capsys):
    path, _, _ = _three_systems(tmp_path)
    assert main([str(path), "--metrics", "keyword_prf,weighted_keyword_prf", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "\nkeyword_prf\n" in printed and "\nweighted_keyword_prf\n" in printed
    with pytest.raises(SystemExit):
        main([str(path), "--metrics", "keyword_prf,weighted_keyword_prff"])
    assert "no metric family 'weighted_keyword_prff'; did you mean 'weighted_keyword_prf'?" in capsys.readouterr().err


@pytest.mark.parametrize("baseline", ["bse", "Base"])
def test_a_misspelt_baseline_gets_the_closest_system_in_the_users_words(tmp_path, capsys, baseline):
    rows = [{"model": model, "review_id": i, "keywords": ["a"], "gold": ["a"]} for model in ("base", "yake")
            for i in range(3)]  # fmt: skip
    path = tmp_path / "x.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert main([str(path), "--baseline", baseline]) == 2
    err = capsys.readouterr().err
    assert f"--baseline '{baseline}' is not a system of column 'model' (there: base, yake); did you mean 'base'?" in err
    assert "--by" not in err  # never typed


def test_explain_prints_each_legend_and_the_methods_note_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    path, _, _ = _three_systems(tmp_path)
    assert main([str(path), "--baseline", "tfidf", "--explain", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("share of predicted keywords that match a gold keyword") == 1
    assert printed.count("p-values: paired permutation test") == 1


def test_missing_columns_are_named_in_the_users_words_with_the_closest(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text('{"keywords": ["a"], "gold": ["a"]}\n', encoding="utf-8")
    assert main([str(path), "--references", "gld"]) == 2
    assert (
        "column 'gld' not found in x.jsonl (columns: keywords, gold); did you mean 'gold'?" in capsys.readouterr().err
    )
    path.write_text('{"keywords": ["a"], "gld2": ["a"]}\n', encoding="utf-8")
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert "no column of gold keywords in x.jsonl: looked for references, gold, " in err
    assert "'references' not found" not in err


def test_a_text_where_a_list_of_keywords_belongs_names_its_column_line_and_fix(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text('{"keywords": ["a"], "gold": ["a"]}\n{"keywords": "a; b", "gold": ["a"]}\n', encoding="utf-8")
    assert main([str(path)]) == 1
    err = capsys.readouterr().err
    assert (
        "column 'keywords', line 2 of x.jsonl: 'a; b' is a text, not a list of keywords; write the keywords as a "
        in err
    )
