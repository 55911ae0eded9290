"""Ray Data against the family functions: random corpora split into random partitions give the
family function's value on the whole corpus (1e-12) for every family and several option
sets; Poisson intervals and paired p-values are identical across 1, 3 and 16 partitions and
equal the family function's `bootstrap="poisson"` (keys = positions); groups pooled as
pool_by_group pools them; the semantic path with a real model, in bfloat16, and on a fresh
cluster. One Ray session per module (a module-scoped fixture) bounds the time."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import local_ray_data
from engine_cases import (
    CASE_IDS,
    CASES,
    GROUPED,
    POISSON,
    assert_same,
    family_result,
    pooled_truth,
    random_corpus,
    random_slices,
    ray_engine,
    with_model,
)

from opinion_metrics import compare_systems

pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def ray_data():
    yield from local_ray_data()


@pytest.fixture(scope="module")
def corpus() -> pa.Table:
    return random_corpus(300, seed=7)


@pytest.mark.slow
@pytest.mark.parametrize(("family", "columns", "options"), CASES, ids=CASE_IDS)
def test_ray_equals_the_family_function(ray_data, corpus, family, columns, options):
    options = with_model(family, options)
    dataset = ray_data.from_arrow(random_slices(corpus, 5, seed=len(options)))
    result = ray_engine().evaluate(dataset, family, **columns, **options)
    assert_same(result, family_result(corpus, family, columns, options))


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
import json, os, sys
sys.path.insert(0, os.path.dirname({tests!r}))  # tests/, which holds engine_cases
import ray
from engine_cases import family_result, hash_encoder
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
