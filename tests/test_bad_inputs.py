"""The bad-input catalogue: every family, through the library, the evaluate module
(`compute` and `add_batch`) and the Spaces' file upload; and the accepted edge cases."""

import json
import math

import pytest
from conftest import REPO

from opinion_metrics import aspect_sentiment_score, keyword_prf, ndcg_at_k, weighted_keyword_prf
from opinion_metrics.semantic import semantic_keyword_prf
from opinion_metrics.sentiment import sentiment_appropriateness

evaluate = pytest.importorskip("evaluate")
nan, inf = math.nan, math.inf


class TinyEncoder:
    """Deterministic embeddings without a model (the catalogue checks inputs, not meaning)."""

    def encode(self, texts, **options):
        import numpy as np

        return np.array([[len(t), sum(map(ord, t)) % 97 + 1, 1.0] for t in texts], dtype=np.float32)


LIBRARY = {
    "keyword_prf": keyword_prf,
    "weighted_keyword_prf": weighted_keyword_prf,
    "semantic_keyword_prf": lambda **kw: semantic_keyword_prf(model=TinyEncoder(), **kw),
    "sentiment_appropriateness": sentiment_appropriateness,
    "aspect_sentiment_score": aspect_sentiment_score,
}
K, W, S, T, A = LIBRARY  # family names, in that order
OK = [["a"], ["b"], ["c"]]
SC = [[0.5], [0.5], [0.5]]
R6 = [[0, 1, 2, 3, 4, 5]] * 3


def kw(predictions=OK, references=OK, **extra):
    return {"predictions": predictions, "references": references, **extra}


def w(predictions=OK, scores=SC, references=OK):
    return {"predictions": predictions, "scores": scores, "references": references}


def ratings(predictions=R6, references=R6):
    return {"predictions": predictions, "references": references}


