"""What the Ray and Spark engines share: option checks, one `MetricState` per Arrow batch,
pooling a group's rows, and the semantic family's precomputed embeddings.

Only serialized states (`MetricState.to_bytes`) travel from the workers to the driver; the
driver merges them as they arrive and computes once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .columnar import python_values
from .families import get_family
from .grouping import pool_by_group
from .preparation import make_normalizer
from .state import MetricState, unnamed_objects

# The column arguments of `evaluate` that name an input column of the dataset.
INPUT_COLUMNS = ("predictions", "references", "texts", "scores", "prediction_sentiments")
# Families whose model turns keywords into vectors (the semantic two-stage pipeline).
EMBEDDING_FAMILIES = ("semantic_keyword_prf",)
STATE_COLUMN = "state"


def check_request(
    family: str, columns: Mapping[str, str | None], key: str | None, groups: str | None, options: Mapping[str, Any]
) -> dict[str, str]:
    """The input columns given (name -> column), after checking them against the family.

    Raises `ValueError` for an input the family does not take, a column name that is not a
    str, intervals without `bootstrap="poisson"` (multinomial resampling needs every example
    in one place) or Poisson intervals without a `key` or `groups` column (positions are not
    global on an engine)."""
    declaration = get_family(family)
    taken = {item.name for item in declaration.inputs}
    given = {}
    for name, column in {**columns, "key": key, "groups": groups}.items():
        if column is None:
            continue
        if not isinstance(column, str):
            raise ValueError(f"{name} must name a column (a str), got {column!r}")
        if name in INPUT_COLUMNS and name not in taken:
            raise ValueError(f"{family} takes no {name}; its inputs: {', '.join(sorted(taken))}")
        given[name] = column
    if "predictions" not in given:
        raise ValueError("predictions must name the column of predictions")
    if options.get("confidence_level") is not None:
        if options.get("bootstrap") != "poisson":
            raise ValueError(
                "intervals on an engine need bootstrap='poisson' (multinomial resampling needs every example "
                "in one place)"
            )
        if key is None and groups is None:
            raise ValueError(
                "Poisson intervals on an engine need key='<column>': a unique id per example (e.g. review_id), "
                "so that each example's resampling weights do not depend on the partitioning"
            )
    if groups is not None and family not in ("keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf"):
        raise ValueError(f"groups pools keyword lists: {family} cannot be pooled")
    if groups is not None and ("texts" in given or options.get("presence", "all") != "all"):
        raise ValueError("texts and presence are per review: they cannot be pooled with groups")
    MetricState(family, **options)  # checks every option before any work
    return given


def state_bytes(
    table: Any, family: str, options: Mapping[str, Any], columns: Mapping[str, str], key: str | None
) -> bytes:
    """The serialized state of one Arrow batch or table."""
    state = MetricState(family, **options)
    state.update_arrow(table, key=key, **columns)
    return state.to_bytes()


def merge_options(family: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that serialized states need given back: the semantic family's states name
    their model (a `PrecomputedEncoder` named by `model_name`), so only other object options
    (functions) are."""
    return {name: value for name, value in options.items() if name != "model" or family not in EMBEDDING_FAMILIES}


def merge_serialized(family: str, options: Mapping[str, Any], serialized: Iterable[bytes]) -> MetricState:
    """Merge serialized states as they arrive (constant memory on the driver); an empty
    state of `family` and `options` when there are none."""
    total, objects = None, unnamed_objects(merge_options(family, options))
    for data in serialized:
        state = MetricState.from_bytes(data, **objects)
        total = state if total is None else total.merge(state)
    return MetricState(family, **options) if total is None else total


def merged_bytes(family: str, options: Mapping[str, Any], numbered: Iterable[tuple[Any, bytes]]) -> bytes:
    """Numbered serialized states merged in the order of their numbers, serialized (one node
    of an engine's merge tree: the same sums whatever order the engine delivers them in)."""
    ordered = (data for _, data in sorted(numbered, key=lambda item: item[0]))
    return merge_serialized(family, options, ordered).to_bytes()


