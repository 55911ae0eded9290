"""The bad-input catalogue: every family, through the library, the evaluate module
(`compute` and `add_batch`) and the Spaces' file upload; and the accepted edge cases."""

import json
import math
import re

import pytest
from conftest import REPO

from opinion_metrics import aspect_sentiment_score, keyword_prf, ndcg_at_k, weighted_keyword_prf
from opinion_metrics.families.keyword_diversity import keyword_diversity
from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf
from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

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
    (W, w(scores=[[0.5], None, [0.5]]), {}, r"scores: example 1 must be a list of scores \(numbers\), got NoneType", ["example 1", "None"]),
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
    # a bad value inside the rows (a None text) is found while computing, and the rows are kept.
    if options and "texts: example" not in message:
        assert module.compute() == module.compute(**inputs)
    modules.pop(family)  # the rows a failed compute kept, or a rejected batch's empty cache, stay with it


def _upload_rows(family, inputs):
    if family == A:
        from opinion_metrics.families.aspect_sentiment_score import DEFAULT_ASPECTS

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
    if not inputs["predictions"]:  # an empty file: no column at all
        assert text.startswith(("no column of predicted keywords in upload.jsonl", "the file needs a"))
        assert "(found: none)" in text
    else:
        assert all(any(form in text for form in _upload_forms(mention)) for mention in mentions), text


def _upload_forms(mention):
    """How an upload's message may name `mention`: example i is line i + 1 of the file, and a
    text where keywords belong is named by its line (the file's own words for where it is)."""
    found = re.fullmatch(r"example (\d+)", mention)
    return [mention] if found is None else [mention, f"line {int(found[1]) + 1} of upload.jsonl"]


def _semantic_with_tiny_encoder(data, options):
    from opinion_metrics.demo.controls import keyword_options as _keyword_options

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


# --- issue 17: options checked before evaluate consumes the rows, rows kept on failure, combine ---

MODULES = [K, W, S, T, A, "keyword_diversity"]
ROWS = {  # per module: the added rows, as add_batch takes them
    K: kw([["a", "b"], ["c"]], [["a"], ["boom"]]),
    W: w([["a", "b"], ["c"]], [[0.5, 0.25], [1.0]], [["a"], ["boom"]]),
    S: kw([["a", "b"], ["c"]], [["a"], ["boom"]]),
    T: kw([["a", "b"], ["c"]], [["a"], ["boom"]]),
    A: ratings([[1, 0, 0, 0, 0, 7], [0, 2, 0, 0, 0, 0]], [[1, 0, 0, 0, 0, 6], [0, 3, 0, 0, 0, 0]]),
    "keyword_diversity": {"predictions": [["a", "b", "a"], ["boom", "c"]]},
}
# per module: options that fail inside `_compute` on a row (a normalizer that fails on the keyword
# "boom", ratings above max_rating), and the corrected options
FAILING = {name: {"normalize": lambda s: s if s != "boom" else 1 / 0} for name in (K, W, S, T, "keyword_diversity")}
FAILING[A] = {}
CORRECTED = {name: {"normalize": "none"} for name in (K, W, S, T, "keyword_diversity")}
CORRECTED[A] = {"max_rating": 7}
EXTRA = {S: {"model": TinyEncoder()}, T: {"sentiment": lambda s: 0.25 if s in ("a", "boom") else 0.75}}
LIBRARY_OF = {**LIBRARY, S: semantic_keyword_prf, "keyword_diversity": keyword_diversity}


def expected(name, rows, options):
    return LIBRARY_OF[name](**rows, **{**EXTRA.get(name, {}), **options})


def one(rows, i):
    """Example i of `rows` as add takes it (prediction=, reference=, other inputs by their names)."""
    return {
        {"predictions": "prediction", "references": "reference"}.get(key, key): value[i] for key, value in rows.items()
    }


def fresh(name):
    return evaluate.load(str(REPO / "metrics" / name))


