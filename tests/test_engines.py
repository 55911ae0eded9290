"""Ray Data, Spark, Dask and the CLI's --workers against the family functions.

Random corpora split into random partitions: every engine's value equals the family
function's on the whole corpus (1e-12) for every family and several option sets; Poisson
intervals and paired p-values are identical across 1, 3 and 16 partitions and equal the
family function's `bootstrap="poisson"` (keys = positions). One Ray and one Spark session
per module (module-scoped fixtures) bound the time.
"""

from __future__ import annotations

import math
import os
import shutil
import sys

import numpy as np
import pytest

from opinion_metrics import compare_systems, pool_by_group
from opinion_metrics.families import get_family

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


# --- Ray ---


@pytest.fixture(scope="module")
def ray_data():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray.data
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus() -> pa.Table:
    return random_corpus(300, seed=7)


def ray_engine():
    from opinion_metrics import ray as om_ray

    return om_ray


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), CASES, ids=CASE_IDS)
def test_ray_equals_the_family_function(ray_data, corpus, family, columns, options):
    options = with_model(family, options)
    dataset = ray_data.from_arrow(random_slices(corpus, 5, seed=len(options)))
    result = ray_engine().evaluate(dataset, family, **columns, **options)
    assert_same(result, family_result(corpus, family, columns, options))


POISSON = {"confidence_level": 0.9, "n_resamples": 200, "random_state": 3}


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), [CASES[0], CASES[3], CASES[5], CASES[9]], ids=str)
def test_ray_poisson_intervals_do_not_depend_on_partitions(ray_data, corpus, family, columns, options):
    options = with_model(family, {**options, **POISSON})
    truth = family_result(corpus, family, columns, {**options, "bootstrap": "poisson"})
    assert any(key.endswith("_ci_low") for key in truth)
    for parts in (1, 3, 16):
        dataset = ray_data.from_arrow(random_slices(corpus, parts, seed=parts))
        result = ray_engine().evaluate(dataset, family, key="review_id", bootstrap="poisson", **columns, **options)
        assert_same(result, truth)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_ray_paired_p_values_do_not_depend_on_partitions(ray_data, corpus, method):
    """Two systems' states (the second system: predictions reversed), compared."""
    reversed_predictions = pa.array([p[::-1] for p in corpus.column("predictions").to_pylist()])
    table = corpus.append_column("reversed", reversed_predictions)
    options = {"bootstrap": "poisson", "average": "micro", "top_k": 2, **POISSON}
    comparisons = []
    for parts in (1, 3, 16):
        states = [
            ray_engine().state(
                ray_data.from_arrow(random_slices(table, parts, seed=parts + i)),
                "keyword_prf",
                predictions=column,
                key="review_id",
                **options,
            )
            for i, column in enumerate(("predictions", "reversed"))
        ]
        level = options["confidence_level"]
        comparisons.append(compare_systems("keyword_prf", *states, method=method, confidence_level=level))
    truth = compare_systems(
        "keyword_prf",
        corpus.column("predictions").to_pylist(),
        reversed_predictions.to_pylist(),
        corpus.column("references").to_pylist(),
        method=method,
        **options,
    )
    for comparison in comparisons:
        assert comparison.keys() == truth.keys()
        for key in truth:
            assert_same(comparison[key], truth[key])
    assert 0 < truth["precision"]["p_value"] <= 1


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


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), GROUPED, ids=str)
def test_ray_pools_groups_like_pool_by_group(ray_data, corpus, family, columns, options):
    """groups= pools each movie's rows (in review_id order) into one example keyed by the movie."""
    shuffled = corpus.take(np.random.default_rng(1).permutation(corpus.num_rows))
    dataset = ray_data.from_arrow(random_slices(shuffled, 4, seed=2))
    result = ray_engine().evaluate(dataset, family, key="review_id", groups="movie", partitions=3, **columns, **options)
    assert_same(result, pooled_truth(corpus, family, columns, options))


@pytest.mark.slow
def test_ray_semantic_with_the_packaged_minilm(ray_data, corpus):
    """The two-stage pipeline with a real model on CPU: distinct keywords embedded once by
    a model actor, then the statistics; equal to the function up to float32 batching."""
    pytest.importorskip("sentence_transformers")
    small = corpus.slice(0, 60)
    dataset = ray_data.from_arrow(random_slices(small, 3, seed=0))
    result = ray_engine().evaluate(dataset, "semantic_keyword_prf", device="cpu", model_workers=1)
    assert_same(result, family_result(small, "semantic_keyword_prf", {}, {"device": "cpu"}), tolerance=1e-5)


def test_engines_refuse_what_they_cannot_do_exactly():
    """Checked before the dataset is touched (no engine needed)."""
    from opinion_metrics import ray as om_ray
    from opinion_metrics import spark as om_spark

    for evaluate in (om_ray.evaluate, om_spark.evaluate):
        with pytest.raises(ValueError, match="key="):
            evaluate(None, "keyword_prf", confidence_level=0.95, bootstrap="poisson")
        with pytest.raises(ValueError, match="bootstrap='poisson'"):
            evaluate(None, "keyword_prf", key="review_id", confidence_level=0.95)
        with pytest.raises(ValueError, match="keyword_prf takes no scores"):
            evaluate(None, "keyword_prf", scores="scores")
        with pytest.raises(ValueError, match="has no option 'averge'"):
            evaluate(None, "keyword_prf", averge="micro")
        with pytest.raises(ValueError, match="cannot be pooled"):
            evaluate(None, "aspect_sentiment_score", groups="movie")
        with pytest.raises(ValueError, match="must name a column"):
            evaluate(None, "keyword_prf", predictions=["a"])