def pool_table(table: Any, columns: Mapping[str, str], groups: str, key: str | None, options: Mapping[str, Any]) -> Any:
    """The rows of one group (an Arrow table) pooled into one row (`pool_by_group`).

    Rows are pooled in `key` order when a key is given (so the pooled ranking does not
    depend on the engine's shuffle), else in the order the engine hands them over. The
    pooled row keeps the input column names; its group value is its Poisson key."""
    import pyarrow as pa

    if table.num_rows == 0:
        return table.select([columns[name] for name in ("predictions", "references", "scores") if name in columns])
    if key is not None:
        table = table.sort_by(key)
    scores = columns.get("scores")
    pooled = pool_by_group(
        python_values(table.column(columns["predictions"])),
        python_values(table.column(columns["references"])),
        python_values(table.column(groups)),
        scores=python_values(table.column(scores)) if scores else None,
        **{name: options[name] for name in ("normalize", "stemmer", "clip_scores") if name in options},
    )
    arrays = {
        groups: pa.array(pooled.groups, type=table.schema.field(groups).type),
        columns["predictions"]: pa.array(pooled.predictions, pa.list_(pa.string())),
        columns["references"]: pa.array(pooled.references, pa.list_(pa.string())),
    }
    if scores:
        arrays[scores] = pa.array(pooled.scores, pa.list_(pa.float64()))
    return pa.table(arrays)


def pooled_schema(schema: Any, columns: Mapping[str, str], groups: str) -> Any:
    """The Arrow schema of `pool_table`'s output, from the input schema."""
    import pyarrow as pa

    fields = [
        pa.field(groups, schema.field(groups).type),
        pa.field(columns["predictions"], pa.list_(pa.string())),
        pa.field(columns["references"], pa.list_(pa.string())),
    ]
    if "scores" in columns:
        fields.append(pa.field(columns["scores"], pa.list_(pa.float64())))
    return pa.schema(fields)


def distinct_keywords(table: Any, columns: Mapping[str, str], options: Mapping[str, Any]) -> Any:
    """The distinct normalized keywords (what the semantic family embeds) of an Arrow batch."""
    import pyarrow as pa

    normalizer = make_normalizer(options.get("normalize", "default"), options.get("stemmer"))
    seen: dict[str, None] = {}
    for name in ("predictions", "references"):
        if name not in columns:
            continue
        for keywords in python_values(table.column(columns[name])):
            for keyword in keywords or ():
                if isinstance(keyword, str):
                    seen[normalizer(keyword)] = None
    seen.pop("", None)
    return pa.table({"keyword": pa.array(list(seen), pa.string())})


def embed_keywords(table: Any, model: Any, device: str | None, batch_size: int) -> Any:
    """(keyword, vector) rows: the table's keywords as `model` (a name, path or model object)
    returns them, batched as the semantic family batches them; the family normalizes them
    when it looks them up, as it normalizes its own model's output."""
    import pyarrow as pa

    from .semantic import load_model, padding_free_batches

    keywords = python_values(table.column("keyword"))
    if isinstance(model, str):
        model = load_model(model, device)
    parts = {}
    for batch in padding_free_batches(model, keywords, batch_size):
        encoded = model.encode(
            [keywords[i] for i in batch],
            batch_size=len(batch),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        parts.update(zip(batch, np.asarray(encoded, dtype=np.float32)))
    width = len(next(iter(parts.values()))) if parts else 1
    vectors = np.stack([parts[i] for i in range(len(keywords))]) if parts else np.zeros((0, width), np.float32)
    flat = pa.array(np.ascontiguousarray(vectors).reshape(-1))
    return pa.table({"keyword": table.column("keyword"), "vector": pa.FixedSizeListArray.from_arrays(flat, width)})


def precomputed_encoder(tables: Iterable[Any], model: Any) -> Any:
    """A `PrecomputedEncoder` of the (keyword, vector) Arrow tables of `embed_keywords`, named
    as states name `model`, so that every worker's states merge with each other and with
    states made with `model` itself."""
    from .semantic import PrecomputedEncoder

    vectors: dict[str, np.ndarray] = {}
    for table in tables:
        if table.num_rows == 0:
            continue
        width = table.schema.field("vector").type.list_size
        matrix = table.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, width)
        vectors.update(zip(python_values(table.column("keyword")), matrix))
    return PrecomputedEncoder(vectors, name=model_name(model))


def model_name(model: Any) -> str:
    """How a `MetricState` names a model option: its name, else `canonical_name` or its type."""
    if isinstance(model, str):
        return model
    name = getattr(model, "canonical_name", None)
    if isinstance(name, str):
        return name
    return f"{type(model).__module__}.{type(model).__qualname__}"