@pytest.mark.parametrize("name", MODULES)
def test_a_compute_that_fails_inside_the_metric_keeps_the_added_rows(name):
    module, rows = fresh(name), ROWS[name]
    module.add_batch(**{key: value[:1] for key, value in rows.items()})
    module.add(**one(rows, 1))
    error = ZeroDivisionError if name != A else ValueError
    with pytest.raises(error):
        module.compute(**EXTRA.get(name, {}), **FAILING[name])
    assert module.compute(**EXTRA.get(name, {}), **CORRECTED[name]) == expected(name, rows, CORRECTED[name])
    # rows given to the failing compute itself are not kept (repeating that call must not add them twice)
    module.add_batch(**{key: value[:1] for key, value in rows.items()})
    with pytest.raises(error):
        module.compute(**{key: value[1:] for key, value in rows.items()}, **EXTRA.get(name, {}), **FAILING[name])
    first = {key: value[:1] for key, value in rows.items()}
    assert module.compute(**EXTRA.get(name, {}), **CORRECTED[name]) == expected(name, first, CORRECTED[name])


BAD_OPTIONS = [  # (modules, option, value, message) refused before the rows are consumed
    ([T], "sentiment", 3, r"sentiment must be None \(VADER\) or a callable str -> float in \[0, 1\], got int 3"),
    ([T], "sentiment", "vader", r"sentiment must be .*got str 'vader'"),
    ([S, "keyword_diversity"], "model", 3, r"model must be a sentence-transformers model name, .*got int 3"),
    ([S, "keyword_diversity"], "model", "./no/such/model", r"model './no/such/model' looks like a path, but there is no such folder"),
    ([S, "keyword_diversity"], "model", "no-such-owner/no-such-model", r"could not load the sentence-transformers model 'no-such-owner/no-such-model'"),
    ([S, "keyword_diversity"], "device", "gpu", r"^device must be 'cpu', 'cuda', 'cuda:N' or 'mps' .*, got 'gpu': not a device PyTorch knows"),
    ([S, "keyword_diversity"], "device", "cuda:99", r"^device must be one PyTorch can see here, got 'cuda:99'"),
    ([S, "keyword_diversity"], "device", 0, r"device must be a str such as 'cpu'"),
    ([S], "show_progress", "yes", r"show_progress must be True or False, got 'yes'"),
    ([K, W, S, T, "keyword_diversity"], "normalize", lambda s: None, r"normalize returned NoneType None for the keyword \"Star Wars: the Empire's fall\"; it must return a str"),
    ([K, W, S, T, "keyword_diversity"], "normalize", lambda s: s.no_such_method(), r"normalize raised AttributeError: .* on the keyword"),
]  # fmt: skip
OPTION_CASES = [(name, *case[1:]) for case in BAD_OPTIONS for name in case[0]]


@pytest.mark.parametrize(("name", "option", "value", "message"), OPTION_CASES)
def test_a_bad_option_is_refused_before_the_added_rows_are_consumed(name, option, value, message):
    module, rows = fresh(name), ROWS[name]
    options = {**EXTRA.get(name, {}), **CORRECTED[name]}
    module.add_batch(**rows)
    with pytest.raises(ValueError, match=message):
        module.compute(**{**options, option: value})
    assert module.compute(**options) == expected(name, rows, options)
    if name in (S, T, "keyword_diversity") and option not in ("show_progress", "normalize"):  # the library too
        with pytest.raises(ValueError, match=message):
            LIBRARY_OF[name](**rows, **{**options, option: value})


@pytest.mark.parametrize("name", MODULES)
def test_combine_add_batch_and_add_with_optional_inputs_left_out(name):
    rows, options = ROWS[name], {**EXTRA.get(name, {}), **CORRECTED[name]}
    combined = evaluate.combine([fresh(name)])
    combined.add_batch(**rows)
    assert combined.compute(**options) == expected(name, rows, options)
    for i in range(len(rows["predictions"])):
        combined.add(**one(rows, i))
    assert combined.compute(**options) == expected(name, rows, options)


