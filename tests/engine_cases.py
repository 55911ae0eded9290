"""What the engine tests share (and the CLI's --workers and the streaming tests): a random
corpus with every family's inputs, the families and option sets they run (`CASES`), the
family function on the whole table (the truth), random partitions, the Ray and Spark
engines, and the truths of pooled groups and of one row per value of by=."""

from __future__ import annotations

import math

import numpy as np
import pytest

from opinion_metrics import pool_by_group
from opinion_metrics.families.registry import get_family

pa = pytest.importorskip("pyarrow")


PHRASES = ["star wars", "Star Wars!", "jedi", "dark side", "the force", "han solo", "droid", "empire",
           "rebel base", "death star", "light saber", "wookiee", "bad acting", "great music", "boring plot",
           "", "  ", "Jedi knights", "force", "solo"]  # fmt: skip
WORDS = ["good", "bad", "terrible", "wonderful", "plot", "jedi", "star wars", "music", "the force", "droid"]
N_ASPECTS = 6


def hash_encoder():
    """A deterministic stand-in for a sentence encoder: character-trigram counts hashed into
    16 dimensions, so that similar strings are similar (a local class: pickled by value)."""

    class TrigramEncoder:
        def encode(self, texts, **_):
            vectors = np.zeros((len(texts), 16), np.float32)
            for row, text in enumerate(texts):
                padded = f"  {text} "
                for start in range(len(padded) - 2):
                    vectors[row, sum(map(ord, padded[start : start + 3])) % 16] += 1.0
            return vectors + 0.01

    return TrigramEncoder()


def random_corpus(n: int, seed: int) -> pa.Table:
    """`n` examples with every family's inputs; review_id is the position (the Poisson key)."""
    rng = np.random.default_rng(seed)

    def keywords(low: int, high: int) -> list[str]:
        return [PHRASES[i] for i in rng.integers(0, len(PHRASES), rng.integers(low, high + 1))]

    predictions = [keywords(0, 6) for _ in range(n)]
    references = [keywords(0, 5) for _ in range(n)]
    columns = {
        "review_id": pa.array(np.arange(n)),
        "predictions": predictions,
        "references": references,
        "scores": [[round(float(x), 3) for x in rng.random(len(p))] for p in predictions],
        "sentiments": [[float(x) for x in rng.random(len(p))] for p in predictions],
        "texts": [" ".join(rng.choice(WORDS, rng.integers(3, 9))) + "." for _ in range(n)],
        "predicted_ratings": rng.integers(0, 6, (n, N_ASPECTS)).tolist(),
        "gold_ratings": rng.integers(0, 6, (n, N_ASPECTS)).tolist(),
        "movie": [f"movie {i}" for i in rng.integers(0, 7, n)],
    }
    return pa.table(columns)


# (family, columns given to the engine, options): several option sets per family.
CASES = [
    ("keyword_prf", {}, {}),
    ("keyword_prf", {}, {"average": "micro", "top_k": 2, "match": "exact"}),
    ("keyword_prf", {"texts": "texts"}, {"presence": "present", "one_to_one": True, "match": "token"}),
    ("weighted_keyword_prf", {"scores": "scores"}, {}),
    ("weighted_keyword_prf", {"scores": "scores"}, {"k": 3, "relevance": "binary", "average": "micro"}),
    ("semantic_keyword_prf", {}, {"threshold": 0.6}),
    ("semantic_keyword_prf", {}, {"average": "micro", "top_k": 3, "one_to_one": True}),
    ("sentiment_appropriateness", {"texts": "texts"}, {}),
    ("sentiment_appropriateness", {"prediction_sentiments": "sentiments"}, {"mapping": "compound"}),
    ("aspect_sentiment_score", {"predictions": "predicted_ratings", "references": "gold_ratings"}, {}),
    ("aspect_sentiment_score", {"predictions": "predicted_ratings", "references": "gold_ratings"},
     {"zero_division": 0.0, "min_rating": 1, "max_rating": 5}),
    ("keyword_diversity", {"references": None}, {}),
    ("keyword_diversity", {"references": None}, {"normalize": "none"}),
]  # fmt: skip
CASE_IDS = [f"{family}-{i}" for i, (family, _, _) in enumerate(CASES)]


