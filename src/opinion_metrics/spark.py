"""Evaluate a Spark DataFrame: one `MetricState` per partition (`mapInArrow`), merged in a tree on the executors.

    from opinion_metrics import spark as om_spark

    frame = spark.read.parquet("hdfs:///predictions/")
    om_spark.evaluate(frame, "keyword_prf", predictions="keywords", references="gold", key="review_id",
                      confidence_level=0.95, bootstrap="poisson")

Each partition becomes one serialized state in a binary column; the states are merged on
the executors in a tree of fixed shape (`FANOUT` states of consecutive partitions per node,
in partition order), so the driver receives a few and every run sums in the same order.
The semantic family
embeds the distinct normalized keywords first (a distinct over the keywords, then one
model per partition of that vocabulary), then computes the statistics with those
embeddings, broadcast to the executors.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from math import ceil
from operator import itemgetter
from typing import Any

from .engine_support import (
    EMBEDDING_FAMILIES,
    STATE_COLUMN,
    check_request,
    distinct_keywords,
    embed_keywords,
    merge_options,
    merge_serialized,
    merged_bytes,
    model_name,
    pool_table,
    pooled_schema,
)
from .state import MetricState


def evaluate(dataframe: Any, family: str, **arguments: Any) -> dict[str, Any]:
    """Evaluate `family` on a `pyspark.sql.DataFrame`: `state(dataframe, family, **arguments).compute()`,
    the same dict as the family function on all rows (to floating-point summation order)."""
    return state(dataframe, family, **arguments).compute()


def state(
    dataframe: Any,
    family: str,
    *,
    predictions: str = "predictions",
    references: str | None = "references",
    key: str | None = None,
    texts: str | None = None,
    scores: str | None = None,
    prediction_sentiments: str | None = None,
    groups: str | None = None,
    partitions: int | None = None,
    **options: Any,
) -> MetricState:
    """The merged `MetricState` of `family` over a Spark DataFrame. The arguments are those
    of `opinion_metrics.ray.state` (`partitions` repartitions the frame first); `groups`
    pools through `groupBy(groups).applyInArrow`."""
    columns = {"predictions": predictions, "references": references, "texts": texts, "scores": scores}
    columns["prediction_sentiments"] = prediction_sentiments
    if references == "references" and family == "keyword_diversity":
        columns["references"] = None
    given = check_request(family, columns, key, groups, options)
    given.pop("key", None)
    given.pop("groups", None)
    if partitions is not None:
        dataframe = dataframe.repartition(partitions)
    if groups is not None:
        from pyspark.sql.pandas.types import from_arrow_schema

        schema = from_arrow_schema(pooled_schema(_arrow_schema(dataframe), given, groups))
        dataframe = dataframe.groupBy(groups).applyInArrow(
            lambda table: pool_table(table, given, groups, key, options), schema
        )
        key = groups
    state_options = options
    if family in EMBEDDING_FAMILIES:
        state_options = {**options, "model": _embeddings(dataframe, given, options)}
    columns_needed = sorted({*given.values(), *([key] if key else [])})
    dataframe = dataframe.select(*columns_needed)

    def states(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        state = MetricState(family, **_resolved(state_options))
        for batch in batches:  # one Arrow batch in memory at a time
            state.update_arrow(batch, key=key, **given)
        yield pa.RecordBatch.from_pydict({STATE_COLUMN: pa.array([state.to_bytes()], pa.binary())})

    serialized = dataframe.mapInArrow(states, f"{STATE_COLUMN} binary").rdd.mapPartitionsWithIndex(
        lambda index, rows: (((index, position), bytes(row[STATE_COLUMN])) for position, row in enumerate(rows))
    )
    return merge_serialized(
        family, options, merged_tree(serialized, partial(merged_bytes, family, merge_options(family, options)))
    )


# States of consecutive partitions merged per node of the merge tree.
FANOUT = 16


def merged_tree(numbered: Any, merge: Any) -> list[bytes]:
    """`merge` (numbered states -> one state's bytes) applied over an RDD of (number, state
    bytes) in a tree of fixed shape: every partition computed at once, each level merging
    `FANOUT` consecutive states on the executors; the last level's states (at most `FANOUT`)
    in order, for the driver to merge."""
    count, fanout = numbered.getNumPartitions(), FANOUT
    while count > fanout:
        count = ceil(count / fanout)
        numbered = (
            numbered.map(lambda item: (item[0][0] // fanout, item))
            .groupByKey(count)
            .map(lambda group: ((group[0], 0), merge(group[1])))
        )
    return [data for _, data in sorted(numbered.collect(), key=itemgetter(0))]


def _arrow_schema(dataframe: Any) -> Any:
    return _arrow_schema_of(dataframe.schema)


def _arrow_schema_of(schema: Any) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


class _Broadcast:
    """A Spark broadcast of the embedding lookup, resolved on the executor."""

    def __init__(self, broadcast: Any) -> None:
        self.broadcast = broadcast


def _resolved(options: dict[str, Any]) -> dict[str, Any]:
    model = options.get("model")
    return {**options, "model": model.broadcast.value} if isinstance(model, _Broadcast) else options


def _embeddings(dataframe: Any, columns: dict[str, str], options: dict[str, Any]) -> _Broadcast:
    """Embed the distinct normalized keywords once; the lookup is broadcast to the executors."""
    from .semantic import DEFAULT_MODEL

    model, device, batch_size = (
        options.get("model", DEFAULT_MODEL),
        options.get("device"),
        options.get("batch_size", 256),
    )
    source = dataframe.select(*[columns[name] for name in ("predictions", "references") if name in columns])

    def keywords(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            yield from distinct_keywords(batch, columns, options).to_batches()

    def vectors(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            embedded = embed_keywords(batch, model, device, batch_size)
            vector = embedded.column("vector").cast(pa.list_(pa.float32()))
            yield from embedded.set_column(1, "vector", vector).to_batches()

    vocabulary = source.mapInArrow(keywords, "keyword string").distinct()
    embedded = vocabulary.mapInArrow(vectors, "keyword string, vector array<float>")
    from .semantic import PrecomputedEncoder

    vectors = {row["keyword"]: _vector(row["vector"]) for row in embedded.collect()}  # every partition at once
    lookup = PrecomputedEncoder(vectors, name=model_name(model))
    return _Broadcast(dataframe.sparkSession.sparkContext.broadcast(lookup))


def _vector(values: list[float]) -> Any:
    import numpy as np

    return np.asarray(values, dtype=np.float32)
