"""The command line on files of sentiment tuples: found by their column names (quads, tuples,
triplets), in JSON Lines, Parquet and CSV (tuples as JSON cells), generated text read with
--format, --elements and the family's other flags, per-example detail, a baseline and --workers;
every value against the brute force of tests/reference_tuples.py."""

import json

import pandas as pd
import pytest
from reference_tuples import sentiment_tuple_prf as brute_force

from opinion_metrics.cli import main

ROWS = [
    {"review_id": 1, "model": "a", "predicted_quads": [["pizza", "food quality", "NEG", "over cooked"],
                                                       ["staff", "service general", "POS", "friendly"]],
     "quads": [["pizza", "food quality", "negative", "over cooked"]]},
    {"review_id": 2, "model": "a", "predicted_quads": [["NULL", "restaurant general", "POS", "great"]],
     "quads": [["NULL", "restaurant general", "positive", "great"], ["wine", "drinks prices", "negative", "pricey"]]},
    {"review_id": 3, "model": "a", "predicted_quads": [["the view", "location general", "POS", "stunning"]],
     "quads": [["view", "location general", "positive", "stunning"]]},
    {"review_id": 1, "model": "b", "predicted_quads": [["pizza", "food quality", "negative", "over cooked"]] * 2,
     "quads": [["pizza", "food quality", "negative", "over cooked"]]},
    {"review_id": 2, "model": "b", "predicted_quads": [],
     "quads": [["NULL", "restaurant general", "positive", "great"], ["wine", "drinks prices", "negative", "pricey"]]},
    {"review_id": 3, "model": "b", "predicted_quads": [["view", "location general", "positive", "stunning"]],
     "quads": [["view", "location general", "positive", "stunning"]]},
]  # fmt: skip


def expected(model, **options):
    rows = [row for row in ROWS if row["model"] == model]
    return brute_force([r["predicted_quads"] for r in rows], [r["quads"] for r in rows], elements="asqp", **options)


def write(tmp_path, kind, rows=ROWS):
    path = tmp_path / f"tuples.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    elif kind == "parquet":
        pd.DataFrame(rows).to_parquet(path)
    else:  # CSV: a cell of tuples is JSON
        frame = pd.DataFrame(rows)
        for column in frame.columns:
            if isinstance(frame[column].iloc[0], list):
                frame[column] = frame[column].map(json.dumps)
        frame.to_csv(path, index=False)
    return path


