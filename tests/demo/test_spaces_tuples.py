"""The sentiment tuple Space: tuples typed as JSON, a model's text read with its format, uploads
and three systems give `sentiment_tuple_prf`'s values (over real HTTP too); the why table shows
the assigned pairs with their credits, what is left unmatched and what could not be read; a bad
line is named by its system and its line in the box."""

import csv
import json

import pytest
from conftest import space_values
from space_apps import call, launch
from three_systems import PREDICTED_TUPLES, SYSTEMS, TUPLES, files_per_system, system_column_file, typed

gradio = pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from opinion_metrics import explain, sentiment_tuple_prf  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.explanations import explanation_table  # noqa: E402
from opinion_metrics.demo.handlers import run  # noqa: E402
from opinion_metrics.demo.parsing import collect_inputs  # noqa: E402
from opinion_metrics.demo.ui import build_app  # noqa: E402

NAME = "sentiment_tuple_prf"
GOLD = [[["pizza", "over cooked", "NEG"], ["staff", "friendly", "POS"]], [["wine list", "long", "POS"]]]
GENERATED = ["(pizza, over cooked, negative); (staff, friendly, negative); (the view", "(wine, long, positive)"]


def options(**given):
    """Every control's value in order: its default unless given."""
    return [given.get(option.name, option.default) for option in FAMILIES[NAME].options]


def rounded(result):
    return {key: round(value, 4) for key, value in result.items()}


@pytest.fixture(scope="module")
def client():
    app = build_app(NAME)
    yield gradio_client.Client(launch(app), verbose=False)
    app.close()


def test_the_space_gives_the_library_values_over_http(client):
    predictions = "\n".join(map(json.dumps, PREDICTED_TUPLES["keybert"]))
    references = "\n".join(map(json.dumps, TUPLES))
    summary, per_example, _ = call(client, NAME, predictions, references, match="overlap", average="macro")
    expected = sentiment_tuple_prf(PREDICTED_TUPLES["keybert"], TUPLES, match="overlap", average="macro")
    assert space_values(summary) == pytest.approx(rounded(expected))
    assert per_example["headers"][:4] == ["line", "precision", "recall", "f1"] and len(per_example["data"]) == 3
    # A model's text, read with the format control: the unreadable segment counts (unparsed).
    summary, _, _ = call(client, NAME, "\n".join(GENERATED), "\n".join(map(json.dumps, GOLD)), format="tuples")
    expected = sentiment_tuple_prf(GENERATED, GOLD, format="tuples")
    assert space_values(summary) == pytest.approx(rounded(expected)) and expected["unparsed"] == 1.0


def test_quads_presets_and_the_paraphrase_format():
    generated = "food quality is bad because pizza is over cooked [SSEP] it is what it is"
    gold = json.dumps([["pizza", "food quality", "negative", "over cooked"]])
    summary = run(NAME, generated, gold, "", None, *options(elements="asqp", format="paraphrase"))[1]
    expected = sentiment_tuple_prf([generated], json.loads(f"[{gold}]"), elements="asqp", format="paraphrase")
    assert space_values(summary) == pytest.approx(rounded(expected)) and expected["unparsed"] == 1.0


