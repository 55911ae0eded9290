"""Messages that leave no guessing (issue 37, item 8), on every surface they reach: the flag the
user typed (--compare), a keyword text never rewritten as a position, a flat list of scores
called one, the examples without texts in an evaluate module's later batches, missing group
labels refused alike from a list, numpy, pandas and polars, an empty model name called empty,
a 301-digit rating shortened. (A Ray worker's error: tests/engines/test_engine_trust.py.)"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from cli_cases import EXAMPLE, _jsonl
from conftest import REPO

from opinion_metrics import (
    aspect_sentiment_score,
    keyword_diversity,
    pool_by_group,
    semantic_keyword_prf,
    sentiment_appropriateness,
    weighted_keyword_prf,
)
from opinion_metrics.cli import main

TWO = {"predictions": [["a"], ["b"]], "references": [["a"], ["b"]]}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--compare", "z"], "--compare 'z' is not a system of column 'model' (there: baseline, sentiment)"),
        (["--compare=z"], "--compare 'z' is not a system of column 'model'"),
        (["--baseline", "z"], "--baseline 'z' is not a system of column 'model'"),
        (["--system", "none", "--compare", "z"], "--compare needs systems to compare"),
    ],
)
def test_the_comparison_is_answered_in_the_flag_typed(capsys, arguments, message):
    assert main([str(EXAMPLE), *arguments]) == 2
    err = capsys.readouterr().err
    assert message in err and ("--baseline" in arguments) == ("--baseline" in err)


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_a_keyword_reading_example_0_is_never_rewritten_as_a_position(tmp_path, capsys, workers):
    rows = [{"predictions": ["a"], "scores": [0.5], "references": ["a"]}] * 3
    rows.append({"predictions": ["b", "see example 0 and example 2"], "scores": [0.5, 1.5], "references": ["a"]})
    path = _jsonl(tmp_path / "x.jsonl", rows)
    assert main([str(path), "--metrics", "weighted_keyword_prf", *workers]) == 1
    err = capsys.readouterr().err
    assert "scores: line 4 of x.jsonl, keyword 1 ('see example 0 and example 2'): score 1.5 is outside" in err


def test_a_flat_list_of_scores_is_called_one():
    flat = "scores: expected a list of score lists per example, such as [[0.9, 0.4], [0.7]]; got a flat list of scores"
    for scores in ([0.5, 0.3], np.array([0.5, 0.3]), [0.5]):  # as many as the examples, or not
        with pytest.raises(ValueError, match=rf"^{re.escape(flat)} starting with 0\.5$"):
            weighted_keyword_prf(TWO["predictions"], scores, TWO["references"])
    with pytest.raises(ValueError, match=re.escape(flat)):
        pool_by_group(TWO["predictions"], TWO["references"], ["g", "g"], scores=[0.5, 0.3])
    with pytest.raises(ValueError, match=r"^prediction_sentiments: expected a list of sentiment lists per example"):
        sentiment_appropriateness(**TWO, prediction_sentiments=[0.5, 0.3])
    with pytest.raises(ValueError, match=r"^scores: example 1 must be a list of scores \(numbers\), got float 0\.3$"):
        weighted_keyword_prf(TWO["predictions"], [[0.5], 0.3], TWO["references"])  # one bad entry: no keywords


@pytest.fixture(scope="module")
def modules():
    evaluate = pytest.importorskip("evaluate")
    return {name: evaluate.load(str(REPO / "metrics" / name)) for name in ("keyword_prf", "weighted_keyword_prf")}


def test_an_evaluate_module_names_a_flat_list_of_scores(modules):
    with pytest.raises(ValueError, match=r"^scores: expected a list of score lists per example.*flat list of scores"):
        modules["weighted_keyword_prf"].add_batch(**TWO, scores=[0.5, 0.3])


def test_an_evaluate_module_names_the_examples_added_without_texts(modules):
    module = modules["keyword_prf"]
    module.add_batch(**TWO, texts=["a b", "b c"])
    module.add_batch(**TWO)  # examples 2-3
    module.add(prediction=["a"], reference=["a"], texts="a")
    module.add(prediction=["a"], reference=["a"])  # example 5
    with pytest.raises(ValueError, match=r"examples 2-3, 5 were added without texts"):
        module.compute(presence="present")
    assert module.compute() == {"precision": 1.0, "recall": 1.0, "f1": 1.0}  # nothing consumed by the refusal
    module.add_batch(**TWO)
    with pytest.raises(
        ValueError, match=r"presence='present' needs texts: add them with add_batch\(\.\.\., texts=\.\.\.\)$"
    ):
        module.compute(presence="present")  # no batch had texts: nothing to name
    module.compute()


def missing_labels() -> list:
    """The same labels, [x, NaN, NaN], as a list, numpy, pandas and polars give them."""
    found = [["x", math.nan, math.nan], np.array([1.0, np.nan, np.nan])]
    pd = pytest.importorskip("pandas")
    found += [pd.Series(["x", np.nan, np.nan]), pd.Series([1.0, np.nan, np.nan]), pd.Series(["x", None, None])]
    found += [pd.Series(["x", pd.NA, pd.NA], dtype="string")]
    pl = pytest.importorskip("polars")
    return found + [pl.Series([1.0, float("nan"), float("nan")]), pl.Series(["x", None, None])]


def test_missing_group_labels_are_refused_alike_from_every_container():
    predictions, references = [["a"], ["b"], ["c"]], [["a"], ["b"], ["c"]]
    for groups in missing_labels():
        with pytest.raises(
            ValueError, match=r"^groups: example 1 has no group \((NaN|None|<NA>)\): give every example"
        ):
            pool_by_group(predictions, references, groups)
    assert pool_by_group(predictions, references, np.array([1.0, 2.0, 1.0])).groups == [1.0, 2.0]


def test_a_missing_group_label_in_a_file_is_named(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text('{"movie": "m", "predictions": ["a"], "references": ["a"]}\n{"movie": NaN, "predictions": [], '
                    '"references": ["a"]}\n', encoding="utf-8")  # fmt: skip
    assert main([str(path), "--group", "movie"]) == 1
    assert "--group movie: line 2 of x.jsonl is empty (NaN); give every row a value" in capsys.readouterr().err


def test_an_empty_model_name_is_called_empty(tmp_path, capsys):
    empty = r"^the model name is empty \('( )?'\): give a sentence-transformers model name"
    for model in ("", " "):
        with pytest.raises(ValueError, match=empty):
            keyword_diversity([["a"]], model=model)
        with pytest.raises(ValueError, match=empty):
            semantic_keyword_prf([["a"]], [["a"]], model=model)
    from opinion_metrics import ray as om_ray
    from opinion_metrics import spark as om_spark

    for engine in (om_ray, om_spark):  # checked on the driver, before any data is read
        with pytest.raises(ValueError, match=empty):
            engine.evaluate(None, "semantic_keyword_prf", model="")
    with pytest.raises(SystemExit, match="2"):  # argparse's own exit
        main([str(EXAMPLE), "--metrics", "keyword_diversity", "--model", ""])
    assert "argument --model: the model name is empty (''): give a sentence-transformers" in capsys.readouterr().err


def test_a_301_digit_rating_is_shortened(modules):
    shown = r"rating \(an integer of about 301 digits\) is outside \{0\} ∪ \[1, 5\]"
    for rating in (10**300, 1e300, -(10**300)):
        with pytest.raises(
            ValueError, match=shown.replace("an integer", "a negative integer" if rating < 0 else "an integer")
        ):
            aspect_sentiment_score([[rating, 1]], [[1, 2]], aspects=["a", "b"])
    with pytest.raises(
        ValueError, match=r"max_rating must be at most 2\*\*53 = .*, got an integer of about 301 digits"
    ):
        aspect_sentiment_score([[1, 2]], [[1, 2]], aspects=["a", "b"], max_rating=10**300)
    evaluate = pytest.importorskip("evaluate")
    module = evaluate.load(str(REPO / "metrics" / "aspect_sentiment_score"))
    with pytest.raises(ValueError, match=r"aspect 0: rating an integer of about 301 digits is out of range$"):
        module.add_batch(predictions=[[10**300, 1]], references=[[1, 2]])