# (family, inputs, options, regex for the library and module messages, texts every route's message contains)
CATALOGUE = [
    (K, kw([["a"], ["b"], ["c", 7]]), {}, r"predictions: example 2, keyword 1 must be a str, got int 7", ["example 2", "7"]),
    (K, kw([["a"], ["b", None], ["c"]]), {}, r"example 1, keyword 1 must be a str, got NoneType None", ["example 1", "None"]),
    (K, kw([["a"], "b", ["c"]]), {}, r"example 1 must be a list of keywords \(str\), got str 'b'", ["example 1", "'b'"]),
    (K, kw([["a"], ["b"], None]), {}, r"example 2 must be a list of keywords \(str\), got NoneType", ["example 2", "None"]),
    (K, kw([["a"], [["b", "c"]], ["d"]]), {}, r"example 1, keyword 0 must be a str, got list \['b', 'c'\]", ["example 1", "['b', 'c']"]),
    (K, kw(references=[["a"], ["b"], [1.5]]), {}, r"references: example 2, keyword 0 must be a str, got float 1.5", ["example 2", "1.5"]),
    (K, kw([["a"], [b"b"], ["c"]]), {}, r"example 1, keyword 0 must be a str, got bytes b'b'", ["example 1", "b'b'"]),
    (K, kw([["a"], {"b": 1}, ["c"]]), {}, r"example 1 must be a list of keywords \(str\), got dict", ["example 1", "{'b': 1}"]),
    (K, kw([["a"], ["b"]]), {}, r"predictions has 2, references has 3 \(example 2 has no predictions\)", ["example 2"]),
    (K, kw([], []), {}, r"cannot evaluate an empty corpus \(0 examples\)", ["0 examples"]),
    (K, kw(), {"match": "fuzzy"}, r"match must be one of .*got 'fuzzy'", ["fuzzy"]),
    (K, kw(), {"top_k": 0}, r"top_k must be a positive integer, got 0", ["0"]),
    (K, kw(), {"average": "weighted"}, r"average must be one of .*got 'weighted'", ["weighted"]),
    (W, w(scores=[[0.5], [nan], [0.5]]), {}, r"scores: example 1, keyword 0 \('b'\): score must be finite, got nan", ["example 1", "nan"]),
    (W, w(scores=[[0.5], [0.5], [inf]]), {}, r"example 2, keyword 0 \('c'\): score must be finite, got inf", ["example 2", "inf"]),
    (W, w(scores=[[-0.3], [0.5], [0.5]]), {}, r"example 0, keyword 0 \('a'\): score -0.3 is outside \[0, 1\]; pass clip_scores=True", ["example 0", "-0.3"]),
    (W, w(scores=[[0.5], [1.2], [0.5]]), {}, r"example 1, keyword 0 \('b'\): score 1.2 is outside \[0, 1\]", ["example 1", "1.2"]),
    (W, w(scores=[[0.5], ["0.5"], [0.5]]), {}, r"example 1, keyword 0 \('b'\): score must be a number in \[0, 1\], got str '0.5'", ["example 1", "'0.5'"]),
    (W, w(scores=[[0.5], [0.5, 0.1], [0.5]]), {}, r"predictions: example 1 has 1 keywords but 2 scores", ["example 1", "2 scores"]),
    (W, w(scores=[[0.5], None, [0.5]]), {}, r"scores: example 1 must be a list of keywords \(str\), got NoneType", ["example 1", "None"]),
    (W, w(scores=[[0.5], [True], [0.5]]), {}, r"example 1, keyword 0 \('b'\): score must be a number in \[0, 1\], got bool True", ["example 1", "True"]),
    (W, w(), {"relevance": "exponential"}, r"relevance must be one of .*got 'exponential'", ["exponential"]),
    (W, w(), {"k": 0}, r"k must be a positive integer, got 0", ["0"]),
    (S, kw([["a"], ["b", 3], ["c"]]), {}, r"predictions: example 1, keyword 1 must be a str, got int 3", ["example 1", "3"]),
    (S, kw(), {"threshold": 1.5}, r"threshold must be a number in \[-1, 1\] .*got 1.5", ["1.5"]),
    (S, kw(references=[["a"], ["b"], [["c"]]]), {}, r"references: example 2, keyword 0 must be a str, got list", ["example 2", "['c']"]),
    (T, kw(prediction_sentiments=[[0.5], [1.5], [0.5]]), {}, r"prediction_sentiments: example 1, keyword 0 \('b'\): score 1.5 is outside", ["example 1", "1.5"]),
    (T, kw(prediction_sentiments=[[0.5], [0.5], [0.5, 0.5]]), {}, r"example 2 has 1 keywords but 2 prediction_sentiments", ["example 2", "2 prediction_sentiments"]),
    (T, kw(prediction_sentiments=[[0.5], [nan], [0.5]]), {}, r"prediction_sentiments: example 1, keyword 0 \('b'\): score must be finite, got nan", ["example 1", "nan"]),
    (T, kw(texts=["fine", 42, "ok"]), {}, r"texts: example 1 must be a str \(or None\), got int 42", ["example 1", "42"]),
    (T, kw(), {"mapping": "vader"}, r"mapping must be one of .*got 'vader'", ["vader"]),
    (A, ratings([[0, 1, 2, 3, 4, 5], [0, 1, 2, 7, 4, 5], [0] * 6]), {}, r"predictions: example 1, aspect 'food_and_beverage': rating 7 is outside \{0\} ∪ \[1, 5\]", ["example 1", "7"]),
    (A, ratings(references=[[0] * 6, [0] * 6, [0, 0, 0, 0, -1, 0]]), {}, r"references: example 2, aspect 'transportation': rating -1 is outside", ["example 2", "-1"]),
    (A, ratings([[0] * 6, [0, 4.5, 0, 0, 0, 0], [0] * 6]), {}, r"predictions: example 1, aspect 'accommodation': rating must be an integer, got 4.5", ["example 1", "4.5"]),
    (A, ratings([[0] * 6, [0] * 6, [nan, 0, 0, 0, 0, 0]]), {}, r"predictions: example 2, aspect 'entertainment': rating must be an integer, got nan", ["example 2", "nan"]),
    (A, ratings([[0] * 6, [0, 0, None, 0, 0, 0], [0] * 6]), {}, r"predictions: example 1, aspect 'restaurant': rating must be an integer, got NoneType None", ["example 1", "None"]),
    (A, ratings([[0] * 6, [0] * 6, [0] * 5]), {}, r"predictions: example 2 has 5 ratings, expected 6", ["example 2", "5 ratings"]),
    (A, ratings([[0] * 6, [0, 0, 0, 0, 0, "3"], [0] * 6]), {}, r"predictions: example 1, aspect 'shopping': rating must be an integer, got str '3'", ["example 1", "'3'"]),
    (A, ratings([], []), {}, r"predictions: no examples \(need at least one\)", ["no examples"]),
    (A, ratings(), {"min_rating": 5, "max_rating": 1}, r"need 1 <= min_rating < max_rating .*got 5 and 1", ["5 and 1"]),
    # Issue 10: booleans are never numbers, huge values are out of range, options keep their types.
    (A, ratings([[0] * 6, [0, True, 0, 0, 0, 0], [0] * 6]), {}, r"predictions: example 1, aspect 'accommodation': rating must be an integer, got bool True", ["example 1", "True"]),
    (A, ratings(references=[[0] * 6, [0] * 6, [10**20, 0, 0, 0, 0, 0]]), {}, r"references: example 2, aspect 'entertainment': rating 100000000000000000000 is (outside|out of range)", ["example 2", "100000000000000000000"]),
    (W, w(), {"k": 2.5}, r"k must be a positive integer, got 2.5", ["2.5"]),
    (W, w(), {"k": True}, r"k must be a positive integer, got True", ["True"]),
    (K, kw(), {"presence": "present"}, r"presence needs texts", ["texts"]),
    (K, kw(texts=["a", None, "c"]), {"presence": "absent"}, r"texts: example 1 must be a str, got NoneType None", ["example 1", "None"]),
    (K, kw(), {"confidence_level": 1.5}, r"confidence_level must be a number strictly between 0 and 1, got 1.5", ["1.5"]),
    (S, kw(), {"confidence_level": 0.9, "n_resamples": 0}, r"n_resamples must be a positive integer, got 0", ["0"]),
]  # fmt: skip