@pytest.mark.parametrize("given", ["typed", "one file", "a file per system", "csv"])
def test_three_systems_give_each_its_library_values(tmp_path, given):
    if given == "typed":
        boxes = typed(NAME)
        status, summary, *_ = run(NAME, boxes["predictions"], boxes["references"], "", None, *options())
    else:
        if given == "csv":  # cells of tuples as JSON, a row per (review, system)
            upload = tmp_path / "triplets.csv"
            with open(upload, "w", newline="", encoding="utf-8") as file:
                writer = csv.writer(file)
                writer.writerow(["review_id", "model", "predictions", "references"])
                for index, gold in enumerate(TUPLES):
                    for system in SYSTEMS:
                        writer.writerow([index, system, json.dumps(PREDICTED_TUPLES[system][index]), json.dumps(gold)])
        elif given == "one file":
            upload = system_column_file(tmp_path, NAME)
        else:
            paths = files_per_system(tmp_path)
            for path, system in zip(paths, SYSTEMS):
                rows = [{"review_id": n, "predictions": p, "references": g}
                        for n, (p, g) in enumerate(zip(PREDICTED_TUPLES[system], TUPLES))]  # fmt: skip
                path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
            upload = [str(path) for path in paths]
        status, summary, *_ = run(NAME, "", "", "", upload if isinstance(upload, list) else str(upload), *options())
    assert status.startswith("Computed on ") and "3 systems" in status, status
    for system in SYSTEMS:
        expected = sentiment_tuple_prf(PREDICTED_TUPLES[system], TUPLES)
        assert space_values(summary, system) == pytest.approx(rounded(expected)), system


def test_three_systems_against_a_baseline():
    boxes = typed(NAME)
    summary = run(NAME, boxes["predictions"], boxes["references"], "", None, *options(), baseline="tfidf")[1]
    assert summary.columns.tolist() == ["metric", "tfidf (baseline)", "yake", "keybert"]
    base = sentiment_tuple_prf(PREDICTED_TUPLES["tfidf"], TUPLES)["f1"]
    f1 = next(row for row in summary.values if row[0].startswith("f1\u00a0"))
    keybert = sentiment_tuple_prf(PREDICTED_TUPLES["keybert"], TUPLES)["f1"]
    assert f1[3].replace("**", "").split("<br>")[1].startswith(f"{keybert - base:+.4f}")


def test_the_why_table_shows_the_credits_the_unmatched_tuples_and_what_was_not_read():
    predictions = ['[["thin crust", "good", "POS"], ["thin crust", "good", "positive"], ["wine", "sour", "NEG"]]', "[]"]
    references = ['[["crust", "good", "positive"], ["staff", "rude", "NEG"]]', '[["view", "nice", "POS"]]']
    data = collect_inputs(FAMILIES[NAME].inputs, "\n".join(predictions), "\n".join(references), family=NAME).data
    chosen = dict(zip([option.name for option in FAMILIES[NAME].options], options(match="overlap")))
    frame = explanation_table(NAME, data, chosen, None)
    assert frame.columns.tolist() == [
        "line",
        "assigned: prediction → gold tuple (precision credit, recall credit)",
        "unmatched predictions",
        "unmatched gold tuples",
        "repeats dropped (each tuple counts once)",
        "not read (each counts as a wrong prediction)",
    ]
    record = explain(NAME, data["predictions"], data["references"], match="overlap")[0]
    credit = record["matches"][0]
    # "thin crust" for "crust": aspect credits 1/2 and 1, the opinion 1 and 1, averaged over the spans
    assert credit["precision_credit"] == 0.75 and credit["recall_credit"] == 1.0
    assert frame.values[0].tolist() == [
        1,
        "(thin crust, good, POS) → (crust, good, positive) (0.7500, 1.0000)",
        "(wine, sour, NEG)",
        "(staff, rude, NEG)",
        "(thin crust, good, positive)",
        "none",
    ]
    assert frame.values[1].tolist() == [2, "none", "none", "(view, nice, POS)", "none", "none"]
    # A model's text: the segment the parser could not read.
    data = collect_inputs(FAMILIES[NAME].inputs, "\n".join(GENERATED), "\n".join(map(json.dumps, GOLD)), family=NAME)
    chosen = dict(zip([option.name for option in FAMILIES[NAME].options], options(format="tuples")))
    frame = explanation_table(NAME, data.data, chosen, None)
    assert frame.values[0][-1] == "'(the view'" and frame.values[1][-1] == "none"
    assert frame.values[0][1] == "(pizza, over cooked, negative) → (pizza, over cooked, NEG) (1.0000, 1.0000)"


def _error(predictions, references, **given):
    with pytest.raises(gradio.Error) as raised:
        run(NAME, predictions, references, "", None, *options(**given))
    return raised.value.message