def run(arguments, capsys):
    status = main([*map(str, arguments), "--quiet"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out


def same(found: dict, truth: dict) -> None:
    assert found.keys() == truth.keys()
    assert all(found[key] == pytest.approx(truth[key], abs=1e-12) for key in truth)


@pytest.mark.parametrize("kind", ["jsonl", "parquet", "csv"])
def test_a_file_of_quads_is_scored_by_the_tuple_family_per_system(tmp_path, capsys, kind):
    output = tmp_path / "results.json"
    printed = run([write(tmp_path, kind), "--elements", "asqp", "--match", "overlap", "--output", output], capsys)
    assert "predicted_quads" in printed and "sentiment_tuple_prf" in printed and "elements asqp" in printed
    results = json.loads(output.read_text())
    assert set(results) == {"a", "b"} and all(set(found) == {"sentiment_tuple_prf"} for found in results.values())
    for model in ("a", "b"):
        same(results[model]["sentiment_tuple_prf"], expected(model, match="overlap"))


def test_the_family_flags_reach_the_library(tmp_path, capsys):
    output = tmp_path / "results.json"
    flags = ["--projections", "aspect_sentiment,category", "--label-map", "neg=negative,pos=positive", "--average",
             "macro", "--counting", "one_to_one", "--normalize", "none", "--zero-division", "1"]  # fmt: skip
    run([write(tmp_path, "jsonl"), "--metrics", "sentiment_tuple_prf", "--elements", "asqp", *flags,
         "--output", output], capsys)  # fmt: skip
    found = json.loads(output.read_text())["a"]["sentiment_tuple_prf"]
    truth = expected("a", projections=[["aspect", "sentiment"], ["category"]], average="macro",
                     label_map={"neg": "negative", "pos": "positive"}, normalize="none", zero_division=1.0)  # fmt: skip
    same(found, truth)
    run([write(tmp_path, "jsonl"), "--elements", "asqp", "--counting", "membership", "--output", output], capsys)
    same(json.loads(output.read_text())["b"]["sentiment_tuple_prf"], expected("b", counting="membership"))


def test_a_flag_of_another_family_is_refused_in_the_users_words(tmp_path, capsys):
    status = main([str(write(tmp_path, "jsonl")), "--elements", "asqp", "--match", "substring", "--quiet"])
    error = capsys.readouterr().err
    assert status == 2 and "--match must be one of ('exact', 'overlap'), got 'substring'" in error


def test_a_csv_cell_of_gold_that_is_not_tuples_is_refused_naming_its_line_and_the_fix(tmp_path, capsys):
    frame = pd.read_csv(write(tmp_path, "csv"))
    frame.loc[1, "quads"] = "wine, drinks prices, negative, pricey"  # not JSON: a text
    frame.to_csv(tmp_path / "bad.csv", index=False)
    status = main([str(tmp_path / "bad.csv"), "--elements", "asqp", "--quiet"])
    error = capsys.readouterr().err
    assert status == 1, error
    assert "bad.csv, line 3: column 'quads': 'wine, drinks prices, negative, pricey' is not a list of tuples" in error
    assert 'write them as JSON, such as [["pizza", "over cooked", "NEG"]]' in error


def test_generated_text_with_format(tmp_path, capsys):
    rows = [
        {"generated": "food quality is bad because pizza is over cooked [SSEP] service is great",
         "gold_quads": [["pizza", "food quality", "negative", "over cooked"]]},
        {"generated": "", "gold_quads": [["NULL", "restaurant general", "positive", "great"]]},
    ]  # fmt: skip
    output = tmp_path / "results.json"
    for kind in ("jsonl", "csv"):
        run([write(tmp_path, kind, rows), "--elements", "asqp", "--format", "paraphrase", "--output", output], capsys)
        found = json.loads(output.read_text())["all"]["sentiment_tuple_prf"]
        # read: 1 tuple and 1 unreadable segment; an empty output holds none
        truth = brute_force([[("pizza", "food quality", "negative", "over cooked")], []],
                            [row["gold_quads"] for row in rows], elements="asqp", unparsed=[1, 0])  # fmt: skip
        same(found, {**truth, "unparsed": 1.0})
    rows = [
        {
            "output": "(pizza, over cooked, negative); (staff, friendly, positive)",
            "triplets": [["pizza", "over cooked", "NEG"]],
        }
    ]
    path = write(tmp_path, "csv", rows)  # a ';' in a CSV cell of generated text separates tuples, not items
    run([path, "--predictions", "output", "--format", "tuples", "--output", output], capsys)
    found = json.loads(output.read_text())["all"]["sentiment_tuple_prf"]
    assert (found["precision"], found["recall"]) == (1 / 2, 1.0)


def test_position_tuples_in_json_lines(tmp_path, capsys):
    rows = [{"predictions": [[[1], [3, 4], "POS"], [[6, 7], [9], "NEG"]], "references": [[[1], [3, 4], "positive"]]},
            {"predictions": [[[0], [2], "NEU"]], "references": [[[0, 1], [2], "neutral"]]}]  # fmt: skip
    output = tmp_path / "results.json"
    run([write(tmp_path, "jsonl", rows), "--metrics", "sentiment_tuple_prf", "--match", "overlap", "--output", output],
        capsys)  # fmt: skip
    found = json.loads(output.read_text())["all"]["sentiment_tuple_prf"]
    same(found, brute_force([r["predictions"] for r in rows], [r["references"] for r in rows], match="overlap"))


def test_per_example_detail_and_a_baseline(tmp_path, capsys):
    details = tmp_path / "details.jsonl"
    output = tmp_path / "results.json"
    path = write(tmp_path, "jsonl")
    run([path, "--elements", "asqp", "--match", "overlap", "--per-example", details, "--baseline", "a", "--ci", "0.9",
         "--output", output], capsys)  # fmt: skip
    records = [json.loads(line) for line in details.read_text().splitlines()]
    view = next(r for r in records if r["model"] == "a" and r["review_id"] == 3)
    # the view: aspect 1 of 2 predicted tokens, opinion whole: precision credit 3/4, recall credit 1
    assert view["detail"]["matches"] == [{"prediction": ["the view", "location general", "POS", "stunning"],
                                          "reference": ["view", "location general", "positive", "stunning"],
                                          "precision_credit": 0.75, "recall_credit": 1.0}]  # fmt: skip
    repeated = next(r for r in records if r["model"] == "b" and r["review_id"] == 1)
    assert repeated["detail"]["repeated"] == [["pizza", "food quality", "negative", "over cooked"]]
    missed = next(r for r in records if r["model"] == "b" and r["review_id"] == 2)
    assert len(missed["detail"]["unmatched_references"]) == 2 and missed["recall"] == 0.0
    comparison = json.loads(output.read_text())["comparison"]["differences"]["b"]["sentiment_tuple_prf"]["f1"]
    difference = expected("b", match="overlap")["f1"] - expected("a", match="overlap")["f1"]
    assert comparison["difference"] == pytest.approx(difference)


def test_workers_equal_one_process(tmp_path, capsys, monkeypatch):
    from opinion_metrics.engines import parallel

    monkeypatch.setattr(parallel, "MIN_CHUNK", 2)
    rows = [{**row, "review_id": row["review_id"] + 10 * copy} for copy in range(4) for row in ROWS]
    path = write(tmp_path, "jsonl", rows)
    outputs = []
    for workers in ("1", "2"):
        outputs.append(tmp_path / f"w{workers}.json")
        run([path, "--elements", "asqp", "--workers", workers, "--output", outputs[-1]], capsys)
    one, two = (json.loads(path.read_text()) for path in outputs)
    for model in ("a", "b"):
        same(two[model]["sentiment_tuple_prf"], one[model]["sentiment_tuple_prf"])
        same(one[model]["sentiment_tuple_prf"], expected(model))  # four copies of each row: the same ratios


def test_the_tuple_family_finds_columns_of_tuples_before_generic_gold_columns(tmp_path, capsys):
    # `labels` (a text) comes before `triplets` among the usual gold names; the tuple family reads the triplets
    gold = [[["pizza", "cold", "NEG"]], [["wine", "sour", "NEG"], ["staff", "kind", "POS"]]]
    predicted = [[["pizza", "cold", "NEG"]], [["wine", "sour", "POS"]]]
    rows = [{"labels": "(pizza, cold, negative)", "triplets": g, "predictions": p} for p, g in zip(predicted, gold)]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    output = tmp_path / "results.json"
    run([path, "--metrics", "sentiment_tuple_prf", "--output", output], capsys)
    (found,) = json.loads(output.read_text()).values()
    same(found["sentiment_tuple_prf"], brute_force(predicted, gold))
