"""The evaluate modules: loading by path offline, every input route, bad rows (doctests and
evaluate's own checks: test_module_harness.py)."""

import pytest

evaluate = pytest.importorskip("evaluate")
datasets = pytest.importorskip("datasets")

from conftest import REPO  # noqa: E402

from opinion_metrics import keyword_prf, weighted_keyword_prf  # noqa: E402

PREDICTIONS = [["social satire", "dark comedy", "pizza"], [], ["space opera", "Jedi!"]]
SCORES = [[0.9, 0.5, 0.1], [], [0.7, 0.6]]
REFERENCES = [["satire", "class struggle", "comedy"], ["family"], ["jedi", "space opera", "droid"]]


@pytest.fixture(scope="module")
def keyword_module():
    return evaluate.load(str(REPO / "metrics" / "keyword_prf"))


@pytest.fixture(scope="module")
def weighted_module():
    return evaluate.load(str(REPO / "metrics" / "weighted_keyword_prf"))


OPTIONS = [
    {},
    {"match": "exact", "average": "micro"},
    {"match": "token", "one_to_one": False, "top_k": 1},
    {"top_k": "O", "zero_division": 1.0, "normalize": "ascii"},
    {"stemmer": "porter", "return_per_example": True},
    {"confidence_level": 0.9, "n_resamples": 50, "bootstrap": "poisson"},
]


@pytest.mark.parametrize("options", OPTIONS)
def test_keyword_module_equals_library(keyword_module, options):
    expected = keyword_prf(PREDICTIONS, REFERENCES, **options)
    assert keyword_module.compute(predictions=PREDICTIONS, references=REFERENCES, **options) == expected
    keyword_module.add_batch(predictions=PREDICTIONS[:2], references=REFERENCES[:2])
    keyword_module.add(prediction=PREDICTIONS[2], reference=REFERENCES[2])
    assert keyword_module.compute(**options) == expected


@pytest.mark.parametrize("options", [{}, {"relevance": "binary", "k": 2}, {"one_to_one": False, "average": "micro"}])
def test_weighted_module_equals_library(weighted_module, options):
    expected = weighted_keyword_prf(PREDICTIONS, SCORES, REFERENCES, **options)
    assert weighted_module.compute(predictions=PREDICTIONS, scores=SCORES, references=REFERENCES, **options) == expected
    weighted_module.add_batch(predictions=PREDICTIONS[:1], scores=SCORES[:1], references=REFERENCES[:1])
    weighted_module.add_batch(predictions=PREDICTIONS[1:], scores=SCORES[1:], references=REFERENCES[1:])
    assert weighted_module.compute(**options) == expected


def test_outputs_are_plain_python_floats(keyword_module, weighted_module):
    results = [
        keyword_module.compute(predictions=PREDICTIONS, references=REFERENCES),
        weighted_module.compute(predictions=PREDICTIONS, scores=SCORES, references=REFERENCES),
    ]
    for result in results:
        assert all(type(value) is float for value in result.values())


def test_datasets_columns_are_passed_directly(keyword_module, weighted_module):
    table = datasets.Dataset.from_dict({"keywords": PREDICTIONS, "scores": SCORES, "gold": REFERENCES})
    assert keyword_module.compute(predictions=table["keywords"], references=table["gold"]) == keyword_prf(
        PREDICTIONS, REFERENCES
    )
    for batch in table.iter(batch_size=2):
        weighted_module.add_batch(predictions=batch["keywords"], scores=batch["scores"], references=batch["gold"])
    assert weighted_module.compute() == weighted_keyword_prf(PREDICTIONS, SCORES, REFERENCES)


def test_combine(keyword_module):
    combined = evaluate.combine([keyword_module])
    assert combined.compute(predictions=PREDICTIONS, references=REFERENCES) == keyword_prf(PREDICTIONS, REFERENCES)


def test_a_gold_list_repeated_for_every_review_round_trips(keyword_module):
    gold = ["jedi", "empire", "droid"]
    predictions = [["jedi"], ["sith"], ["droid", "empire"]] * 50
    keyword_module.add_batch(predictions=predictions, references=[gold] * len(predictions))
    keyword_module.add_batch(predictions=[["x"]], references=[["x", "y"]])
    expected = keyword_prf(predictions + [["x"]], [gold] * len(predictions) + [["x", "y"]], return_per_example=True)
    assert keyword_module.compute(return_per_example=True) == expected