def test_a_bad_line_is_named_by_its_system_and_its_line_in_the_box():
    boxes = typed(NAME)
    lines = boxes["predictions"].split("\n")
    lines[4] = "[yake] (pizza, overcooked, NEG)"  # line 5 of the box, yake's second: text without a format
    message = _error("\n".join(lines), boxes["references"])
    assert message.startswith("system 'yake': predictions: example 2 (predictions line 5): '(pizza, overcooked, NEG)'")
    assert message.endswith("is not a list of tuples (JSON such as [[\"pizza\", \"over cooked\", \"NEG\"]]); a model's "
                            "text needs its format: paraphrase or tuples")  # fmt: skip
    lines[4] = '[yake] [["pizza", "overcooked"]]'  # two elements where aste has three
    message = _error("\n".join(lines), boxes["references"])
    assert message.startswith("system 'yake': predictions: example 2 (predictions line 5), tuple 1 has 2 elements, "
                              "expected 3 (aspect, opinion, sentiment)")  # fmt: skip
    gold = boxes["references"].split("\n")
    gold[1] = "wine list, long, POS"
    message = _error(boxes["predictions"], "\n".join(gold))
    assert message.startswith("references, line 2: 'wine list, long, POS' is not a list of tuples; write them as JSON")
    message = _error("(a, b, c)", '[["a", "b", "c"]]', format="paraphrase")
    assert "format='paraphrase' reads quads" in message


# --- review findings: lines, columns and boxes of the tuple Space ---------------------------------


def test_one_tuple_without_its_outer_brackets_is_not_a_system_name():
    message = _error('["pizza", "cold", "NEG"]', '[["pizza", "cold", "NEG"]]')
    assert "system" not in message, message
    assert message.startswith('predictions: line 1: \'["pizza", "cold", "NEG"]\' is not a list of tuples'), message
    # Python quotes, and a second line of tuples: still no system prefix
    message = _error("['pizza', 'cold', 'NEG']\n[[\"wine\", \"sour\", \"NEG\"]]", "[]\n[]")
    assert "system" not in message and "is not a list of tuples" in message, message
    # a real prefix still names a system
    status = run(NAME, '[a] [["pizza", "cold", "NEG"]]\n[b] []', '[["pizza", "cold", "NEG"]]', "", None, *options())[0]
    assert "2 systems" in status, status


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


TRIPLETS = [[["pizza", "cold", "NEG"]], [["wine", "sour", "NEG"], ["staff", "kind", "POS"]]]
PREDICTED = [[["pizza", "cold", "NEG"]], [["wine", "sour", "POS"]]]


def test_the_tuple_columns_are_found_before_generic_gold_columns(tmp_path):
    rows = [
        {"targets": "(pizza, cold, negative)", "triplets": t, "predictions": p} for t, p in zip(TRIPLETS, PREDICTED)
    ]
    status, summary, *_ = run(NAME, "", "", "", _jsonl(tmp_path / "t.jsonl", rows), *options())
    assert space_values(summary) == pytest.approx(rounded(sentiment_tuple_prf(PREDICTED, TRIPLETS)))
    assert "references ← `triplets`" in status, status


def test_a_tuple_file_without_gold_is_told_of_gold_tuples(tmp_path):
    rows = [{"predictions": p} for p in PREDICTED]
    with pytest.raises(gradio.Error) as raised:
        run(NAME, "", "", "", _jsonl(tmp_path / "t.jsonl", rows), *options())
    message = raised.value.message
    assert "no column of gold tuples" in message and "gold keywords" not in message, message
    assert "--gold" not in message and "triplets" in message, message


def test_an_unrelated_number_column_does_not_refuse_a_tuple_csv(tmp_path):
    upload = tmp_path / "t.csv"
    with open(upload, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["predictions", "references", "confidence"])
        for p, g in zip(PREDICTED, TRIPLETS):
            writer.writerow([json.dumps(p), json.dumps(g), "high"])
    status, summary, *_ = run(NAME, "", "", "", str(upload), *options())
    assert space_values(summary) == pytest.approx(rounded(sentiment_tuple_prf(PREDICTED, TRIPLETS)))
    assert "scores" not in status and "confidence" not in status, status


