"""What the Ray and Spark engines (and the Dask recipe) share: the request checked once, one
`MetricState` per Arrow block (and per value of `by`), pooling a group's rows, a gold table
joined by key (the semantic family's keyword vectors: `vectors`).

Only serialized states (`MetricState.to_bytes`) travel from the workers to the driver; the
driver merges them as they arrive (per value of `by`) and computes once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..core.grouping import pool_by_group
from ..families.registry import get_family
from ..io.rows import python_values, shared_lists
from ..state.metric_state import MetricState
from ..state.options import row_namer, rows_named, unnamed_objects

# The column arguments of `evaluate` that name an input column of the dataset.
INPUT_COLUMNS = ("predictions", "references", "texts", "scores", "prediction_sentiments")


# Families whose model turns keywords into vectors (the semantic two-stage pipeline).
EMBEDDING_FAMILIES = ("semantic_keyword_prf",)


STATE_COLUMN = "state"


VALUE_COLUMN = "value"  # a state's value of `by` (null without `by`)


GOLD_COLUMN = "__gold__"  # the joined gold lists, once pooled


class EngineError(ValueError):
    """A data error met on an engine's worker (a row and its keyword named), carried to the
    driver whole: a `ValueError` to catch, its message alone (an engine appends retry notes to
    an exception's arguments, not to this message)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.message,)


class Gold:
    """A gold table joined to the rows by key, as the CLI's --gold: one gold list per value of
    `key`. `table` is an Arrow table, a pandas DataFrame, a mapping {key: gold list} or a
    `pathlib.Path` to a file the CLI reads (JSON Lines, CSV, Parquet, ...). Small (one row per
    movie, say): it travels to every worker, where each list is built once and shared by its rows."""

    def __init__(self, table: Any, key: str, column: str) -> None:
        import pyarrow as pa

        if not isinstance(key, str) or not isinstance(column, str):
            raise ValueError(f"gold_key and gold_column must name columns (str), got {key!r} and {column!r}")
        if isinstance(table, Mapping):
            keys, lists = list(table), list(table.values())
        elif isinstance(table, (Path, os.PathLike)):
            from ..io.read import read_table

            columns = read_table(Path(table), [column]).columns
            keys, lists = (
                columns[name] if name in columns else _missing(name, columns, table) for name in (key, column)
            )
        else:
            if not isinstance(table, (pa.Table, pa.RecordBatch)):
                if not hasattr(table, "iloc"):
                    raise ValueError(
                        "references= is a column name (str) or a gold table: an Arrow table, a pandas DataFrame, "
                        f"a mapping {{key: gold list}} or a pathlib.Path, got {type(table).__name__}"
                    )
                table = pa.Table.from_pandas(table, preserve_index=False)
            keys, lists = (
                python_values(table.column(name))
                if name in table.column_names
                else _missing(name, table.column_names, "the gold table")
                for name in (key, column)
            )
        self.key, self.column = key, column
        self.keys, self.lists = list(keys), [list(gold) if isinstance(gold, (list, tuple)) else gold for gold in lists]
        rows: dict[Any, int] = {}
        for row, value in enumerate(self.keys):
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                message = f"row {row + 1} of the gold table must be a string or an integer, got {value!r}"
                raise ValueError(f"gold_key {key}: {message}")
            if rows.setdefault(value, row) != row:
                twice = f"{value!r} has two gold lists (rows {rows[value] + 1} and {row + 1})"
                raise ValueError(f"gold_key {key}: {twice}; keep one")
        self._rows: dict[Any, int] | None = rows

    @property
    def rows(self) -> dict[Any, int]:
        """{key: its row} (rebuilt once per process: not pickled)."""
        if self._rows is None:
            self._rows = {value: row for row, value in enumerate(self.keys)}
        return self._rows

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_rows": None}

    def references(self, keys: Any) -> list[Any]:
        """The gold list of each row's key (an Arrow column or a list): one list object per key."""
        values = python_values(keys) if not isinstance(keys, list) else keys
        rows, lists = self.rows, self.lists
        try:
            return [lists[rows[value]] for value in values]
        except (KeyError, TypeError):
            missing = next(value for value in values if not _hashable(value) or value not in rows)
            raise ValueError(f"no gold list in the gold table for {self.key} {missing!r}") from None


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _missing(name: str, columns: Iterable[str], where: Any) -> Any:
    raise ValueError(f"no column {name!r} in {where} (its columns: {', '.join(columns)})")


@dataclass
class Request:
    """What every block's work needs: the family, its options, the input columns (name ->
    column), the key, `by`, `groups` and the gold table (whose lists are the references)."""

    family: str
    options: dict[str, Any]
    columns: dict[str, str]
    key: str | None = None
    by: str | None = None
    groups: str | None = None
    gold: Gold | None = None
    model: Any = field(default=None, repr=False)  # the semantic family's keyword vectors, once embedded

    @property
    def needed(self) -> list[str]:
        """The dataset's columns the work reads (projected before the first stage)."""
        names = [*self.columns.values(), self.key, self.by, self.groups, self.gold.key if self.gold else None]
        return list(dict.fromkeys(name for name in names if name is not None))

    @property
    def state_options(self) -> dict[str, Any]:
        return self.options if self.model is None else {**self.options, "model": self.model}

    def pooled(self) -> Request:
        """The request on the pooled rows (`pool_table`'s output): the group is the key, the gold joined."""
        columns = dict(self.columns)
        if self.gold is not None:
            columns["references"] = GOLD_COLUMN
        return replace(self, columns=columns, key=self.groups, groups=None, gold=None)


def check_request(
    family: str,
    columns: Mapping[str, Any],
    key: str | None,
    groups: str | None,
    options: Mapping[str, Any],
    by: str | None = None,
    gold_key: str | None = None,
    gold_column: str = "references",
) -> Request:
    """The request, checked before any data is read.

    Raises `ValueError` for an input the family does not take, a column name that is not a
    str, intervals without `bootstrap="poisson"` (multinomial resampling needs every example
    in one place) or Poisson intervals without a `key` or `groups` column (positions are not
    global on an engine). `columns["references"]` may be a gold table (`Gold`) joined on
    `gold_key`. Sentiment runs one VADER per worker (`workers=1` unless given)."""
    declaration = get_family(family)
    taken = {item.name for item in declaration.inputs}
    columns = dict(columns)
    gold = None
    references = columns.get("references")
    if references is not None and not isinstance(references, str):
        if gold_key is None:
            raise ValueError("references= is a gold table: name the column that joins it to the rows with gold_key=")
        if "references" not in taken:
            raise ValueError(f"{family} takes no references; its inputs: {', '.join(sorted(taken))}")
        gold = Gold(references, gold_key, gold_column)
        columns.pop("references")
    elif gold_key is not None:
        raise ValueError("gold_key= joins a gold table: give it as references= (a table, a mapping or a Path)")
    given = {}
    for name, column in {**columns, "key": key, "groups": groups, "by": by}.items():
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
    options = dict(options)
    if family == "sentiment_appropriateness":
        options.setdefault("workers", 1)  # one VADER per engine worker: no processes forked inside it
    MetricState(family, **options)  # checks every option before any work
    inputs = {name: column for name, column in given.items() if name in INPUT_COLUMNS}
    return Request(family, options, inputs, key=key, by=by, groups=groups, gold=gold)


def block_columns(table: Any, request: Request) -> dict[str, Any]:
    """The family's inputs of an Arrow block as the state takes them (`MetricState.update_arrow`'s
    conversions; equal gold lists as one object; the gold table's lists joined by key)."""
    from ..io.rows import arrow_to_ratings

    kinds = {item.name: item.kind for item in get_family(request.family).inputs}
    values: dict[str, Any] = {}
    for name, column in request.columns.items():
        data = table.column(column)
        if kinds[name] == "ratings":
            values[name] = arrow_to_ratings(data)
        elif kinds[name] == "texts":
            values[name] = data.to_pylist()
        elif name == "references":
            values[name] = shared_lists(data)
        else:
            values[name] = python_values(data)
    if request.gold is not None:
        values["references"] = request.gold.references(table.column(request.gold.key))
    return values


def block_state_objects(table: Any, request: Request, where: str = "", offset: int = 0) -> dict[Any, MetricState]:
    """The states of one Arrow block: {value of `request.by`: its state}, else {None: the state}.
    A bad row is named by its key and its position (`offset` + row) in `where` (a partition)."""
    if table.num_rows == 0:
        return {}
    options = request.state_options
    columns = block_columns(table, request)
    keys = python_values(table.column(request.key)) if request.key else None
    row_name = row_namer(table, request.key, where, offset)
    if request.by is None:
        with rows_named(row_name):
            return {None: MetricState(request.family, **options).update(**columns, keys=keys)}
    parts: dict[Any, list[int]] = {}
    for row, value in enumerate(python_values(table.column(request.by))):
        parts.setdefault(value, []).append(row)
    states = {}
    for value, rows in parts.items():
        chosen = {name: _rows(column, rows) for name, column in columns.items()}
        state = MetricState(request.family, **options)
        with rows_named(lambda index, rows=rows: row_name(rows[index])):
            states[value] = state.update(**chosen, keys=None if keys is None else [keys[row] for row in rows])
    return states


def serialized_states(states: Mapping[Any, MetricState], kind: Any) -> Any:
    """(value, state bytes) rows as an Arrow table (`VALUE_COLUMN` of Arrow type `kind`)."""
    import pyarrow as pa

    return pa.table(
        {
            VALUE_COLUMN: pa.array(list(states), kind),
            STATE_COLUMN: pa.array([state.to_bytes() for state in states.values()], pa.binary()),
        }
    )


def block_states(table: Any, request: Request) -> Any:
    """The serialized states of one Arrow block: one per value of `request.by` (in the
    `VALUE_COLUMN`), else one (its value null)."""
    import pyarrow as pa

    kind = table.schema.field(request.by).type if request.by else pa.null()
    return serialized_states(block_state_objects(table, request), kind)


def _rows(column: Any, rows: list[int]) -> Any:
    if isinstance(column, np.ndarray):
        return column[rows]
    return [column[row] for row in rows]


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


def merge_by_value(
    family: str, options: Mapping[str, Any], pairs: Iterable[tuple[Any, bytes]]
) -> dict[Any, MetricState]:
    """{value: merged state} of (value, serialized state) pairs, merged as they arrive."""
    merged: dict[Any, MetricState] = {}
    objects = unnamed_objects(merge_options(family, options))
    for value, data in pairs:
        state = MetricState.from_bytes(data, **objects)
        merged[value] = state if value not in merged else merged[value].merge(state)
    return merged


def merged_bytes(
    family: str, options: Mapping[str, Any], numbered: Iterable[tuple[Any, tuple[Any, bytes]]]
) -> list[tuple[Any, bytes]]:
    """Numbered (value, state) pairs merged per value in the order of their numbers,
    serialized, in the order of each value's first number (one node of an engine's merge
    tree: the same sums whatever order the engine delivers them in)."""
    ordered = [pair for _, pair in sorted(numbered, key=lambda item: item[0])]
    merged = merge_by_value(family, options, ordered)
    return [(value, state.to_bytes()) for value, state in merged.items()]


def results_by_value(states: Mapping[Any, MetricState], by: str) -> list[dict[str, Any]]:
    """One row per value of `by`, sorted: {by: value, **its result} (a table for pandas'
    `DataFrame(rows)`, `ray.data.from_items(rows)` or Spark's `createDataFrame(rows)`)."""
    ordered = sorted(states.items(), key=lambda item: (item[0] is None, str(type(item[0])), item[0]))
    return [{by: value, **state.compute()} for value, state in ordered]


def pool_table(table: Any, request: Request) -> Any:
    """The rows of one group (an Arrow table) pooled into one row (`pool_by_group`).

    Rows are pooled in `key` order when a key is given (so the pooled ranking does not
    depend on the engine's shuffle), else in the order the engine hands them over. The
    pooled row keeps the input column names (the joined gold lists as `GOLD_COLUMN`) and the
    value of `by`; its group value is its Poisson key."""
    import pyarrow as pa

    schema = pooled_schema(table.schema, request)
    if table.num_rows == 0:
        return schema.empty_table()
    if request.key is not None:
        table = table.sort_by(request.key)
    columns = block_columns(table, request)
    groups = python_values(table.column(request.groups))
    rows_of: dict[Any, list[int]] = {}
    if request.by is not None:  # a group is pooled within each value of `by`
        for row, value in enumerate(python_values(table.column(request.by))):
            rows_of.setdefault(value, []).append(row)
    else:
        rows_of[None] = list(range(table.num_rows))
    arrays: dict[str, list[Any]] = {name: [] for name in schema.names}
    scores_column = request.columns.get("scores")
    options = {
        name: request.options[name] for name in ("normalize", "stemmer", "clip_scores") if name in request.options
    }
    for value, rows in rows_of.items():
        pooled = pool_by_group(
            _rows(columns["predictions"], rows),
            _rows(columns["references"], rows),
            [groups[row] for row in rows],
            scores=_rows(columns["scores"], rows) if scores_column else None,
            **options,
        )
        arrays[request.groups] += pooled.groups
        arrays[request.columns["predictions"]] += pooled.predictions
        arrays[request.pooled().columns["references"]] += pooled.references
        if scores_column:
            arrays[scores_column] += pooled.scores
        if request.by is not None:
            arrays[request.by] += [value] * len(pooled.groups)
    return pa.table({name: pa.array(arrays[name], schema.field(name).type) for name in schema.names})


def pooled_schema(schema: Any, request: Request) -> Any:
    """The Arrow schema of `pool_table`'s output, from the input schema."""
    import pyarrow as pa

    pooled = request.pooled()
    fields = [
        pa.field(request.groups, schema.field(request.groups).type),
        pa.field(pooled.columns["predictions"], pa.list_(pa.string())),
        pa.field(pooled.columns["references"], pa.list_(pa.string())),
    ]
    if "scores" in pooled.columns:
        fields.append(pa.field(pooled.columns["scores"], pa.list_(pa.float64())))
    if request.by is not None and request.by != request.groups:
        fields.append(pa.field(request.by, schema.field(request.by).type))
    return pa.schema(fields)