@pytest.mark.parametrize("route", ["compute", "add_batch"])
def test_a_bad_later_row_is_an_error_not_a_silent_cast(keyword_module, route):
    # evaluate alone checks only the first row and would turn [1, 2] into ["1", "2"].
    predictions, references = [["a"], ["b"], [1, 2]], [["a"], ["b"], ["c"]]
    with pytest.raises(ValueError, match=r"predictions: example 2, keyword 0 must be a str, got int 1"):
        getattr(keyword_module, route)(predictions=predictions, references=references)


def test_error_indices_count_across_batches(weighted_module):
    weighted_module.add_batch(predictions=[["a"], ["b"]], scores=[[0.5], [0.5]], references=[["a"], ["b"]])
    with pytest.raises(ValueError, match=r"scores: example 3, keyword 0: score must be finite, got nan"):
        weighted_module.add_batch(predictions=[["a"], ["b"]], scores=[[0.5], [float("nan")]], references=[["a"], ["b"]])
    weighted_module.compute()  # releases the cache; the valid rows still compute


def test_an_empty_first_row_still_gives_the_right_result(keyword_module, weighted_module):
    predictions, references = [[], ["a", "b"]], [[], ["a"]]
    expected = keyword_prf(predictions, references)
    assert keyword_module.compute(predictions=predictions, references=references) == expected
    keyword_module.add_batch(predictions=predictions, references=references)
    assert keyword_module.compute() == expected
    weighted_module.add_batch(predictions=predictions, scores=[[], [0.5, 0.5]], references=references)
    assert weighted_module.compute() == weighted_keyword_prf(predictions, [[], [0.5, 0.5]], references)


def test_length_mismatch_and_missing_inputs(keyword_module, weighted_module):
    with pytest.raises(ValueError, match="one entry per example"):
        keyword_module.add_batch(predictions=[["a"]], references=[["a"], ["b"]])
    with pytest.raises(ValueError, match=r"missing inputs \['scores'\]"):
        weighted_module.compute(predictions=[["a"]], references=[["a"]])
    with pytest.raises(ValueError, match=r"scores: example 0 has 2 predictions but 1 scores"):
        weighted_module.add_batch(predictions=[["a", "b"]], scores=[[0.5]], references=[["a"]])


@pytest.mark.parametrize(
    "name", ["keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf", "sentiment_appropriateness"]
)
def test_metric_cards_list_every_deviation_of_the_spec(name):
    card = (REPO / "metrics" / name / "README.md").read_text(encoding="utf-8")
    assert "## Deviations from the source notebooks" in card
    assert all(f"\n{i}. " in card for i in range(1, 8))