def with_model(family: str, options: dict) -> dict:
    return {**options, "model": hash_encoder()} if family == "semantic_keyword_prf" else options


def family_result(table: pa.Table, family: str, columns: dict, options: dict) -> dict:
    """The family function on the whole table (the truth)."""
    names = {"predictions": "predictions", "references": "references", **columns}
    data = {name: table.column(column).to_pylist() for name, column in names.items() if column is not None}
    function = get_family(family).function
    predictions, references = data.pop("predictions"), data.pop("references", None)
    if family == "weighted_keyword_prf":
        return function(predictions, data.pop("scores"), references, **data, **options)
    if family == "keyword_diversity":
        return function(predictions, **options)
    return function(predictions, references, **data, **options)


def assert_same(actual: dict, expected: dict, tolerance: float = 1e-12) -> None:
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(actual[key]), key
        else:
            assert math.isclose(actual[key], value, rel_tol=tolerance, abs_tol=tolerance), (key, actual[key], value)


def random_slices(table: pa.Table, parts: int, seed: int) -> list[pa.Table]:
    """`parts` contiguous slices of random sizes (some may be empty), in random order."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, table.num_rows + 1, parts - 1))
    edges = [0, *cuts.tolist(), table.num_rows]
    slices = [table.slice(start, stop - start) for start, stop in zip(edges, edges[1:])]
    return [slices[i] for i in rng.permutation(len(slices))]


def ray_engine():
    from opinion_metrics import ray as om_ray

    return om_ray


POISSON = {"confidence_level": 0.9, "n_resamples": 200, "random_state": 3}


def pooled_truth(corpus: pa.Table, family: str, columns: dict, options: dict) -> dict:
    """The pooled corpus (pool_by_group, rows in review_id order) in one state keyed by group."""
    from opinion_metrics import MetricState

    scores = corpus.column("scores").to_pylist() if "scores" in columns else None
    pooled = pool_by_group(
        *(corpus.column(name).to_pylist() for name in ("predictions", "references", "movie")), scores=scores
    )
    assert len(pooled.groups) == 7
    state = MetricState(family, **options)
    data = {"scores": pooled.scores} if scores is not None else {}
    state.update(predictions=pooled.predictions, references=pooled.references, keys=pooled.groups, **data)
    point = {name: value for name, value in options.items() if name not in ("bootstrap", *POISSON)}
    function = get_family(family).function
    if scores is None:
        expected = function(pooled.predictions, pooled.references, **point)
    else:
        expected = function(pooled.predictions, pooled.scores, pooled.references, **point)
    result = state.compute()
    assert_same({key: result[key] for key in expected}, expected)
    return result


GROUPED = [
    ("keyword_prf", {}, {"top_k": 3, "bootstrap": "poisson", **POISSON}),
    ("weighted_keyword_prf", {"scores": "scores"}, {"k": 4, "bootstrap": "poisson", **POISSON}),
]


def spark_engine():
    from opinion_metrics import spark as om_spark

    return om_spark


def spark_frame(spark, table: pa.Table, parts: int):
    """A frame of `table` in `parts` partitions, rows in a random order."""
    shuffled = table.take(np.random.default_rng(parts).permutation(table.num_rows))
    return spark.createDataFrame(shuffled).repartition(parts)


def by_truth(table: pa.Table, family: str, columns: dict, options: dict, by: str, key: str | None) -> list[dict]:
    """Each value's rows evaluated alone (a state keyed by `key`), one row per value, sorted."""
    from opinion_metrics import MetricState

    names = {"predictions": "predictions", "references": "references", **columns}
    rows = []
    for value in sorted(set(table.column(by).to_pylist())):
        part = table.filter(pa.compute.equal(table.column(by), value))
        state = MetricState(family, **options)
        given = {name: column for name, column in names.items() if column is not None}
        state.update(part, keys=key, **given)
        rows.append({by: value, **state.compute()})
    return rows


def assert_rows(actual: list[dict], expected: list[dict]) -> None:
    assert [row[next(iter(row))] for row in actual] == [row[next(iter(row))] for row in expected]
    for found, wanted in zip(actual, expected):
        by = next(iter(wanted))
        assert found[by] == wanted[by]
        assert_same({k: v for k, v in found.items() if k != by}, {k: v for k, v in wanted.items() if k != by})
