"""sentiment_tuple_prf on the engines: Ray Data, Spark and the CLI's --workers against the family
function on the whole corpus, with text tuples (Arrow lists of lists), position tuples (Arrow
structs) and generated text; Poisson intervals identical across partitions."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import local_ray_data, local_spark
from engine_cases import POISSON, assert_same, random_slices, spark_frame

from opinion_metrics import sentiment_tuple_prf

pa = pytest.importorskip("pyarrow")

ASPECTS = ["pizza", "the pizza", "staff", "NULL", "wine"]
OPINIONS = ["good", "very good", "cold", "over cooked"]
SENTIMENTS = ["POS", "NEG", "positive", "neutral"]
WORDS = {"POS": "great", "positive": "great", "NEG": "bad", "neutral": "ok"}


def tuple_corpus(n: int, seed: int) -> pa.Table:
    """Triplets as text, the same as token positions (mappings: Arrow structs), quads as
    generated paraphrases; review_id is the position (the Poisson key)."""
    rng = np.random.default_rng(seed)

    def text(low, high):
        return [
            [str(rng.choice(v)) for v in (ASPECTS, OPINIONS, SENTIMENTS)] for _ in range(rng.integers(low, high + 1))
        ]

    def positions(items):
        def span(word):
            return None if word == "NULL" else sorted({len(word) % 5, len(word) % 3})

        return [{"aspect": span(a), "opinion": span(o), "sentiment": s} for a, o, s in items]

    gold = [text(0, 3) for _ in range(n)]
    predicted = [g[: rng.integers(0, len(g) + 1)] + text(0, 2) for g in gold]
    generated = [" [SSEP] ".join(f"food is {WORDS[s]} because {'it' if a == 'NULL' else a} is {o}" for a, o, s in p)
                 for p in predicted]  # fmt: skip
    quads = [[[a, "food", s, o] for a, o, s in g] for g in gold]
    return pa.table({
        "review_id": pa.array(np.arange(n)), "predicted": predicted, "gold": gold,
        "predicted_positions": [positions(p) for p in predicted], "gold_positions": [positions(g) for g in gold],
        "generated": generated, "quads": quads,
    })  # fmt: skip


CASES = [
    ({"predictions": "predicted", "references": "gold"}, {}),
    ({"predictions": "predicted", "references": "gold"}, {"match": "overlap", "average": "macro"}),
    ({"predictions": "predicted", "references": "gold"}, {"counting": "membership"}),
    ({"predictions": "predicted_positions", "references": "gold_positions"}, {"match": "overlap"}),
    ({"predictions": "generated", "references": "quads"}, {"elements": "asqp", "format": "paraphrase"}),
]
IDS = ["text", "overlap-macro", "membership", "positions", "generated"]


def truth(table: pa.Table, columns: dict, options: dict) -> dict:
    data = {name: table.column(column).to_pylist() for name, column in columns.items()}
    return sentiment_tuple_prf(data["predictions"], data["references"], **options)


@pytest.fixture(scope="module")
def corpus() -> pa.Table:
    return tuple_corpus(240, seed=11)


def test_the_corpus_holds_what_each_case_needs(corpus):
    found = [truth(corpus, columns, options) for columns, options in CASES]
    assert all(0 < result["f1"] < 1 for result in found)
    assert found[4]["unparsed"] == 0.0 and found[3]["aspect_f1"] > 0


@pytest.mark.parametrize(("columns", "options"), CASES, ids=IDS)
@pytest.mark.parametrize("intervals", [False, True])
def test_workers_equal_one_process(corpus, columns, options, intervals, monkeypatch):
    from opinion_metrics.engines import parallel

    monkeypatch.setattr(parallel, "MIN_CHUNK", 40)
    options = {**options, **POISSON, "bootstrap": "poisson"} if intervals else options
    data = {name: corpus.column(column).to_pylist() for name, column in columns.items()}
    result = parallel.compute("sentiment_tuple_prf", data["predictions"], data["references"], workers=2, **options)
    assert_same(result, truth(corpus, columns, options))


@pytest.fixture(scope="module")
def ray_data():
    yield from local_ray_data()


@pytest.mark.slow
@pytest.mark.parametrize(("columns", "options"), CASES, ids=IDS)
def test_ray_equals_the_family_function(ray_data, corpus, columns, options):
    from opinion_metrics import ray as om_ray

    dataset = ray_data.from_arrow(random_slices(corpus, 5, seed=len(options)))
    assert_same(om_ray.evaluate(dataset, "sentiment_tuple_prf", **columns, **options), truth(corpus, columns, options))


@pytest.mark.slow
def test_ray_poisson_intervals_do_not_depend_on_partitions(ray_data, corpus):
    from opinion_metrics import ray as om_ray

    columns, options = CASES[1][0], {**CASES[1][1], **POISSON, "bootstrap": "poisson"}
    results = [om_ray.evaluate(ray_data.from_arrow(random_slices(corpus, parts, seed=parts)), "sentiment_tuple_prf",
                               key="review_id", **columns, **options) for parts in (1, 3, 16)]  # fmt: skip
    for result in results:
        assert_same(result, truth(corpus, columns, options))


@pytest.fixture(scope="module")
def spark():
    yield from local_spark("local[2]", "opinion-metrics tuple tests", "ERROR")


@pytest.mark.slow
@pytest.mark.parametrize(("columns", "options"), CASES, ids=IDS)
def test_spark_equals_the_family_function(spark, corpus, columns, options):
    from opinion_metrics import spark as om_spark

    frame = spark_frame(spark, corpus, 3)
    expected = truth(corpus, columns, options)
    assert_same(om_spark.evaluate(frame, "sentiment_tuple_prf", **columns, **options), expected)
    poisson = {**options, **POISSON, "bootstrap": "poisson"}
    result = om_spark.evaluate(frame, "sentiment_tuple_prf", key="review_id", **columns, **poisson)
    assert_same(result, truth(corpus, columns, poisson))