def test_semantic_module_loads_without_a_model_and_fails_only_at_compute(monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    module = evaluate.load(str(REPO / "metrics" / "semantic_keyword_prf"))
    with pytest.raises(ValueError, match="could not load the sentence-transformers model 'no-such/model'"):
        module.compute(predictions=[["a"]], references=[["a"]], model="no-such/model")


def test_semantic_module_equals_library():
    pytest.importorskip("sentence_transformers")
    from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf

    module = evaluate.load(str(REPO / "metrics" / "semantic_keyword_prf"))
    expected = semantic_keyword_prf(PREDICTIONS, REFERENCES, threshold=0.6)
    assert module.compute(predictions=PREDICTIONS, references=REFERENCES, threshold=0.6) == expected
    module.add_batch(predictions=PREDICTIONS[:2], references=REFERENCES[:2])
    module.add(prediction=PREDICTIONS[2], reference=REFERENCES[2])
    assert module.compute(threshold=0.6) == pytest.approx(expected)


def test_sentiment_module_optional_inputs():
    pytest.importorskip("vaderSentiment")
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    module = evaluate.load(str(REPO / "metrics" / "sentiment_appropriateness"))
    texts = ["A sharp satire.", None, "Space opera at its best."]
    sentiments = [[0.9, 0.2, 0.5], [], [0.7, 0.6]]
    for inputs in (
        {},
        {"texts": texts},
        {"prediction_sentiments": sentiments},
        {"texts": texts, "prediction_sentiments": sentiments},
    ):
        expected = sentiment_appropriateness(PREDICTIONS, REFERENCES, **inputs)
        assert module.compute(predictions=PREDICTIONS, references=REFERENCES, **inputs) == expected
        module.add_batch(predictions=PREDICTIONS, references=REFERENCES, **inputs)
        assert module.compute() == pytest.approx(expected)
    message = r"prediction_sentiments: example 2, keyword 1: score must be a number in \[0, 1\], got NoneType None"
    with pytest.raises(ValueError, match=message):
        module.add_batch(
            predictions=PREDICTIONS, references=REFERENCES, prediction_sentiments=[[0.1] * 3, [], [0.5, None]]
        )
    with pytest.raises(ValueError, match=r"texts: example 1 must be a str \(or None\), got int 7"):
        module.add_batch(predictions=PREDICTIONS, references=REFERENCES, texts=["a", 7, "b"])


def test_a_bad_option_after_add_batch_keeps_the_added_rows(keyword_module):
    predictions = [["war", "jedi"], ["droid", "sith"], ["hobbit"], []] * 250
    references = [["jedi", "empire"], ["droid"], ["ring", "hobbit"], ["x"]] * 250
    keyword_module.add_batch(predictions=predictions, references=references)
    with pytest.raises(ValueError, match=r"unknown option 'averge' \(did you mean 'average'\?\)"):
        keyword_module.compute(averge="micro")
    with pytest.raises(ValueError, match=r"average must be one of \('macro', 'micro'\), got 'mikro'"):
        keyword_module.compute(average="mikro")
    # micro: 3 matches of 5 predictions and 3 of 6 gold keywords per 4 rows
    assert keyword_module.compute(average="micro") == pytest.approx(
        {"precision": 3 / 5, "recall": 3 / 6, "f1": 2 * (3 / 5) * (3 / 6) / (3 / 5 + 3 / 6)}
    )


def test_an_unknown_option_given_with_inputs_is_a_value_error(weighted_module):
    unknown = r"unknown option 'top-k' \(did you mean 'top_k'\?\); the options are \['presence', 'match', "
    with pytest.raises(ValueError, match=unknown):
        weighted_module.compute(predictions=[["a"]], scores=[[1.0]], references=[["a"]], **{"top-k": 1})


def test_ratings_beyond_int32_name_their_example():
    module = evaluate.load(str(REPO / "metrics" / "aspect_sentiment_score"))
    with pytest.raises(ValueError, match=r"predictions: example 1, aspect 0: rating 4294967299 is out of range"):
        module.add_batch(predictions=[[1, 0], [2**32 + 3, 0]], references=[[1, 0], [1, 0]])


@pytest.mark.parametrize("first_with_sentiments", [True, False])
def test_prediction_sentiments_in_some_batches_only_are_rejected_when_added(first_with_sentiments):
    pytest.importorskip("vaderSentiment")
    module = evaluate.load(str(REPO / "metrics" / "sentiment_appropriateness"))
    batches = [
        {"predictions": [["great acting"]], "references": [["masterpiece"]], "prediction_sentiments": [[0.9]]},
        {"predictions": [["boring plot"]], "references": [["dull"]]},
    ]
    first, second = batches if first_with_sentiments else batches[::-1]
    module.add_batch(**first)
    refused = r"prediction_sentiments: examples 0-0 were added with(out)? prediction_sentiments but this batch "
    refused += r"\(examples 1-1\) has (none|them); give prediction_sentiments for every batch or for none"
    with pytest.raises(ValueError, match=refused):
        module.add_batch(**second)
    module.add_batch(**first)  # a consistent batch is still accepted after the refused one
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    twice = {name: column * 2 for name, column in first.items()}
    assert module.compute() == sentiment_appropriateness(**twice)


def test_a_missing_row_of_given_prediction_sentiments_is_rejected_when_added():
    module = evaluate.load(str(REPO / "metrics" / "sentiment_appropriateness"))
    with pytest.raises(ValueError, match=r"prediction_sentiments: example 1 must be a list"):
        module.add_batch(predictions=[["a"], ["b"]], references=[["a"], ["b"]], prediction_sentiments=[[0.5], None])


@pytest.mark.parametrize("route", ["compute", "add_batch"])
def test_pandas_series_with_any_index_are_read_by_position(weighted_module, route):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"p": PREDICTIONS * 2, "s": SCORES * 2, "r": REFERENCES * 2, "order": [5, 0, 3, 1, 4, 2]})
    for table in (frame.sort_values("order"), frame[frame["order"] > 1]):
        expected = weighted_keyword_prf(table["p"].tolist(), table["s"].tolist(), table["r"].tolist())
        inputs = {"predictions": table["p"], "scores": table["s"], "references": table["r"]}
        if route == "add_batch":
            weighted_module.add_batch(**inputs)
            assert weighted_module.compute() == expected
        else:
            assert weighted_module.compute(**inputs) == expected


