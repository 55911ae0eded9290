"""Ray Data, Spark, Dask and the CLI's --workers against the family functions.

Random corpora split into random partitions: every engine's value equals the family
function's on the whole corpus (1e-12) for every family and several option sets; Poisson
intervals and paired p-values are identical across 1, 3 and 16 partitions and equal the
family function's `bootstrap="poisson"` (keys = positions). One Ray and one Spark session
per module (module-scoped fixtures) bound the time.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import local_ray_data, local_spark

from opinion_metrics import compare_systems, pool_by_group
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


# --- Ray ---


@pytest.fixture(scope="module")
def ray_data():
    yield from local_ray_data()


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


@pytest.mark.slow
def test_ray_semantic_in_bfloat16_decides_as_float32(ray_data, corpus):
    """In bfloat16, the workers recompute the pairs near the threshold from float32 embeddings
    (the model actor embeds in bfloat16): at a threshold between one pair's bfloat16 and
    float32 cosines, the decisions are float32's, as the function's are; the soft values are
    bfloat16's (which vary with the batches by about 1e-5)."""
    pytest.importorskip("sentence_transformers")
    from opinion_metrics.core.normalization import make_normalizer
    from opinion_metrics.embeddings.encoder import KeywordEncoder, PrecomputedEncoder

    small = corpus.slice(0, 60)
    normalize = make_normalizer("default")
    pairs = sorted(
        {
            (normalize(p), normalize(g))
            for predicted, gold in zip(small.column("predictions").to_pylist(), small.column("references").to_pylist())
            for p in predicted or ()
            for g in gold or ()
            if normalize(p) and normalize(g) and normalize(p) != normalize(g)
        }
    )
    cosines = {}
    for precision in ("float32", "bfloat16"):
        encoder = KeywordEncoder(device="cpu", precision=precision)
        first, second = (encoder.encode([pair[i] for pair in pairs]) for i in (0, 1))
        cosines[precision] = np.einsum("ij,ij->i", first, second)
    # bfloat16's vectors compared as they are (an encoder of given vectors: nothing recomputed)
    keywords = sorted({keyword for pair in pairs for keyword in pair})
    as_they_are = PrecomputedEncoder(
        dict(zip(keywords, KeywordEncoder(device="cpu", precision="bfloat16").encode(keywords))), name="bfloat16"
    )
    for moved in np.argsort(-np.abs(cosines["float32"] - cosines["bfloat16"]))[:50].tolist():
        threshold = float(cosines["float32"][moved] + cosines["bfloat16"][moved]) / 2
        options = {"device": "cpu", "threshold": threshold}
        full = family_result(small, "semantic_keyword_prf", {}, options)
        naive = family_result(small, "semantic_keyword_prf", {}, {**options, "model": as_they_are})
        if (naive["semantic_precision"], naive["semantic_recall"]) != (
            full["semantic_precision"],
            full["semantic_recall"],
        ):
            break  # a threshold where bfloat16's cosines as they are change a decision
    else:
        pytest.fail("no threshold where bfloat16 changes a decision")
    dataset = ray_data.from_arrow(random_slices(small, 3, seed=0))
    result = ray_engine().evaluate(dataset, "semantic_keyword_prf", precision="bfloat16", model_workers=1, **options)
    half = family_result(small, "semantic_keyword_prf", {}, {**options, "precision": "bfloat16"})
    assert result.keys() == full.keys()
    for key in ("semantic_precision", "semantic_recall", "semantic_f1"):
        assert result[key] == pytest.approx(full[key], abs=1e-12) == half[key], key
    for key in ("soft_precision", "soft_recall", "soft_f1"):
        assert result[key] == pytest.approx(half[key], abs=2e-4), key


FRESH_CLUSTER = """
import json, sys
sys.path.insert(0, {tests!r})
import ray
from test_engines import family_result, hash_encoder
import pyarrow.parquet as pq
from opinion_metrics import ray as om_ray

options = {options!r}
if "model" not in options:
    options["model"] = hash_encoder()
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
try:
    ray.data.DataContext.get_current().enable_progress_bars = False
    dataset = ray.data.read_parquet({folder!r})
    result = om_ray.evaluate(dataset, "semantic_keyword_prf", **options)
finally:
    ray.shutdown()
table = pq.read_table({folder!r})
print(json.dumps({{"result": result, "expected": family_result(table, "semantic_keyword_prf", {{}}, options)}}))
"""


