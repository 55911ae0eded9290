"""A `MetricState` from Arrow tables: the columns `update_arrow` adds (by their names, from an
Arrow table or a pandas or polars frame) and a `datasets.Dataset` turned into one state, batch
by batch in worker processes (`from_dataset`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..families.registry import get_family
from ..io.rows import arrow_to_lists, arrow_to_ratings
from .options import rows_named, unnamed_objects

if TYPE_CHECKING:
    from .metric_state import MetricState


def arrow_columns(
    family: str, table: Any, key: Any, groups: Any, names: Mapping[str, Any]
) -> tuple[dict[str, Any], Any, Any]:
    """The columns `MetricState.update_arrow` adds: (the family's inputs as lists or rating arrays,
    the key column, the group column), from an Arrow table (or a pandas or polars frame)."""
    import pyarrow as pa

    if not isinstance(table, (pa.RecordBatch, pa.Table)):
        if hasattr(table, "to_arrow"):  # datasets.Dataset, polars
            table = table.to_arrow()
        elif hasattr(table, "columns") and hasattr(table, "iloc"):  # pandas
            table = pa.Table.from_pandas(table, preserve_index=False)
        else:
            raise TypeError(f"update_arrow takes an Arrow RecordBatch or Table, got {type(table).__name__}")
    spec = get_family(family)
    kinds = {item.name: item.kind for item in spec.inputs}

    def column(name: str, role: str) -> Any:
        if not isinstance(name, str):
            raise TypeError(f"{role} must name a column (a str), got {name!r}")
        if name not in table.column_names:
            raise ValueError(f"{role}={name!r}: no such column; the columns: {', '.join(table.column_names)}")
        count = table.column_names.count(name)
        if count > 1:
            raise ValueError(f"{role}={name!r}: the table has {count} columns of that name; give each its own name")
        return table.column(name)

    values: dict[str, Any] = {}
    for name, column_name in names.items():
        if name not in kinds:
            raise ValueError(f"{family} takes no input {name!r}; its inputs: {', '.join(kinds)}")
        if column_name is None:
            continue
        data = column(column_name, name)
        if kinds[name] == "ratings":
            values[name] = arrow_to_ratings(data)
        elif kinds[name] == "texts":
            values[name] = data.to_pylist()
        else:
            values[name] = arrow_to_lists(data, share_duplicates=name == "references")
    keys = None if key is None else column(key, "key")
    group_column = None if groups is None else column(groups, "groups")
    return values, keys, group_column


def from_dataset(
    cls: type[MetricState],
    dataset: Any,
    family: str,
    predictions: str,
    references: str | None,
    key: str | None,
    groups: str | None,
    num_proc: int | None,
    batch_size: int,
    options: dict[str, Any],
) -> MetricState:
    """`MetricState.from_dataset`: a serialized state per batch of `dataset.map`, merged in order."""
    from datasets import Features, Value

    spec = get_family(family)
    inputs = [item.name for item in spec.inputs]
    names = {"predictions": predictions, "references": references}
    names.update({name: options.pop(name) for name in inputs if name in options})
    names = {name: column for name, column in names.items() if name in inputs and column is not None}
    template = cls(family, **options)
    index_column = "__opinion_metrics_index__"

    def batch_state(batch: Any, indices: list[int]) -> dict[str, list[bytes]]:
        import pyarrow as pa

        table = batch.append_column(index_column, pa.array(indices, type=pa.int64()))
        state = cls.empty_like(template)

        def name(index: int) -> str:  # the dataset's row, as the family function on the dataset names it
            value = "" if key is None else f" ({key}={table.column(key)[index].as_py()!r})"
            return f"example {indices[index]}{value}"

        with rows_named(name):
            state.update_arrow(
                table, key=index_column if key is None and groups is None else key, groups=groups, **names
            )
        return {"state": [state.to_bytes()]}

    states = dataset.with_format("arrow").map(
        batch_state,
        batched=True,
        batch_size=batch_size,
        with_indices=True,
        num_proc=num_proc,
        remove_columns=dataset.column_names,
        features=Features({"state": Value("binary")}),
        keep_in_memory=True,
        desc=f"{family} states",
    )
    merged, objects = template, unnamed_objects(template.options)  # functions and models given back
    for data in states.with_format("arrow")["state"].to_pylist():
        merged = merged.merge(cls.from_bytes(data, **objects))
    return merged