def test_combine_of_keyword_modules_with_and_without_texts():
    combined = evaluate.combine([fresh(K), fresh("keyword_diversity")])
    predictions, references = [["war", "jedi"], ["fraud"]], [["war"], ["scam"]]
    combined.add_batch(predictions=predictions, references=references)
    expected_result = {**keyword_prf(predictions, references), **keyword_diversity(predictions)}
    assert combined.compute() == expected_result
    for prediction, reference in zip(predictions, references):
        combined.add(prediction=prediction, reference=reference)
    assert combined.compute() == expected_result


# --- lone surrogates (a truncated emoji) in keywords and texts, on every route ---

SURROGATE = "happy \ud83d"
SURROGATE_CASES = [
    (K, kw([["a"], ["b", SURROGATE]], [["a"], ["b"]]), r"predictions: example 1, keyword 1 str 'happy \\ud83d' holds a lone surrogate '\\ud83d' at character 6"),
    (W, w([["a"], ["b"]], [[0.5], [0.5]], [["a"], [SURROGATE]]), r"references: example 1, keyword 0 str 'happy \\ud83d' holds a lone surrogate"),
    (S, kw([[SURROGATE], ["b"]], [["a"], ["b"]]), r"predictions: example 0, keyword 0 str 'happy \\ud83d' holds a lone surrogate"),
    (T, kw([["a"], ["b"]], [["a"], ["b"]], texts=["fine", SURROGATE]), r"texts: example 1 \(str 'happy \\ud83d'\) holds a lone surrogate '\\ud83d' at character 6"),
    (T, kw([["a"], [SURROGATE]], [["a"], ["b"]]), r"predictions: example 1, keyword 0 str 'happy \\ud83d' holds a lone surrogate"),
    (K, kw([["a"], ["b"]], [["a"], ["b"]], texts=[SURROGATE, "b"]), r"texts: example 0 \(str 'happy \\ud83d'\) holds a lone surrogate"),
    ("keyword_diversity", {"predictions": [["a", SURROGATE]]}, r"predictions: example 0, keyword 1 str 'happy \\ud83d' holds a lone surrogate"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "rows", "message"), SURROGATE_CASES)
def test_lone_surrogates_are_named_on_every_route(name, rows, message):
    options = {**EXTRA.get(name, {}), **({"presence": "present"} if name == K and "texts" in rows else {})}
    with pytest.raises(ValueError, match=message):
        LIBRARY_OF[name](**rows, **options)
    with pytest.raises(ValueError, match=message):
        fresh(name).compute(**rows, **options)
    with pytest.raises(ValueError, match=message):
        fresh(name).add_batch(**rows)
    module = fresh(name)
    with pytest.raises(ValueError, match=message):  # add numbers the examples on from those added before
        for i in range(len(rows["predictions"])):
            module.add(**one(rows, i))
    with pytest.raises(ValueError, match=message):
        evaluate.combine([fresh(name)]).add_batch(**rows)


def test_valid_unicode_beyond_the_basic_plane_is_accepted():
    emoji = "happy \U0001f600"  # the whole emoji (a surrogate pair in UTF-16), not half of it
    assert keyword_prf([[emoji]], [[emoji]], normalize="none") == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert fresh(K).compute(predictions=[[emoji]], references=[[emoji]], normalize="none")["f1"] == 1.0


# --- valid input read by position; clear messages for common mistakes ---


def test_polars_and_pandas_series_of_keyword_lists_are_read_by_position():
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    import numpy as np

    predictions, references = [["war", "jedi"], ["fraud"], []], [["war"], ["scam", "fraud"], ["x"]]
    truth = keyword_prf(predictions, references)
    assert keyword_prf(pl.Series(predictions), pl.Series(references)) == truth
    series = pd.Series([np.array(row, dtype=object) for row in predictions], index=[7, 3, 5])
    assert keyword_prf(series, pd.Series(references, index=[2, 1, 0])) == truth
    assert fresh(K).compute(predictions=pl.Series(predictions), references=pl.Series(references)) == truth
    module = fresh(K)
    module.add_batch(predictions=series, references=pd.Series(references, index=[2, 1, 0]))
    assert module.compute() == truth


