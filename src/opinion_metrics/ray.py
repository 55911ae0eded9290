"""Evaluate a Ray Data dataset: one `MetricState` per block on the workers, merged on the driver.

    import ray
    from opinion_metrics import ray as om_ray

    dataset = ray.data.read_parquet("s3://bucket/predictions/")
    om_ray.evaluate(dataset, "keyword_prf", predictions="keywords", references="gold", key="review_id",
                    confidence_level=0.95, bootstrap="poisson")

Rows stay on the workers: each block becomes one serialized state (`map_batches` on Arrow
batches), and only those states reach the driver, which merges them as they stream in.
The semantic family runs in two stages: the distinct normalized keywords are embedded once
by a pool of model actors (one GPU each when the cluster has GPUs), then the statistics
are computed from those embeddings. Ray Data's own progress bars show each stage.
"""

from __future__ import annotations

from typing import Any

from .engine_support import (
    EMBEDDING_FAMILIES,
    STATE_COLUMN,
    check_request,
    distinct_keywords,
    embed_keywords,
    merge_serialized,
    pool_table,
    precomputed_encoder,
    state_bytes,
)
from .state import MetricState


def evaluate(dataset: Any, family: str, **arguments: Any) -> dict[str, Any]:
    """Evaluate `family` on a `ray.data.Dataset`: `state(dataset, family, **arguments).compute()`,
    the same dict as the family function on all rows (to floating-point summation order)."""
    return state(dataset, family, **arguments).compute()


def state(
    dataset: Any,
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
    model_workers: int | None = None,
    **options: Any,
) -> MetricState:
    """The merged `MetricState` of `family` over a `ray.data.Dataset` (for `evaluate`, or
    `compare_systems` on two systems' states).

    Args:
        dataset: a Ray Data dataset with one example per row.
        family: "keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf",
            "sentiment_appropriateness", "aspect_sentiment_score" or "keyword_diversity".
        predictions, references, texts, scores, prediction_sentiments: the columns of the
            family's inputs (None: not given).
        key: a column of unique example ids (int or str): the Poisson bootstrap key; needed
            with `confidence_level` (which needs `bootstrap="poisson"` here).
        groups: pool the rows of each value of this column into one example (as
            `pool_by_group`, through a group-by; rows are pooled in `key` order when given);
            the group is then the example and its Poisson key.
        partitions: repartition the dataset into this many blocks first (`read_parquet` may
            read many files in one task: repartition to use every core).
        model_workers: semantic family: model actors that embed the keywords (default: one
            per GPU when the cluster has GPUs, else 1 on CPU).
        **options: the family's options, plus `bootstrap`.
    """
    columns = {"predictions": predictions, "references": references, "texts": texts, "scores": scores}
    columns["prediction_sentiments"] = prediction_sentiments
    if references == "references" and family == "keyword_diversity":
        columns["references"] = None
    given = check_request(family, columns, key, groups, options)
    given.pop("key", None)
    given.pop("groups", None)
    if partitions is not None:
        dataset = dataset.repartition(partitions)
    if groups is not None:
        dataset = dataset.groupby(groups, num_partitions=partitions).map_groups(
            pool_table, batch_format="pyarrow", fn_args=(given, groups, key, options)
        )
        key = groups
    if family in EMBEDDING_FAMILIES:
        states = _semantic_states(dataset, family, options, given, key, model_workers)
    else:
        states = dataset.map_batches(
            _states, batch_format="pyarrow", batch_size=None, fn_args=(family, options, given, key)
        )
    batches = states.iter_batches(batch_size=None, batch_format="pyarrow")
    return merge_serialized(family, options, (data for batch in batches for data in batch[STATE_COLUMN].to_pylist()))


def _states(table: Any, family: str, options: dict[str, Any], columns: dict[str, str], key: str | None) -> Any:
    import pyarrow as pa

    return pa.table({STATE_COLUMN: pa.array([state_bytes(table, family, options, columns, key)], pa.binary())})


class _Embedder:
    """A model actor: loads the model once, embeds batches of distinct keywords."""

    def __init__(self, model: Any, device: str | None, batch_size: int) -> None:
        self.model, self.device, self.batch_size = model, device, batch_size

    def __call__(self, table: Any) -> Any:
        return embed_keywords(table, self.model, self.device, self.batch_size)


class _SemanticStates:
    """A statistics actor: holds the keyword -> vector lookup, turns blocks into states."""

    def __init__(
        self,
        embedding_blocks: list[Any],
        family: str,
        options: dict[str, Any],
        columns: dict[str, str],
        key: str | None,
    ) -> None:
        import ray

        from .semantic import DEFAULT_MODEL

        self.encoder = precomputed_encoder(ray.get(embedding_blocks), options.get("model", DEFAULT_MODEL))
        self.family, self.options, self.columns, self.key = family, options, columns, key

    def __call__(self, table: Any) -> Any:
        import pyarrow as pa

        data = state_bytes(table, self.family, {**self.options, "model": self.encoder}, self.columns, self.key)
        return pa.table({STATE_COLUMN: pa.array([data], pa.binary())})


def _semantic_states(
    dataset: Any,
    family: str,
    options: dict[str, Any],
    columns: dict[str, str],
    key: str | None,
    model_workers: int | None,
) -> Any:
    import ray

    from .semantic import DEFAULT_MODEL

    gpus = int(ray.cluster_resources().get("GPU", 0))
    cpus = max(int(ray.cluster_resources().get("CPU", 1)), 1)
    workers = model_workers or max(gpus, 1)
    vocabulary = (
        dataset.map_batches(distinct_keywords, batch_format="pyarrow", batch_size=None, fn_args=(columns, options))
        .groupby("keyword", num_partitions=cpus)
        .count()
        .select_columns(["keyword"])
    )
    embeddings = vocabulary.map_batches(
        _Embedder,
        batch_format="pyarrow",
        batch_size=4096,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_gpus=1 if gpus else 0,
        fn_constructor_args=(
            options.get("model", DEFAULT_MODEL),
            options.get("device"),
            options.get("batch_size", 256),
        ),
    )
    blocks = embeddings.to_arrow_refs()  # stay in the object store; each statistics actor fetches them once
    return dataset.map_batches(
        _SemanticStates,
        batch_format="pyarrow",
        batch_size=None,
        compute=ray.data.ActorPoolStrategy(size=cpus),
        fn_constructor_args=(blocks, family, options, columns, key),
    )
