"""Evaluate a Spark DataFrame: one `MetricState` per partition (`mapInArrow`), merged in a tree on the executors.

    from opinion_metrics import spark as om_spark

    frame = spark.read.parquet("hdfs:///predictions/")
    om_spark.evaluate(frame, "keyword_prf", predictions="keywords", references="gold", key="review_id",
                      confidence_level=0.95, bootstrap="poisson")

Only the columns the family reads are selected, before any shuffle. Each partition becomes
one serialized state per value of `by` in a binary column; the states are merged on the
executors in a tree of fixed shape (`FANOUT` states of consecutive partitions per node, in
partition order), so the driver receives a few and every run sums in the same order.
The semantic family embeds the distinct normalized keywords first (a distinct over the
keywords, then one model per partition of that vocabulary); the vectors never reach the
driver as Python rows: up to `broadcast_limit` bytes they are broadcast as one Arrow
buffer, beyond it each partition's rows are joined (cogrouped by a hash bucket) with the
vectors of their own keywords only, so the driver holds no vector at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from math import ceil
from operator import itemgetter
from typing import Any

from .engines.support import (
    EMBEDDING_FAMILIES,
    STATE_COLUMN,
    VALUE_COLUMN,
    Request,
    block_state_objects,
    check_request,
    merge_by_value,
    merged_bytes,
    pool_table,
    pooled_schema,
    results_by_value,
    serialized_states,
)
from .engines.vectors import ProcessVectorLookup, VectorLookup, distinct_keywords, embed_keywords, model_name
from .state.metric_state import MetricState

# Keyword vectors broadcast as one Arrow buffer up to this many bytes (MiniLM: 1.5 KiB per
# keyword, so 256 MiB holds about 170,000 keywords); beyond, joined to the rows' buckets.
BROADCAST_LIMIT = 256 * 2**20
_BUCKET = "__bucket__"


def evaluate(dataframe: Any, family: str, **arguments: Any) -> dict[str, Any] | list[dict[str, Any]]:
    """Evaluate `family` on a `pyspark.sql.DataFrame`: `state(dataframe, family, **arguments).compute()`,
    the same dict as the family function on all rows (to floating-point summation order).
    With `by`, one row per value: `[{by: value, **its result}, ...]` (sorted by value), for
    `spark.createDataFrame(rows)` or `pandas.DataFrame(rows)`."""
    found = state(dataframe, family, **arguments)
    if isinstance(found, dict):
        return results_by_value(found, arguments["by"])
    return found.compute()


def state(
    dataframe: Any,
    family: str,
    *,
    predictions: str = "predictions",
    references: Any = "references",
    key: str | None = None,
    texts: str | None = None,
    scores: str | None = None,
    prediction_sentiments: str | None = None,
    groups: str | None = None,
    by: str | None = None,
    gold_key: str | None = None,
    gold_column: str = "references",
    partitions: int | None = None,
    broadcast_limit: int = BROADCAST_LIMIT,
    **options: Any,
) -> MetricState | dict[Any, MetricState]:
    """The merged `MetricState` of `family` over a Spark DataFrame (with `by`, {value: its
    state}). The arguments are those of `opinion_metrics.ray.state` (`partitions`
    repartitions the selected columns first); `groups` pools through
    `groupBy(groups).applyInArrow`; `broadcast_limit`: the semantic family's vectors up to
    this many bytes are broadcast, beyond it joined to the rows (see the module doc)."""
    columns = {"predictions": predictions, "references": references, "texts": texts, "scores": scores}
    columns["prediction_sentiments"] = prediction_sentiments
    if isinstance(references, str) and references == "references" and family == "keyword_diversity":
        columns["references"] = None
    request = check_request(family, columns, key, groups, options, by, gold_key, gold_column)
    dataframe = dataframe.select(*request.needed)  # projected before the first stage (and any shuffle)
    value_type = dataframe.schema[by].dataType if by is not None else None
    if partitions is not None:
        dataframe = dataframe.repartition(partitions)
    if groups is not None:
        from pyspark.sql.pandas.types import from_arrow_schema

        schema = from_arrow_schema(pooled_schema(_arrow_schema(dataframe), request))
        keys = [groups] if by is None or by == groups else [by, groups]
        pooling = request  # Spark reads the function's signature: a plain lambda, not a partial
        dataframe = dataframe.groupBy(*keys).applyInArrow(lambda table: pool_table(table, pooling), schema)
        request = request.pooled()
    value_field = f"{VALUE_COLUMN} {value_type.simpleString() if value_type is not None else 'string'}"
    schema = f"{value_field}, {STATE_COLUMN} binary"
    embedded = None
    if family in EMBEDDING_FAMILIES:
        embedded = _embeddings(dataframe, request)
        size = _vectors_size(embedded)
        if size > broadcast_limit:
            states = _joined_states(dataframe, embedded, request, schema)
        else:
            request.model = _broadcast(dataframe, embedded, request)
            states = dataframe.mapInArrow(partial(_partition_states, request=request, value_type=value_type), schema)
    else:
        states = dataframe.mapInArrow(partial(_partition_states, request=request, value_type=value_type), schema)
    try:
        numbered = states.rdd.mapPartitionsWithIndex(
            lambda index, rows: (
                ((index, position), (row[VALUE_COLUMN], bytes(row[STATE_COLUMN]))) for position, row in enumerate(rows)
            )
        )
        merge = partial(merged_bytes, family, request.options)
        merged = merge_by_value(family, request.options, merged_tree(numbered, merge))
    finally:
        if embedded is not None:
            embedded.unpersist()
    if by is not None:
        return merged
    return merged[None] if None in merged else MetricState(family, **request.options)


def _partition_states(batches: Iterator[Any], request: Request, value_type: Any) -> Iterator[Any]:
    """One state per value of `by` for a whole partition, one Arrow batch in memory at a time."""
    from pyspark import TaskContext

    states: dict[Any, MetricState] = {}
    partition, offset = f"partition {TaskContext.get().partitionId()}", 0
    for batch in batches:
        for value, found in block_state_objects(batch, request, partition, offset).items():
            states[value] = found if value not in states else states[value].merge(found)
        offset += batch.num_rows
    yield from serialized_states(states, _value_arrow_type(value_type)).to_batches()


def _value_arrow_type(value_type: Any) -> Any:
    import pyarrow as pa

    if value_type is None:
        return pa.string()
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(value_type)


# States of consecutive partitions merged per node of the merge tree.
FANOUT = 16


def merged_tree(numbered: Any, merge: Any) -> list[tuple[Any, bytes]]:
    """`merge` (numbered (value, state bytes) pairs -> (value, state bytes) pairs, one per
    value) applied over an RDD of (number, (value, state bytes)) in a tree of fixed shape:
    every partition computed at once, each level merging `FANOUT` consecutive partitions'
    states on the executors; the last level's pairs in order, for the driver to merge."""
    count, fanout = numbered.getNumPartitions(), FANOUT
    while count > fanout:
        count = ceil(count / fanout)
        numbered = (
            numbered.map(lambda item: (item[0][0] // fanout, item))
            .groupByKey(count)
            .flatMap(lambda group: [((group[0], i), pair) for i, pair in enumerate(merge(group[1]))])
        )
    return [pair for _, pair in sorted(numbered.collect(), key=itemgetter(0))]


def _arrow_schema(dataframe: Any) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(dataframe.schema)


def _embeddings(dataframe: Any, request: Request) -> Any:
    """The (keyword, vector) DataFrame of the distinct normalized keywords, persisted (read
    twice: its size, then the statistics)."""
    from pyspark import StorageLevel

    from .embeddings.encoder import DEFAULT_MODEL

    options = request.options
    model, device, batch_size, precision = (
        options.get("model", DEFAULT_MODEL),
        options.get("device"),
        options.get("batch_size", 256),
        options.get("precision", "float32"),
    )

    def keywords(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            yield from distinct_keywords(batch, request).to_batches()

    def vectors(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            embedded = embed_keywords(batch, model, device, batch_size, precision)
            vector = embedded.column("vector").cast(pa.list_(pa.float32()))
            yield from embedded.set_column(1, "vector", vector).to_batches()

    vocabulary = dataframe.mapInArrow(keywords, "keyword string").distinct()
    embedded = vocabulary.mapInArrow(vectors, "keyword string, vector array<float>")
    return embedded.persist(StorageLevel.MEMORY_AND_DISK)


def _vectors_size(embedded: Any) -> int:
    """Bytes of the vectors as one Arrow buffer (float32 values plus the keywords' text)."""
    from pyspark.sql import functions as F

    row = embedded.select(
        F.count("*").alias("n"),
        F.sum(F.size("vector")).alias("values"),
        F.sum(F.length("keyword")).alias("text"),
    ).first()
    return 4 * int(row["values"] or 0) + int(row["text"] or 0) + 12 * int(row["n"] or 0)


class _BroadcastVectors(ProcessVectorLookup):
    """The keyword vectors broadcast as one Arrow IPC buffer; each executor process reads it
    once (in place)."""

    _lookups: dict[str, VectorLookup] = {}

    def __init__(self, broadcast: Any, name: str, fallback: tuple[Any, str | None, int, str]) -> None:
        import uuid

        super().__init__(name, fallback)
        self.broadcast, self.token = broadcast, uuid.uuid4().hex

    def _key(self) -> str:
        return self.token

    def _table(self) -> Any:
        import pyarrow as pa

        return _fixed_width(pa.ipc.open_stream(pa.py_buffer(self.broadcast.value)).read_all())


def _fixed_width(table: Any) -> Any:
    """(keyword, vector) with the vectors as fixed-size lists (what `VectorLookup` reads)."""
    import pyarrow as pa

    if not table.num_rows:
        return table.set_column(1, "vector", pa.array([], pa.list_(pa.float32(), 1)))
    width = len(table.column("vector")[0])
    return table.set_column(1, "vector", table.column("vector").cast(pa.list_(pa.float32(), width)))


def _broadcast(dataframe: Any, embedded: Any, request: Request) -> _BroadcastVectors:
    """The vectors as one Arrow buffer (collected as Arrow, never as Python rows), broadcast."""
    import pyarrow as pa

    from .embeddings.encoder import DEFAULT_MODEL

    table = embedded.toArrow()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    buffer = sink.getvalue().to_pybytes()
    del table
    broadcast = dataframe.sparkSession.sparkContext.broadcast(buffer)
    model = request.options.get("model", DEFAULT_MODEL)
    return _BroadcastVectors(broadcast, model_name(model), _fallback(request))


def _fallback(request: Request) -> tuple[Any, str | None, int, str]:
    """How a keyword the vocabulary pass missed is embedded where it is met (a frame whose rows
    differ between two passes: `limit`, `sample`): the model on CPU."""
    from .embeddings.encoder import DEFAULT_MODEL

    options = request.options
    return (
        options.get("model", DEFAULT_MODEL),
        "cpu",
        options.get("batch_size", 256),
        options.get("precision", "float32"),
    )


def _joined_states(dataframe: Any, embedded: Any, request: Request, schema: str) -> Any:
    """The states with the vectors joined, never gathered: the rows are bucketed by a hash of
    their columns; each bucket's distinct keywords are joined with the vectors, and each
    bucket's rows are cogrouped with the vectors of their own keywords."""
    from pyspark.sql import functions as F

    from .embeddings.encoder import DEFAULT_MODEL

    buckets = dataframe.rdd.getNumPartitions()
    name, fallback = model_name(request.options.get("model", DEFAULT_MODEL)), _fallback(request)
    value_type = dataframe.schema[request.by].dataType if request.by is not None else None
    bucketed = dataframe.withColumn(_BUCKET, F.pmod(F.xxhash64(*request.needed), F.lit(buckets)).cast("int"))

    def needed(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as compute

        for batch in batches:
            for bucket in set(batch.column(_BUCKET).to_pylist()):
                rows = batch.filter(compute.equal(batch.column(_BUCKET), bucket))
                keywords = distinct_keywords(rows, request).column("keyword").combine_chunks()
                yield pa.record_batch({_BUCKET: pa.array([bucket] * len(keywords), pa.int32()), "keyword": keywords})

    pairs = bucketed.mapInArrow(needed, f"{_BUCKET} int, keyword string").distinct().join(embedded, "keyword")

    def bucket_states(rows: Any, vectors: Any) -> Any:
        lookup = VectorLookup(_fixed_width(vectors.select(["keyword", "vector"])), name, fallback)
        states = block_state_objects(rows.drop_columns([_BUCKET]), _with_model(request, lookup))
        return serialized_states(states, _value_arrow_type(value_type))

    return bucketed.groupBy(_BUCKET).cogroup(pairs.groupBy(_BUCKET)).applyInArrow(bucket_states, schema)


def _with_model(request: Request, model: Any) -> Request:
    from dataclasses import replace

    return replace(request, model=model)