def test_tensors_and_frames_of_ratings_are_read_by_position():
    torch = pytest.importorskip("torch")
    pl = pytest.importorskip("polars")
    predicted, gold = [[1, 0], [2, 3], [0, 5]], [[1, 0], [2, 2], [4, 5]]
    truth = aspect_sentiment_score(predicted, gold, aspects=["x", "y"])
    assert aspect_sentiment_score(torch.tensor(predicted), torch.tensor(gold), aspects=["x", "y"]) == truth
    frame = pl.DataFrame(predicted, schema=["x", "y"], orient="row")
    assert (
        aspect_sentiment_score(frame, pl.DataFrame(gold, schema=["x", "y"], orient="row"), aspects=["x", "y"]) == truth
    )
    assert (
        fresh(A).compute(predictions=torch.tensor(predicted), references=torch.tensor(gold), aspects=["x", "y"])
        == truth
    )


@pytest.mark.parametrize(
    "make", [lambda v: __import__("numpy").float32(v), lambda v: __import__("fractions").Fraction(v)]
)
def test_numpy_floats_and_fractions_from_a_sentiment_function(make):
    values = {"good": 0.75, "bad": 0.25, "fine": 0.5}
    result = sentiment_appropriateness([["good"], ["bad"]], [["fine"], ["bad"]], sentiment=lambda s: make(values[s]))
    assert result == {"sas_from_keywords": (1 - 0.25 + 1) / 2}


@pytest.mark.parametrize("value", [float("nan"), 1.5, True, "0.5", None])
def test_a_sentiment_function_returning_a_non_number_is_named(value):
    with pytest.raises(ValueError, match=r"the sentiment function returned .* for 'good'; expected \[0, 1\]"):
        sentiment_appropriateness([["good"]], [["bad"]], sentiment=lambda s: value)


@pytest.mark.parametrize("references", [[["a"], ["b"]], [["a"]]])
def test_a_flat_list_of_strings_is_named_as_such(references):
    message = r"predictions: expected a list of keyword lists per example, .*got a flat list of str starting with 'a'"
    with pytest.raises(ValueError, match=message):
        keyword_prf(["a", "b"], references)
    with pytest.raises(ValueError, match=message):
        fresh(K).compute(predictions=["a", "b"], references=references)
    with pytest.raises(ValueError, match=r"expected a list of keyword lists per example"):
        fresh(K).add_batch(predictions=["a", "b"], references=references)


def test_device_gpu_leads_with_the_device_problem():
    for run in (
        lambda: semantic_keyword_prf([["a"]], [["b"]], device="gpu"),
        lambda: keyword_diversity([["a", "b"]], model="x", device="gpu"),
    ):
        with pytest.raises(
            ValueError,
            match=r"^device must be 'cpu', 'cuda', 'cuda:N' or 'mps' .*, got 'gpu': not a device PyTorch knows",
        ):
            run()


def test_messages_show_the_keyword_as_given():
    class ZeroForWar(TinyEncoder):
        def encode(self, texts, **options):
            vectors = super().encode(texts)
            vectors[[i for i, text in enumerate(texts) if text == "war"]] = 0
            return vectors

    with pytest.raises(ValueError, match=r"references: example 1, keyword 0 'WAR!!' \(normalized 'war'\)"):
        semantic_keyword_prf([["a"], ["b"]], [["c"], ["WAR!!"]], model=ZeroForWar())
    with pytest.raises(ValueError, match=r"predictions: example 0, keyword 1 'War ' \(normalized 'war'\)"):
        keyword_diversity([["a", "War "]], model=ZeroForWar())


# --- found by the hostile pass -------------------------------------------------------------