@pytest.mark.slow
def test_ray_semantic_path_finishes_on_read_parquet_in_a_fresh_cluster(corpus, tmp_path):
    """On a fresh `ray.init(num_cpus=2)`, a statistics actor pool took every CPU and
    `read_parquet`'s tasks never got one (it hung for minutes); the statistics now run as
    tasks fused with the reading, and the model actors leave a CPU free. Run in a process of
    its own with a time limit (a hang fails the test instead of stalling CI)."""
    import signal
    import subprocess

    pq = pytest.importorskip("pyarrow.parquet")
    pytest.importorskip("ray")
    folder = tmp_path / "folder"
    folder.mkdir()
    for part, piece in enumerate(random_slices(corpus.select(["predictions", "references"]), 6, seed=4)):
        pq.write_table(piece, folder / f"part-{part}.parquet")
    semantic = importlib.util.find_spec("sentence_transformers") is not None
    options = {"device": "cpu"} if semantic else {}  # the packaged model when installed
    script = tmp_path / "fresh_cluster.py"
    tests = str(Path(__file__).parent)
    script.write_text(FRESH_CLUSTER.format(tests=tests, options=options, folder=str(folder)))
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([*sys.path])}
    process = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, env=environment,
    )  # fmt: skip
    try:
        output, errors = process.communicate(timeout=420)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the driver and the cluster it started
        process.communicate()
        pytest.fail("the semantic path on read_parquet did not finish in 7 minutes (a hang)")
    assert process.returncode == 0, errors[-3000:]
    found = json.loads(output.splitlines()[-1])
    assert_same(found["result"], found["expected"], tolerance=1e-5 if semantic else 1e-12)


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
    yield from local_spark("local[2]", "opinion-metrics tests", "ERROR")


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


# --- Dask: the recipe of docs/scaling.md ---


def file_states(path, options: dict) -> dict:
    """The recipe's task: one state per model of one Parquet file, a batch at a time; only
    the states' bytes leave the worker (never rows)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from opinion_metrics import MetricState

    states = {}
    with pq.ParquetFile(path) as file:
        for batch in file.iter_batches(batch_size=50, columns=["review_id", "model", "predictions", "references"]):
            for model in pc.unique(batch.column("model")).to_pylist():
                rows = batch.filter(pc.equal(batch.column("model"), model))
                state = states.setdefault(model, MetricState("keyword_prf", **options))
                state.update(rows, predictions="predictions", references="references", keys="review_id")
    return {model: state.to_bytes() for model, state in states.items()}


@pytest.mark.slow
def test_dask_recipe(corpus, tmp_path):
    """The documented recipe: a task per file (the processes scheduler: only states travel
    through the client), one state per model, merged per model on the client; equal to each
    model's rows evaluated alone."""
    dask = pytest.importorskip("dask")
    import pyarrow.parquet as pq

    from opinion_metrics import MetricState

    table = corpus.append_column("model", pa.array(["a" if i % 3 else "b" for i in range(corpus.num_rows)]))
    for part, piece in enumerate(random_slices(table, 4, seed=5)):
        pq.write_table(piece, tmp_path / f"part-{part}.parquet")
    options = {"average": "micro", "bootstrap": "poisson", **POISSON}
    files = sorted(tmp_path.glob("*.parquet"))
    parts = dask.compute(*[dask.delayed(file_states)(path, options) for path in files], scheduler="processes")
    merged: dict = {}
    for part in parts:
        for model, data in part.items():
            state = MetricState.from_bytes(data)
            merged[model] = merged[model].merge(state) if model in merged else state
    results = [{"model": model, **state.compute()} for model, state in sorted(merged.items())]
    assert_rows(results, by_truth(table, "keyword_prf", {}, options, "model", "review_id"))


# --- One pass for many systems (by=), a gold table joined by key, only the columns needed ---


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


