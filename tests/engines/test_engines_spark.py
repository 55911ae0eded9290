"""Spark against the family functions: random corpora in random partitions give the family
function's value (1e-12) for every family and several option sets; the merge tree sums in
one order; Poisson intervals and paired p-values are identical across 1, 3 and 16
partitions; groups pooled as pool_by_group pools them; semantic vectors joined, not
gathered. One Spark session per module (a module-scoped fixture) bounds the time."""

from __future__ import annotations

import pytest
from conftest import local_spark
from engine_cases import (
    CASE_IDS,
    CASES,
    GROUPED,
    POISSON,
    assert_rows,
    assert_same,
    by_truth,
    family_result,
    pooled_truth,
    random_corpus,
    spark_engine,
    spark_frame,
    with_model,
)

from opinion_metrics import compare_systems

pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def spark():
    yield from local_spark("local[2]", "opinion-metrics tests", "ERROR")


@pytest.fixture(scope="module")
def corpus() -> pa.Table:
    return random_corpus(300, seed=7)


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