IDS = [f"{family}-{i}" for i, (family, *_) in enumerate(CATALOGUE)]


def test_catalogue_is_large_and_covers_every_family():
    assert len(CATALOGUE) >= 30
    assert {case[0] for case in CATALOGUE} == set(LIBRARY)


@pytest.mark.parametrize(("family", "inputs", "options", "message", "mentions"), CATALOGUE, ids=IDS)
def test_library(family, inputs, options, message, mentions):
    if family == T:
        pytest.importorskip("vaderSentiment")
    with pytest.raises(ValueError, match=message) as error:
        LIBRARY[family](**inputs, **options)
    assert all(text in str(error.value) for text in mentions)


@pytest.fixture(scope="module")
def modules():
    return {}


def load(modules, family):
    if family not in modules:
        modules[family] = evaluate.load(str(REPO / "metrics" / family))
    return modules[family]


@pytest.mark.parametrize(("family", "inputs", "options", "message", "mentions"), CATALOGUE, ids=IDS)
def test_evaluate_module(family, inputs, options, message, mentions, modules):
    if family == T:
        pytest.importorskip("vaderSentiment")
    if family == S:
        pytest.importorskip("sentence_transformers")  # inputs are rejected before any model loads
    module = load(modules, family)
    with pytest.raises(ValueError, match=message):
        module.compute(**inputs, **options)
    # Through add_batch, type errors surface when the batch is added, the others at compute.
    with pytest.raises(ValueError) as error:
        module.add_batch(**inputs)
        module.compute(**options)
    assert all(text in str(error.value) for text in mentions)
    # A bad option (or presence without texts) is refused before evaluate consumes the added rows;
    # a bad value inside the rows (a None text) is found while computing.
    if options and "texts: example" not in message:
        assert module.compute() == module.compute(**inputs)
    elif module.writer is not None:  # a rejected batch leaves an empty cache open: release it
        with pytest.raises(ValueError):
            module.compute()


def _upload_rows(family, inputs):
    if family == A:
        from opinion_metrics.aspects import DEFAULT_ASPECTS

        rows = []
        for predicted, gold in zip(inputs["predictions"], inputs["references"]):
            row = {aspect: (gold[j] if j < len(gold) else None) for j, aspect in enumerate(DEFAULT_ASPECTS)}
            row.update(
                {f"pred_{a}": (predicted[j] if j < len(predicted) else None) for j, a in enumerate(DEFAULT_ASPECTS)}
            )
            rows.append(row)
        return rows
    names = list(inputs)
    return [{name: inputs[name][i] for name in names} for i in range(len(inputs["predictions"]))]


def _json_ready(inputs):
    try:
        json.dumps(inputs)
    except TypeError:
        return False
    return True


def _ui_case(case):
    """The case as the upload route sees it, or None where it cannot arise there: options are
    controls, a file's columns have equal lengths, CSV cells such as "3" are numbers, and a
    short row of ratings is a missing (None) cell."""
    family, inputs, options, message, mentions = case
    if options or len({len(v) for v in inputs.values()}) > 1 or not _json_ready(inputs):
        return None
    if family == A and "'3'" in mentions:
        return None
    if family == A and "5 ratings" in mentions:
        mentions = ["example 2", "None"]
    return family, inputs, options, message, mentions


UI_CASES = [ui for ui in map(_ui_case, CATALOGUE) if ui is not None]