def test_arrow_fixed_size_list_ratings_on_every_route():
    pa = pytest.importorskip("pyarrow")
    predicted, gold = [[1, 0], [2, 3]], [[1, 0], [2, 2]]
    truth = aspect_sentiment_score(predicted, gold, aspects=["x", "y"])
    for value_type in (pa.int8(), pa.int64(), pa.float32()):
        column = pa.array(predicted, type=pa.list_(value_type, 2))
        assert aspect_sentiment_score(column, gold, aspects=["x", "y"]) == truth
        assert fresh(A).compute(predictions=column, references=pa.array(gold), aspects=["x", "y"]) == truth
        module = fresh(A)
        module.add_batch(predictions=column, references=gold)
        assert module.compute(aspects=["x", "y"]) == truth
    keywords = pa.array([["a", "b"], ["c", "d"]], type=pa.list_(pa.string(), 2))
    assert fresh(K).compute(predictions=keywords, references=[["a"], ["d"]]) == keyword_prf(
        [["a", "b"], ["c", "d"]], [["a"], ["d"]]
    )


def test_numeric_zero_dimensional_arrays_are_numbers_and_generators_are_read_in_order():
    import numpy as np

    truth = weighted_keyword_prf([["a", "b"]], [[0.5, 0.25]], [["a"]])
    zero_d = [[np.array(0.5), np.array(0.25, dtype=np.float32)]]
    assert weighted_keyword_prf([["a", "b"]], zero_d, [["a"]]) == truth
    assert fresh(W).compute(predictions=[["a", "b"]], scores=zero_d, references=[["a"]]) == truth
    predictions, references = [["a"], ["b", "c"]], [["a"], ["c"]]
    assert keyword_prf(iter(predictions), (row for row in references)) == keyword_prf(predictions, references)
    assert aspect_sentiment_score([[1, 0]], [[1, 0]], aspects=np.array(["x", "y"]))["score"] == 1.0


def test_aspect_names_and_normalized_keywords_with_lone_surrogates_are_named():
    with pytest.raises(ValueError, match=r"aspects: the name 'food\\ud83d' holds a lone surrogate"):
        aspect_sentiment_score([[1]], [[1]], aspects=["food\ud83d"])
    with pytest.raises(ValueError, match=r"aspects: the name 'food\\ud83d' holds a lone surrogate"):
        fresh(A).compute(predictions=[[1]], references=[[1]], aspects=["food\ud83d"])
    message = r"predictions: example 0, keyword 0 'a' \(normalized 'a\\ud83d'\): the normalized keyword holds a lone"
    with pytest.raises(ValueError, match=message):
        semantic_keyword_prf([["a"]], [["b"]], model=TinyEncoder(), normalize=lambda s: s + "\ud83d")


def test_combine_names_a_required_input_left_out():
    combined = evaluate.combine([fresh(K), fresh(W)])
    with pytest.raises(ValueError, match=r"weighted_keyword_prf needs scores: pass scores=\.\.\. to add_batch"):
        combined.add_batch(predictions=[["a"]], references=[["a"]])
    with pytest.raises(ValueError, match=r"weighted_keyword_prf needs scores: pass scores=\.\.\. to add"):
        combined.add(prediction=["a"], reference=["a"])


def test_zero_dimensional_sentiments_are_numbers_and_model_strings_or_classes_are_named():
    import numpy as np
    import torch

    for make in (np.array, torch.tensor):
        result = sentiment_appropriateness(
            [["a"]], [["b"]], sentiment=lambda s, make=make: make(0.25 if s == "a" else 0.75)
        )
        assert result == {"sas_from_keywords": 0.5}
    with pytest.raises(ValueError, match=r"the sentiment function returned Tensor tensor\(True\) for 'a'"):
        sentiment_appropriateness([["a"]], [["b"]], sentiment=lambda s: torch.tensor(True))
    for model in ("", "  ", TinyEncoder):  # a str has an encode method; a class is not a model
        named = r"model must be a sentence-transformers model name, a path or a model"
        named = named if model is TinyEncoder else r"the model name is empty \('\s*'\): give a sentence-transformers"
        with pytest.raises(ValueError, match=named):
            semantic_keyword_prf([["a"]], [["b"]], model=model)
        with pytest.raises(ValueError, match=named):
            fresh(S).compute(predictions=[["a"]], references=[["b"]], model=model)