@pytest.mark.parametrize("presence", ["present", "absent"])
def test_keyword_module_texts_and_presence_equal_the_library(keyword_module, presence):
    texts = ["A social satire and dark comedy.", "", "A space opera with a droid."]
    expected = keyword_prf(PREDICTIONS, REFERENCES, texts=texts, presence=presence)
    assert keyword_module.compute(predictions=PREDICTIONS, references=REFERENCES, texts=texts, presence=presence) == (
        expected
    )
    keyword_module.add_batch(predictions=PREDICTIONS[:2], references=REFERENCES[:2], texts=texts[:2])
    keyword_module.add(prediction=PREDICTIONS[2], reference=REFERENCES[2], texts=texts[2])
    assert keyword_module.compute(presence=presence) == expected


def test_sentiment_module_without_references():
    pytest.importorskip("vaderSentiment")
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    module = evaluate.load(str(REPO / "metrics" / "sentiment_appropriateness"))
    texts = ["A sharp satire.", "Dull.", "Space opera at its best."]
    expected = sentiment_appropriateness(PREDICTIONS, texts=texts)
    assert "sas_from_keywords" not in expected
    assert module.compute(predictions=PREDICTIONS, texts=texts) == expected
    module.add_batch(predictions=PREDICTIONS[:2], texts=texts[:2])
    module.add(prediction=PREDICTIONS[2], texts=texts[2])
    assert module.compute() == pytest.approx(expected)


@pytest.mark.parametrize("arrow_type", ["large_list_large_string", "list_large_string"])
def test_sliced_large_string_columns_are_read_row_by_row(keyword_module, arrow_type):
    import pyarrow as pa

    rows = [["x", "b", "x"], ["", "a"], [], ["a", "war"], ["ba", "abc"], ["x", "war"]]
    value = pa.large_string()
    kind = pa.large_list(value) if arrow_type.startswith("large_list") else pa.list_(value)
    column = pa.array(rows, type=kind).slice(1)
    expected = keyword_prf(rows[1:], rows[1:])
    assert keyword_module.compute(predictions=rows[1:], references=column) == expected


def test_add_takes_one_example_under_either_name(keyword_module):
    # evaluate.combine(...).add passes the one example as predictions= / references=.
    keyword_module.add(predictions=["a", "b"], references=["a"])
    keyword_module.add(prediction=["c"], reference=["d"])
    assert keyword_module.compute() == keyword_prf([["a", "b"], ["c"]], [["a"], ["d"]])
    with pytest.raises(ValueError, match=r"add takes one example \(a list of keywords\), got a list of lists"):
        keyword_module.add(predictions=[["a"], ["b"]], references=[["a"], ["b"]])
    with pytest.raises(ValueError, match=r"give prediction= or predictions=, not both"):
        keyword_module.add(prediction=["a"], predictions=["b"], reference=["a"])


def test_presence_without_added_texts_keeps_the_added_rows(keyword_module):
    keyword_module.add_batch(predictions=[["a"], ["b"]], references=[["a"], ["c"]])
    with pytest.raises(ValueError, match=r"presence='present' needs texts: add them with add_batch"):
        keyword_module.compute(presence="present")
    assert keyword_module.compute() == keyword_prf([["a"], ["b"]], [["a"], ["c"]])