@pytest.mark.parametrize(("family", "inputs", "options", "message", "mentions"), UI_CASES)
def test_spaces_upload_shows_the_error_in_the_ui(family, inputs, options, message, mentions, tmp_path, monkeypatch):
    gradio = pytest.importorskip("gradio")
    if family == T:
        pytest.importorskip("vaderSentiment")
    from opinion_metrics import demo

    if family == S:
        tiny = demo.Family(**{**demo.FAMILIES[S].__dict__, "compute": _semantic_with_tiny_encoder})
        monkeypatch.setitem(demo.FAMILIES, S, tiny)
    path = tmp_path / "upload.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in _upload_rows(family, inputs)), encoding="utf-8")
    defaults = [option.default for option in demo.FAMILIES[family].options]
    with pytest.raises(gradio.Error) as error:
        demo.run(family, "", "", "", str(path), *defaults)
    text = error.value.message
    if not inputs["predictions"]:  # an empty file
        assert "the file needs a" in text
    else:
        assert all(mention in text for mention in mentions)


def _semantic_with_tiny_encoder(data, options):
    from opinion_metrics.demo import _keyword_options

    options = {**_keyword_options(options), "model": TinyEncoder()}
    return semantic_keyword_prf(data["predictions"], data["references"], **options)


# --- accepted edge cases, with their values ---------------------------------------------

EDGE_CASES = [
    ("empty and whitespace-only keywords are dropped", lambda: keyword_prf([["", "  ", "a", "!!!"]], [["a", "\t"]]),
     {"precision": 1.0, "recall": 1.0, "f1": 1.0}),
    ("composed and decomposed Unicode normalize alike", lambda: keyword_prf([["Cafe\u0301", "ＡＢＣ"]], [["café", "abc"]], match="exact"),
     {"precision": 1.0, "recall": 1.0, "f1": 1.0}),
    ("a very long keyword", lambda: keyword_prf([["x" * 10_000, "long"]], [["y" * 5_000 + " long " + "z" * 5_000]], one_to_one=False),
     {"precision": 0.5, "recall": 1.0, "f1": 2 / 3}),
    ("an example without predictions", lambda: keyword_prf([[], ["a"]], [["a"], ["a"]]),
     {"precision": 0.5, "recall": 0.5, "f1": 0.5}),
    ("an example without references", lambda: keyword_prf([["a"], ["a"]], [[], ["a"]], zero_division=1.0),
     {"precision": 0.5, "recall": 1.0, "f1": 0.5}),
    ("a single example", lambda: keyword_prf([["a", "b"]], [["b"]]), {"precision": 0.5, "recall": 1.0, "f1": 2 / 3}),
    ("nDCG without any gold keywords", lambda: {"ndcg": ndcg_at_k([["a"]], [[]], zero_division=1.0)}, {"ndcg": 1.0}),
    ("zero total score", lambda: {k: v for k, v in weighted_keyword_prf([["a"]], [[0.0]], [["a"]]).items() if "weighted" in k},
     {"weighted_precision": 0.0, "weighted_recall": 0.0, "weighted_f1": 0.0}),
    ("aspects absent everywhere", lambda: {"score": aspect_sentiment_score([[0, 0]], [[0, 0]], aspects=["x", "y"])["score"]},
     {"score": 1.0}),
    ("ratings given as 4.0", lambda: {"score": aspect_sentiment_score([[4.0, 0.0]], [[4, 0]], aspects=["x", "y"])["score"]},
     {"score": 1.0}),
    ("no example with predictions: SAS keys absent", lambda: sentiment_appropriateness([[], []], [["a"], ["b"]], sentiment=lambda s: 0.5), {}),
    ("zero-width and bidi format characters are removed", lambda: keyword_prf([["\ufeffwar", "\u200b"]], [["\u200fwar"]], match="exact"),
     {"precision": 1.0, "recall": 1.0, "f1": 1.0}),
    ("a blank review text is left out of sas_from_text", lambda: sentiment_appropriateness([["good"]], texts=[" "], sentiment=lambda s: 0.5), {}),
    ("k = 10**9 costs what the data costs", lambda: {"map": weighted_keyword_prf([["a"]], [[1.0]], [["a", "b"]], k=10**9)[f"map@{10**9}"]},
     {"map": 0.5}),
]  # fmt: skip


@pytest.mark.parametrize(("description", "compute", "expected"), EDGE_CASES, ids=[case[0] for case in EDGE_CASES])
def test_accepted_edge_cases(description, compute, expected):
    assert compute() == pytest.approx(expected)