def test_tuples_given_as_mappings_are_shown_in_the_order_of_the_elements():
    predictions = json.dumps([{"sentiment": "NEG", "opinion": "cold", "aspect": "pizza"}])
    references = json.dumps([{"opinion": "rude", "aspect": "staff", "sentiment": "NEG"}])
    data = collect_inputs(FAMILIES[NAME].inputs, predictions, references, family=NAME).data
    chosen = dict(zip([option.name for option in FAMILIES[NAME].options], options()))
    row = explanation_table(NAME, data, chosen, None).values[0].tolist()
    assert row[2:4] == ["(pizza, cold, NEG)", "(staff, rude, NEG)"]
    from opinion_metrics.demo.explanations import _tuple

    assert _tuple({"sentiment": "POS", "aspect": "view"}, ("aspect", "opinion", "sentiment")) == "(view, NULL, POS)"


@pytest.mark.parametrize("option", ["label_map", "projections"])
@pytest.mark.parametrize("cleared", ["", "   "])
def test_a_cleared_option_box_is_its_default(option, cleared):
    predictions = json.dumps([["pizza", "cold", "neg"], ["staff", "kind", "POS"]])
    references = json.dumps([["pizza", "cold", "negative"], ["staff", "rude", "positive"]])
    summary = run(NAME, predictions, references, "", None, *options(**{option: cleared}))[1]
    expected = sentiment_tuple_prf(json.loads(f"[{predictions}]"), json.loads(f"[{references}]"))
    assert space_values(summary) == pytest.approx(rounded(expected))


def test_a_jsonl_references_cell_of_json_text_is_read_as_tuples(tmp_path):
    rows = [{"predictions": json.dumps(p), "references": json.dumps(g)} for p, g in zip(PREDICTED, TRIPLETS)]
    summary = run(NAME, "", "", "", _jsonl(tmp_path / "t.jsonl", rows), *options())[1]
    assert space_values(summary) == pytest.approx(rounded(sentiment_tuple_prf(PREDICTED, TRIPLETS)))
    rows[1]["references"] = "wine, sour, NEG"
    with pytest.raises(gradio.Error) as raised:
        run(NAME, "", "", "", _jsonl(tmp_path / "t.jsonl", rows), *options())
    assert "'wine, sour, NEG' is not a list of tuples" in raised.value.message, raised.value.message
    assert "line 2" in raised.value.message or "row 2" in raised.value.message, raised.value.message


def test_the_status_line_names_only_the_columns_the_family_reads(tmp_path):
    rows = [{"text": "t", "score": 0.5, "triplets": g, "predicted_triplets": p} for p, g in zip(PREDICTED, TRIPLETS)]
    status = run(NAME, "", "", "", _jsonl(tmp_path / "t.jsonl", rows), *options())[0]
    assert "references ← `triplets`" in status and "predictions ← `predicted_triplets`" in status, status
    assert "texts ←" not in status and "scores ←" not in status, status


def test_a_systems_empty_last_example_is_kept():
    predictions = '[a] [["pizza", "cold", "NEG"]]\n[a]\n[b] [["pizza", "cold", "NEG"]]\n[b] [["wine", "sour", "NEG"]]'
    gold = TRIPLETS
    status, summary, *_ = run(NAME, predictions, "\n".join(map(json.dumps, gold)), "", None, *options())
    assert "2 systems" in status, status
    assert space_values(summary, "a") == pytest.approx(rounded(sentiment_tuple_prf([PREDICTED[0], []], gold)))
    b = [PREDICTED[0], [["wine", "sour", "NEG"]]]
    assert space_values(summary, "b") == pytest.approx(rounded(sentiment_tuple_prf(b, gold)))
