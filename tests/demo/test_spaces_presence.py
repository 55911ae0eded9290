"""Present and absent keywords in the Spaces (issue 14): the keyword, weighted and semantic
apps give the library's values, an uploaded review column serves presence, and an example
that presence leaves out says so."""

import json

import pytest
from conftest import space_values
from space_apps import call, running_clients, space_error, table

pytest.importorskip("gradio")

from opinion_metrics import keyword_prf, weighted_keyword_prf  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.parsing import parse_keyword_lines  # noqa: E402


@pytest.fixture(scope="module")
def clients():
    yield from running_clients()


@pytest.mark.parametrize("presence", ["present", "absent"])
def test_the_keyword_app_scores_present_or_absent_keywords_of_the_texts(clients, presence):
    family = FAMILIES["keyword_prf"]
    predictions, references, texts = family.example
    summary, per_example, _ = call(clients["keyword_prf"], "keyword_prf", *family.example, presence=presence)
    expected = keyword_prf(
        parse_keyword_lines(predictions)[0],
        parse_keyword_lines(references)[0],
        texts=texts.split("\n"),
        presence=presence,
    )
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
    # By hand: "class struggle" and "empire" occur in neither review, every other gold keyword does.
    # present: the predictions that occur (all but "pizza") match every present gold keyword: 1.0.
    # absent: "pizza" against "class struggle" and "empire": nothing matches.
    assert table(summary)["recall"] == (1.0 if presence == "present" else 0.0)
    assert table(summary) != table(call(clients["keyword_prf"], "keyword_prf", *family.example)[0])


def test_presence_in_the_weighted_and_semantic_apps_matches_the_library(clients):
    pytest.importorskip("sentence_transformers")
    from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf

    family = FAMILIES["weighted_keyword_prf"]
    predictions, references, texts = family.example
    keywords, scores = parse_keyword_lines(predictions)
    summary, _, _ = call(clients[family.name], family.name, *family.example, presence="present")
    expected = weighted_keyword_prf(
        keywords, scores, parse_keyword_lines(references)[0], texts=texts.split("\n"), presence="present"
    )
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
    family = FAMILIES["semantic_keyword_prf"]
    predictions, references, texts = family.example
    summary, _, _ = call(clients[family.name], family.name, *family.example, presence="absent")
    expected = semantic_keyword_prf(
        parse_keyword_lines(predictions)[0],
        parse_keyword_lines(references)[0],
        texts=texts.split("\n"),
        presence="absent",
    )
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})


def test_an_uploaded_review_column_serves_presence_and_presence_without_texts_is_a_clear_error(tmp_path):
    from opinion_metrics.demo.handlers import run

    family = FAMILIES["keyword_prf"]
    values = {o.name: o.default for o in family.options} | {"presence": "present"}
    path = tmp_path / "rows.jsonl"
    rows = [
        {"predictions": ["jedi", "pizza"], "references": ["jedi", "empire"], "review": "a jedi film"},
        {"predictions": ["satire"], "references": ["satire", "comedy"], "review": "a satire, a comedy"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    _, summary, _, _ = run("keyword_prf", "", "", "", str(path), *values.values())
    expected = keyword_prf(
        [r["predictions"] for r in rows],
        [r["references"] for r in rows],
        texts=[r["review"] for r in rows],
        presence="present",
    )
    # By hand: line 1 keeps jedi / jedi (1, 1, 1); line 2 keeps satire / satire, comedy (1, 0.5, 2/3).
    assert space_values(summary) == {"precision": 1.0, "recall": 0.75, "f1": 0.8333}
    assert space_values(summary) == {k: round(v, 4) for k, v in expected.items()}
    for name in ("keyword_prf", "weighted_keyword_prf"):
        message = space_error(name, "a (0.5)", "a", "", None, presence="absent")
        assert message.startswith("presence 'absent' needs the texts: one review per line")


def test_an_example_that_presence_leaves_out_says_so():
    from opinion_metrics.demo.handlers import run

    family = FAMILIES["keyword_prf"]
    values = {o.name: o.default for o in family.options} | {"presence": "absent"}
    # Line 2's only gold keyword "c" occurs in its text: no absent gold keyword, so it is left out.
    _, summary, rows, _ = run("keyword_prf", "a; b\nc", "a; x\nc", "a b\nc", None, *values.values())
    assert rows["f1"].tolist() == [0.0, "left out (no absent gold keyword)"]
    expected = keyword_prf([["a", "b"], ["c"]], [["a", "x"], ["c"]], texts=["a b", "c"], presence="absent")
    # By hand: line 1 keeps no prediction (a and b occur in its text) and the gold x: nothing
    # matches (precision 0 by zero_division); line 2 counts nowhere.
    assert space_values(summary) == {k: round(v, 4) for k, v in expected.items()}
    assert expected == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