BY_CASES = [
    ("keyword_prf", {}, {"top_k": 3, "bootstrap": "poisson", **POISSON}),
    ("weighted_keyword_prf", {"scores": "scores"}, {}),
    ("semantic_keyword_prf", {}, {"threshold": 0.6, "bootstrap": "poisson", **POISSON}),
    ("sentiment_appropriateness", {"texts": "texts"}, {}),
]


def assert_rows(actual: list[dict], expected: list[dict]) -> None:
    assert [row[next(iter(row))] for row in actual] == [row[next(iter(row))] for row in expected]
    for found, wanted in zip(actual, expected):
        by = next(iter(wanted))
        assert found[by] == wanted[by]
        assert_same({k: v for k, v in found.items() if k != by}, {k: v for k, v in wanted.items() if k != by})


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), BY_CASES, ids=str)
def test_ray_by_gives_every_value_in_one_pass(ray_data, corpus, family, columns, options):
    options = with_model(family, options)
    dataset = ray_data.from_arrow(random_slices(corpus, 5, seed=9))
    key = "review_id" if options.get("bootstrap") == "poisson" else None
    result = ray_engine().evaluate(dataset, family, by="movie", key=key, **columns, **options)
    assert_rows(result, by_truth(corpus, family, columns, options, "movie", key))


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), BY_CASES[:3], ids=str)
def test_spark_by_gives_every_value_in_one_pass(spark, corpus, family, columns, options):
    options = with_model(family, options)
    key = "review_id" if options.get("bootstrap") == "poisson" else None
    result = spark_engine().evaluate(spark_frame(spark, corpus, 3), family, by="movie", key=key, **columns, **options)
    assert_rows(result, by_truth(corpus, family, columns, options, "movie", key))


def gold_corpus(corpus: pa.Table) -> tuple[pa.Table, dict]:
    """The corpus without its gold column and a gold list per movie, and the corpus with
    each row's movie's list (the truth)."""
    movies = sorted(set(corpus.column("movie").to_pylist()))
    gold = {movie: PHRASES[i : i + 3 + i % 4] for i, movie in enumerate(movies)}
    joined = corpus.set_column(
        corpus.column_names.index("references"), "references",
        pa.array([gold[movie] for movie in corpus.column("movie").to_pylist()], pa.list_(pa.string())),
    )  # fmt: skip
    return joined, gold


@pytest.mark.slow
@pytest.mark.parametrize("family", ["keyword_prf", "semantic_keyword_prf"])
def test_ray_joins_a_gold_table_by_key(ray_data, corpus, family, tmp_path):
    joined, gold = gold_corpus(corpus)
    rows = joined.drop_columns(["references"])
    options = with_model(family, {})
    expected = family_result(joined, family, {}, options)
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps({"movie": movie, "keywords": list(k)}) + "\n" for movie, k in gold.items()))
    tables = [gold, pa.table({"movie": list(gold), "keywords": list(gold.values())}), path]
    for table in tables if family == "keyword_prf" else tables[:1]:
        dataset = ray_data.from_arrow(random_slices(rows, 4, seed=3))
        column = "keywords" if not isinstance(table, dict) else "references"
        result = ray_engine().evaluate(
            dataset, family, references=table, gold_key="movie", gold_column=column, **options
        )
        assert_same(result, expected)


@pytest.mark.slow
def test_spark_joins_a_gold_table_by_key(spark, corpus):
    joined, gold = gold_corpus(corpus)
    frame = spark_frame(spark, joined.drop_columns(["references"]), 3)
    for family in ("keyword_prf", "semantic_keyword_prf"):
        options = with_model(family, {})
        result = spark_engine().evaluate(frame, family, references=gold, gold_key="movie", **options)
        assert_same(result, family_result(joined, family, {}, options))


