"""Evaluate a Ray Data dataset: one `MetricState` per block on the workers, merged on the driver.

    import ray
    from opinion_metrics import ray as om_ray

    dataset = ray.data.read_parquet("s3://bucket/predictions/")
    om_ray.evaluate(dataset, "keyword_prf", predictions="keywords", references="gold", key="review_id",
                    confidence_level=0.95, bootstrap="poisson")

Rows stay on the workers: only the columns the family reads are read, each block becomes one
serialized state per value of `by` (`map_batches` on Arrow batches, as tasks fused with the
reading), and only those states reach the driver, which merges them as they stream in.
The semantic family runs in two stages: the distinct normalized keywords are embedded once
by a pool of model actors (one GPU each when the cluster has GPUs, else one CPU actor that
leaves a CPU for reading), the vectors are concatenated into one object in the object store,
and the statistics tasks read them in place. Ray Data's own progress bars show each stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .engines.support import (
    EMBEDDING_FAMILIES,
    STATE_COLUMN,
    VALUE_COLUMN,
    EngineError,
    Request,
    block_states,
    check_request,
    merge_by_value,
    pool_table,
    results_by_value,
)
from .engines.vectors import (
    ProcessVectorLookup,
    VectorLookup,
    distinct_keywords,
    embed_keywords,
    model_name,
    vector_table,
)
from .state.metric_state import MetricState


def evaluate(dataset: Any, family: str, **arguments: Any) -> dict[str, Any] | list[dict[str, Any]]:
    """Evaluate `family` on a `ray.data.Dataset`: `state(dataset, family, **arguments).compute()`,
    the same dict as the family function on all rows (to floating-point summation order).
    With `by`, one row per value: `[{by: value, **its result}, ...]` (sorted by value), for
    `pandas.DataFrame(rows)` or `ray.data.from_items(rows)`."""
    found = state(dataset, family, **arguments)
    if isinstance(found, dict):
        return results_by_value(found, arguments["by"])
    return found.compute()


def state(
    dataset: Any,
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
    model_workers: int | None = None,
    num_gpus: float | None = None,
    concurrency: int | None = None,
    **options: Any,
) -> MetricState | dict[Any, MetricState]:
    """The merged `MetricState` of `family` over a `ray.data.Dataset` (for `evaluate`, or
    `compare_systems` on two systems' states); with `by`, {value: its merged state}.

    Args:
        dataset: a Ray Data dataset with one example per row.
        family: "keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf",
            "sentiment_appropriateness", "aspect_sentiment_score" or "keyword_diversity".
        predictions, references, texts, scores, prediction_sentiments: the columns of the
            family's inputs (None: not given). `references` may instead be a gold table
            joined to the rows by `gold_key` (its lists in `gold_column`): an Arrow table, a
            pandas DataFrame, a mapping {key: gold list} or a `pathlib.Path` to a file, as the
            CLI's --gold (the rows then need no gold column).
        key: a column of unique example ids (int or str): the Poisson bootstrap key; needed
            with `confidence_level` (which needs `bootstrap="poisson"` here).
        groups: pool the rows of each value of this column into one example (as
            `pool_by_group`, through a group-by; rows are pooled in `key` order when given);
            the group is then the example and its Poisson key.
        by: one state per value of this column (e.g. the model) in one pass: each block
            gives one state per value it holds, merged per value (equal to evaluating each
            value's rows alone).
        partitions: repartition the dataset into this many blocks first (`read_parquet` may
            read many files in one task: repartition to use every core); only the columns
            the family reads are shuffled.
        model_workers: semantic family: model actors that embed the keywords (default: one
            per GPU when the cluster has GPUs, else one CPU actor).
        num_gpus: GPUs per model actor (default 1 when the cluster has GPUs, else 0); a CPU
            actor takes the cluster's CPUs but one (left for reading), for its torch threads.
        concurrency: the statistics tasks run at once (default: Ray Data's choice).
        **options: the family's options, plus `bootstrap`.
    """
    columns = {"predictions": predictions, "references": references, "texts": texts, "scores": scores}
    columns["prediction_sentiments"] = prediction_sentiments
    if isinstance(references, str) and references == "references" and family == "keyword_diversity":
        columns["references"] = None
    request = check_request(family, columns, key, groups, options, by, gold_key, gold_column)
    dataset = dataset.select_columns(request.needed)  # projected before the first stage (and any shuffle)
    if partitions is not None:
        dataset = dataset.repartition(partitions)
    if groups is not None:
        keys = [groups] if by is None or by == groups else [by, groups]
        dataset = dataset.groupby(keys, num_partitions=partitions).map_groups(
            _pooled, batch_format="pyarrow", fn_args=(request,)
        )
        request = request.pooled()
    if family in EMBEDDING_FAMILIES:
        request.model = _embeddings(dataset, request, model_workers, num_gpus)
    states = dataset.map_batches(
        _states, batch_format="pyarrow", batch_size=None, fn_args=(request,), concurrency=concurrency
    )
    batches = states.iter_batches(batch_size=None, batch_format="pyarrow")
    pairs = (
        pair
        for batch in batches
        for pair in zip(batch[VALUE_COLUMN].to_pylist(), batch[STATE_COLUMN].to_pylist(), strict=True)
    )
    try:
        merged = merge_by_value(family, request.options, pairs)
    except EngineError as error:  # Ray's RayTaskError(EngineError), its text a traceback: the message first
        raise EngineError(error.message) from None
    if by is not None:
        return merged
    return merged[None] if None in merged else MetricState(family, **request.options)


class _SharedVectors(ProcessVectorLookup):
    """The keyword vectors as one object in Ray's object store: pickled as its reference, each
    worker process fetches it once (zero-copy)."""

    _lookups: dict[str, VectorLookup] = {}

    def __init__(self, reference: Any, name: str, fallback: tuple[Any, str | None, int, str]) -> None:
        super().__init__(name, fallback)
        self.reference = reference

    def _key(self) -> str:
        return self.reference.hex()

    def _table(self) -> Any:
        import ray

        return ray.get(self.reference)


@contextmanager
def _whole_errors() -> Iterator[None]:
    """A data error in a worker leaves it as an `EngineError`, which Ray Data raises as it is in
    this task (its `raise_original_map_exception`), not wrapped in a `UserCodeException` whose
    message ("UDF failed to process a data block") hides ours; `state` raises it on the driver."""
    try:
        yield
    except ValueError as error:
        import ray.data

        ray.data.DataContext.get_current().raise_original_map_exception = True  # the failing task's context
        raise EngineError(str(error)) from None


def _states(table: Any, request: Request) -> Any:
    with _whole_errors():
        return block_states(table, request)


def _pooled(table: Any, request: Request) -> Any:
    with _whole_errors():
        return pool_table(table, request)


class _Embedder:
    """A model actor: loads the model once, embeds batches of distinct keywords."""

    def __init__(self, model: Any, device: str | None, batch_size: int, precision: str, threads: int) -> None:
        if threads > 1:
            import torch

            torch.set_num_threads(threads)
        self.model, self.device, self.batch_size, self.precision = model, device, batch_size, precision

    def __call__(self, table: Any) -> Any:
        return embed_keywords(table, self.model, self.device, self.batch_size, self.precision)


def _vocabulary_table(*tables: Any) -> Any:
    return vector_table(tables)


def model_actors(
    resources: dict[str, float], model_workers: int | None, num_gpus: float | None
) -> tuple[int, float, float]:
    """(actors, GPUs each, CPUs each) of the embedding stage on a cluster of `resources`: one
    actor per GPU where there are GPUs (one CPU each); else CPU actors sharing every CPU but
    one, which reading and the vocabulary's tasks need (a pool holding every CPU starves
    them: Ray Data starts the pool first); on a single CPU the actor reserves none."""
    gpus, cpus = float(resources.get("GPU", 0)), int(resources.get("CPU", 1))
    num_gpus = (1 if gpus else 0) if num_gpus is None else num_gpus
    if num_gpus:
        return model_workers or max(int(gpus // num_gpus), 1), num_gpus, 1
    if cpus <= 1:
        return 1, 0, 0
    workers = min(model_workers or 1, cpus - 1)
    return workers, 0, (cpus - 1) // workers


def _embeddings(dataset: Any, request: Request, model_workers: int | None, num_gpus: float | None) -> _SharedVectors:
    """Embed the distinct normalized keywords once (model actors); the vectors become one
    object in the object store (concatenated by a task: the driver holds only its reference)."""
    import ray

    from .embeddings.encoder import DEFAULT_MODEL

    workers, num_gpus, actor_cpus = model_actors(ray.cluster_resources(), model_workers, num_gpus)
    options = request.options
    model = options.get("model", DEFAULT_MODEL)
    vocabulary = dataset.map_batches(distinct_keywords, batch_format="pyarrow", batch_size=None, fn_args=(request,))
    vocabulary = vocabulary.groupby("keyword").count().select_columns(["keyword"])
    embedding = (model, options.get("device"), options.get("batch_size", 256), options.get("precision", "float32"))
    embeddings = vocabulary.map_batches(
        _Embedder,
        batch_format="pyarrow",
        batch_size=4096,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_gpus=num_gpus,
        num_cpus=actor_cpus,
        fn_constructor_args=(*embedding, max(actor_cpus, 1)),
    )
    blocks = embeddings.to_arrow_refs()  # stay in the object store
    reference = ray.remote(_vocabulary_table).options(num_cpus=0).remote(*blocks)
    # the statistics' rows may differ from the vocabulary's (`limit`, sampling): a keyword
    # missed there is embedded where it is met, on CPU
    return _SharedVectors(reference, model_name(model), (model, "cpu", *embedding[2:]))