# --- Spark ---


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if os.environ.get("CI"):
            pytest.fail("Spark needs Java in CI (.ci/run installs openjdk-17-jre-headless)")
        pytest.skip("Spark needs Java (install a Java 17 runtime)")
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("opinion-metrics tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def spark_engine():
    from opinion_metrics import spark as om_spark

    return om_spark


def spark_frame(spark, table: pa.Table, parts: int):
    """A frame of `table` in `parts` partitions, rows in a random order."""
    shuffled = table.take(np.random.default_rng(parts).permutation(table.num_rows))
    return spark.createDataFrame(shuffled).repartition(parts)


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), CASES, ids=CASE_IDS)
def test_spark_equals_the_family_function(spark, corpus, family, columns, options):
    options = with_model(family, options)
    result = spark_engine().evaluate(spark_frame(spark, corpus, 3), family, **columns, **options)
    assert_same(result, family_result(corpus, family, columns, options))


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), [CASES[3], CASES[5]], ids=str)
def test_spark_merge_tree_levels_sum_in_one_order(spark, corpus, family, columns, options, monkeypatch):
    """Merging two states at a time, 7 partitions take three levels of the tree (7 -> 4 -> 2,
    then the driver); the result equals the family function and is the same on every run."""
    monkeypatch.setattr(spark_engine(), "FANOUT", 2)
    options = {**with_model(family, options), **POISSON, "bootstrap": "poisson"}
    frame = spark_frame(spark, corpus, 7)
    runs = [spark_engine().evaluate(frame, family, key="review_id", **columns, **options) for _ in range(2)]
    assert_same(runs[0], family_result(corpus, family, columns, options))
    assert runs[0] == runs[1]


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), [CASES[2], CASES[4], CASES[7], CASES[11]], ids=str)
def test_spark_poisson_intervals_do_not_depend_on_partitions(spark, corpus, family, columns, options):
    options = {**options, **POISSON, "bootstrap": "poisson"}
    truth = family_result(corpus, family, columns, options)
    for parts in (1, 3, 16):
        frame = spark_frame(spark, corpus, parts)
        assert_same(spark_engine().evaluate(frame, family, key="review_id", **columns, **options), truth)


@pytest.mark.slow
def test_spark_paired_p_values_do_not_depend_on_partitions(spark, corpus):
    table = corpus.append_column("reversed", pa.array([p[::-1] for p in corpus.column("predictions").to_pylist()]))
    options = {"bootstrap": "poisson", "top_k": 2, **POISSON}
    comparisons = []
    for parts in (1, 3, 16):
        frame = spark_frame(spark, table, parts)
        states = [spark_engine().state(frame, "keyword_prf", predictions=column, key="review_id", **options)
                  for column in ("predictions", "reversed")]  # fmt: skip
        comparisons.append(compare_systems("keyword_prf", *states, confidence_level=options["confidence_level"]))
    columns = [table.column(name).to_pylist() for name in ("predictions", "reversed", "references")]
    truth = compare_systems("keyword_prf", *columns, **options)
    for comparison in comparisons:
        for key in truth:
            assert_same(comparison[key], truth[key])


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), GROUPED, ids=str)
def test_spark_pools_groups_like_pool_by_group(spark, corpus, family, columns, options):
    truth = pooled_truth(corpus, family, columns, options)
    for parts in (1, 5):
        frame = spark_frame(spark, corpus, parts)
        result = spark_engine().evaluate(frame, family, key="review_id", groups="movie", **columns, **options)
        assert_same(result, truth)


# --- Dask: the recipe of the README ---


@pytest.mark.slow
def test_dask_recipe(corpus, tmp_path):
    """The README's recipe: one serialized state per partition, merged on the client."""
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd
    import pyarrow.parquet as pq

    from opinion_metrics import MetricState

    for part, piece in enumerate(random_slices(corpus, 4, seed=5)):
        pq.write_table(piece.select(["review_id", "predictions", "references"]), tmp_path / f"part-{part}.parquet")
    options = {"average": "micro", "bootstrap": "poisson", **POISSON}

    def partition_state(partition: pd.DataFrame) -> pd.Series:
        state = MetricState("keyword_prf", **options)
        state.update(partition, predictions="predictions", references="references", keys="review_id")
        return pd.Series([state.to_bytes()])

    frame = dd.read_parquet(tmp_path, dtype_backend="pyarrow")
    states = frame.map_partitions(partition_state, meta=(None, "object")).compute()
    assert len(states) == frame.npartitions > 1
    result = sum(MetricState.from_bytes(data) for data in states).compute()
    assert_same(result, family_result(corpus, "keyword_prf", {}, options))