@pytest.mark.slow
def test_pooled_groups_by_value_with_a_gold_table(ray_data, spark, corpus):
    """groups= within each value of by=, the references joined from a gold table: each
    (value, group) pooled alone, keyed by the group."""
    from opinion_metrics import MetricState

    joined, gold = gold_corpus(corpus)
    table = joined.append_column("model", pa.array(["a" if i % 3 else "b" for i in range(joined.num_rows)]))
    options = {"top_k": 3, "bootstrap": "poisson", **POISSON}
    expected = []
    for model in ("a", "b"):
        part = table.filter(pa.compute.equal(table.column("model"), model))
        columns = [part.column(name).to_pylist() for name in ("predictions", "references", "movie")]
        pooled = pool_by_group(*columns)
        state = MetricState("keyword_prf", **options)
        state.update(predictions=pooled.predictions, references=pooled.references, keys=pooled.groups)
        expected.append({"model": model, **state.compute()})
    rows = table.drop_columns(["references"])
    arguments = {"references": gold, "gold_key": "movie", "by": "model", "groups": "movie", "key": "review_id"}
    found = ray_engine().evaluate(
        ray_data.from_arrow(random_slices(rows, 4, seed=1)), "keyword_prf", **arguments, **options
    )
    assert_rows(found, expected)
    found = spark_engine().evaluate(spark_frame(spark, rows, 3), "keyword_prf", **arguments, **options)
    assert_rows(found, expected)


@pytest.mark.slow
def test_spark_semantic_vectors_joined_not_gathered(spark, corpus):
    """Past broadcast_limit (0 here) the vectors are cogrouped with each bucket's rows, never
    collected: the same values as broadcasting them (and as the family function)."""
    options = with_model("semantic_keyword_prf", {"threshold": 0.6, "bootstrap": "poisson", **POISSON})
    frame = spark_frame(spark, corpus, 3)
    expected = family_result(corpus, "semantic_keyword_prf", {}, options)
    for limit in (0, 2**40):
        assert_same(spark_engine().evaluate(frame, "semantic_keyword_prf", key="review_id", broadcast_limit=limit,
                                            **options), expected)  # fmt: skip
    found = spark_engine().evaluate(
        frame, "semantic_keyword_prf", by="movie", broadcast_limit=0, **with_model("semantic_keyword_prf", {})
    )
    assert_rows(
        found, by_truth(corpus, "semantic_keyword_prf", {}, with_model("semantic_keyword_prf", {}), "movie", None)
    )


class _Projection(Exception):
    pass


class _Recorder:
    """A stand-in dataset: records the columns selected, then stops the evaluation."""

    def __init__(self) -> None:
        self.selected = None

    def select_columns(self, names):  # Ray Data
        self.selected = list(names)
        raise _Projection

    def select(self, *names):  # Spark
        self.selected = list(names)
        raise _Projection


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_only_the_needed_columns_are_read(engine):
    """The first thing each engine does is select the columns the family reads (pushed down
    into the reading), before any shuffle for partitions= or groups=."""
    pytest.importorskip("pyarrow")
    module = ray_engine() if engine == "ray" else spark_engine()
    cases = [
        ({"predictions": "keywords", "references": "gold"}, ["keywords", "gold"]),
        ({"predictions": "keywords", "scores": "s", "key": "id", "by": "model", "groups": "movie",
          "references": {"m": ["a"]}, "gold_key": "movie"}, ["keywords", "s", "id", "model", "movie"]),
    ]  # fmt: skip
    for family, (arguments, expected) in zip(["keyword_prf", "weighted_keyword_prf"], cases):
        recorder = _Recorder()
        with pytest.raises(_Projection):
            module.evaluate(recorder, family, partitions=8, **arguments)
        assert recorder.selected == expected


def test_sentiment_runs_one_vader_per_engine_worker_with_a_process_cache(monkeypatch):
    """Engines run VADER in their own worker (no processes forked inside it); each process
    keeps one cache of VADER's scores, so a review is scored once, not once per block."""
    from opinion_metrics.engines.support import check_request
    from opinion_metrics.families import sentiment_appropriateness as sentiment

    request = check_request("sentiment_appropriateness", {"predictions": "p", "texts": "t"}, None, None, {})
    assert request.options["workers"] == 1
    texts = ["a wonderful film.", "a terrible plot."]
    first = sentiment.sentiment_appropriateness([["great"], ["boring"]], texts=texts, workers=1)

    def unavailable(*_):
        raise AssertionError("VADER ran again on strings this process has scored")

    monkeypatch.setattr(sentiment, "vader_sentiment", lambda mapping: unavailable)
    again = sentiment.sentiment_appropriateness([["boring"], ["great"]], texts=texts[::-1], workers=1)
    assert again["sas_from_text"] == first["sas_from_text"]


