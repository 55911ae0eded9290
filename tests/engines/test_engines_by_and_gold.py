"""One pass for many systems (by=) and a gold table joined by key, on Ray and Spark: every
value's rows evaluated alone, each row's gold list joined in, groups pooled within each
value; grouped intervals agree across the CLI, Ray and Spark."""

from __future__ import annotations

import json

import pytest
from conftest import local_ray_data, local_spark
from engine_cases import (
    GROUPED,
    PHRASES,
    POISSON,
    assert_rows,
    assert_same,
    by_truth,
    family_result,
    random_corpus,
    random_slices,
    ray_engine,
    spark_engine,
    spark_frame,
    with_model,
)

from opinion_metrics import pool_by_group

pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def ray_data():
    yield from local_ray_data()


@pytest.fixture(scope="module")
def spark():
    yield from local_spark("local[2]", "opinion-metrics tests", "ERROR")


@pytest.fixture(scope="module")
def corpus() -> pa.Table:
    return random_corpus(300, seed=7)


BY_CASES = [
    ("keyword_prf", {}, {"top_k": 3, "bootstrap": "poisson", **POISSON}),
    ("weighted_keyword_prf", {"scores": "scores"}, {}),
    ("semantic_keyword_prf", {}, {"threshold": 0.6, "bootstrap": "poisson", **POISSON}),
    ("sentiment_appropriateness", {"texts": "texts"}, {}),
]


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