def test_model_actors_leave_a_cpu_for_reading():
    """The embedding stage: one actor per GPU where the cluster has GPUs; else CPU actors
    sharing every CPU but one (for their torch threads), never all of them."""
    pytest.importorskip("pyarrow")
    from opinion_metrics.ray import model_actors

    assert model_actors({"CPU": 2.0}, None, None) == (1, 0, 1)
    assert model_actors({"CPU": 16.0}, None, None) == (1, 0, 15)
    assert model_actors({"CPU": 16.0}, 4, None) == (4, 0, 3)
    assert model_actors({"CPU": 2.0}, 3, None) == (1, 0, 1)
    assert model_actors({"CPU": 1.0}, None, None) == (1, 0, 0)
    assert model_actors({"CPU": 16.0, "GPU": 4.0}, None, None) == (4, 1, 1)
    assert model_actors({"CPU": 16.0, "GPU": 4.0}, None, 0.5) == (8, 0.5, 1)
    assert model_actors({"CPU": 16.0, "GPU": 4.0}, 2, None) == (2, 1, 1)


def test_a_keyword_the_vocabulary_pass_missed_is_embedded_where_it_is_met():
    """A dataset whose rows differ between the two passes (`limit`, sampling) gives the
    statistics keywords the vocabulary never saw: they are embedded there, by the model."""
    from opinion_metrics.engines.vectors import VectorLookup, embed_keywords, vector_table

    encoder = hash_encoder()
    keywords = ["jedi", "dark side", "the force", "droid", "wookiee"]
    known = embed_keywords(pa.table({"keyword": keywords[:2]}), encoder, "cpu", 8)
    every = embed_keywords(pa.table({"keyword": keywords}), encoder, "cpu", 8)
    lookup = VectorLookup(vector_table([known]), "toy", fallback=(encoder, "cpu", 8))
    order = ["droid", "jedi", "wookiee", "droid", "dark side", "the force"]
    expected = np.stack([every.column("vector")[keywords.index(word)].values.to_numpy() for word in order])
    assert np.array_equal(lookup.encode(order), expected)
    with pytest.raises(ValueError, match="no precomputed embedding for the keyword 'droid'"):
        VectorLookup(vector_table([known]), "toy").encode(["jedi", "droid"])


@pytest.mark.slow
def test_grouped_intervals_agree_across_surfaces(ray_data, spark, corpus, tmp_path):
    """--group on the command line and groups= on Ray and Spark: the same pooled examples,
    each keyed by its group value, so the same Poisson intervals (1e-12)."""
    from opinion_metrics import cli

    rows = corpus.select(["review_id", "predictions", "references", "scores", "movie"])
    lines = tmp_path / "rows.jsonl"
    lines.write_text("".join(json.dumps(row) + "\n" for row in rows.to_pylist()))  # review_id order: pooled alike
    for family, columns, options in GROUPED:
        flags = ["--ci", "0.9", "--n-resamples", "200", "--random-state", "3", "--bootstrap", "poisson"]
        flags += ["--top-k", "3"] if "top_k" in options else ["--k", "4", "--scores", "scores", "--clip-scores"]
        output = tmp_path / f"{family}.json"
        assert (
            cli.main([str(lines), "--group", "movie", "--metrics", family, *flags, "--quiet", "--output", str(output)])
            == 0
        )
        found = json.loads(output.read_text())["all"][family]
        arguments = {"key": "review_id", "groups": "movie", **columns, **options}
        if family == "weighted_keyword_prf":
            arguments["clip_scores"] = True
        assert_same(
            ray_engine().evaluate(ray_data.from_arrow(random_slices(rows, 4, seed=6)), family, **arguments), found
        )
        assert_same(spark_engine().evaluate(spark_frame(spark, rows, 3), family, **arguments), found)
