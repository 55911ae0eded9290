"""Mergeable metric state for every family (docs/definitions.md section 12).

A `MetricState` holds what a family's values need from the examples it has seen: the column
sums of their per-example statistics (docs/definitions.md section 11) and, with intervals and
`bootstrap="poisson"`, per resample the Poisson-weighted and swap-sign-weighted column sums
(constant memory in the number of examples). States of the same family and options merge by
addition, in any order; `compute()` gives the dict the family function gives on all the
examples. With `bootstrap="multinomial"` intervals the state keeps every example's
statistics row (the multinomial bootstrap draws from all of them at once).

Every state also carries a sketch of its examples' keys (`poisson.sketch_of`: the 512
smallest distinct key words), so that an example counted twice (a state added to itself or
to a copy, states given the same keys) is refused when states merge or compute.

`to_bytes()` writes a declared, versioned layout (no pickle):

    magic b"\\x93OMSTATE" | version (uint16 LE) | header length (uint32 LE) | header (UTF-8
    JSON: family, canonical options, counts, key fingerprint, position-key ranges, array names
    and shapes) |
    the key sketch as little-endian uint64, then the statistics arrays as little-endian
    float64, in header order | SHA-256 of all the above

and `MetricState.from_bytes` parses it as untrusted input: every count, shape and option is
checked against the family's declaration, and every statistic against what the family's
statistics can be (`_Layout`), before anything is allocated or computed.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
import struct
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from .families import INTERVAL_OPTIONS, Family, Reducer, get_family
from .poisson import (
    SKETCH_SIZE,
    counted_twice,
    distinct_count,
    key_fingerprint,
    key_hashes,
    key_words,
    keyless_words,
    merge_sketches,
    resample_sums,
    sketch_of,
)
from .resampling import add_intervals, bootstrap_intervals, poisson_seed, resampled_intervals

MAGIC = b"\x93OMSTATE"
FORMAT_VERSION = 3  # 2: the header records the ranges of position keys; 3: the key sketch
_PREFIX = struct.Struct("<HI")  # version, header length
_DIGEST_SIZE = 32
_MAX_HEADER_BYTES = 1 << 24
_MAX_HEADER_DEPTH = 8  # the header's JSON nests 4 deep ({"arrays": [{"shape": [...]}]})
_MAX_DIGITS = 20  # an integer of the header fits in 64 bits (positions, counts, seeds)
_HEADER_KEYS = {"family", "options", "n_examples", "fingerprint", "positions", "arrays"}
# Options that may hold an object (a function, a model, a numpy Generator): only their
# description travels in the header.
_OBJECT_OPTIONS = frozenset({"normalize", "sentiment", "model", "random_state"})
# Columns of a table given to `update` by name: each family input, plus the keys and groups.
_EXTRA_COLUMNS = ("key", "groups")


class ObjectOption:
    """An option that was an object (a callable, a model) in the process that wrote a state:
    only its description travels; a state holding it merges and computes, but cannot update."""

    def __init__(self, description: str) -> None:
        self.description = description

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectOption) and other.description == self.description

    def __hash__(self) -> int:
        return hash(self.description)

    def __repr__(self) -> str:
        return f"<object {self.description}>"


def _describe_object(value: Any) -> str:
    kind = value if callable(value) and hasattr(value, "__qualname__") else type(value)
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', repr(kind))}"


def stable_name(value: Any) -> str | None:
    """The explicit name an object option carries (`PrecomputedEncoder(name=...)`'s
    `canonical_name`, a model's `name_or_path`), or None."""
    for attribute in ("canonical_name", "name_or_path"):
        name = getattr(value, attribute, None)
        if isinstance(name, str) and name:
            return name
    return None


def _canonical_value(value: Any) -> Any:
    """A JSON value standing for an option value; an object by its explicit name, else by its
    type or function name (which does not tell two functions apart: see `check_mergeable`)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return list(value)
    if isinstance(value, ObjectOption):
        return {"object": value.description}
    name = stable_name(value)
    if name is not None:  # e.g. PrecomputedEncoder: stands for the model that made its vectors
        return name
    return {"object": _describe_object(value)}


def unnamed_objects(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options whose value is an object without an explicit name (a function, a model
    object): what `from_bytes` needs again to load a state that another process serialized."""
    return {name: value for name, value in options.items() if isinstance(_canonical_value(value), dict)}


def _from_canonical(name: str, value: Any) -> Any:
    """An option value read from a header; an object's description as an `ObjectOption`."""
    if not isinstance(value, dict):
        return value
    if name not in _OBJECT_OPTIONS or set(value) != {"object"} or not isinstance(value["object"], str):
        raise _invalid(f"option {name} {_short(value)}")
    return ObjectOption(value["object"])


def _value_names(family: Family) -> list[str]:
    """The options that decide a family's values: all but `return_per_example` and resources."""
    return [o.name for o in family.options if o.name != "return_per_example" and not o.resource]


_EXAMPLE = re.compile(r"\bexample (\d+)")


@contextmanager
def rows_named(name: Callable[[int], str]) -> Iterator[None]:
    """A `ValueError` raised inside names its example as `name(index)` says (by its key, its
    dataset row, its partition) instead of by its position in the batch at hand (the first
    "example N" of the message: the example's)."""
    try:
        yield
    except ValueError as error:
        if error.args and isinstance(error.args[0], str):
            named = _EXAMPLE.sub(lambda found: name(int(found.group(1))), error.args[0], count=1)
            error.args = (named, *error.args[1:])
        raise


def row_namer(table: Any, key: str | None, where: str = "", offset: int = 0) -> Callable[[int], str]:
    """How `rows_named` names row `index` of an Arrow table: by its `key` column's value and
    its position (`offset` + index) in `where` (a partition, a block)."""
    place = f" of {where}" if where else " of its block"

    def name(index: int) -> str:
        if key is not None and index < table.num_rows:
            return f"the row with {key}={table.column(key)[index].as_py()!r} (row {offset + index}{place})"
        return f"row {offset + index}{place} (give key= to name rows by their id)"

    return name


def statistics(family: str, options: Mapping[str, Any] | None = None, **columns: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-example statistics of `family` (docs/definitions.md section 11) on the given input columns.

    Args:
        family: a family name.
        options: the family's options (interval options and `return_per_example` are ignored).
        **columns: the family's inputs by name (predictions, references, texts, scores, ...).

    Returns:
        `(statistics, included)`: the (examples x statistics) float64 matrix whose column sums
        `Family.reducer(options)` maps to the values, and a bool mask of the examples that add
        to some sum (an example left out of every value, e.g. by `presence`, has a row of zeros).

    Example:
        >>> matrix, included = statistics("keyword_prf", {"match": "exact"}, predictions=[["a", "b"]],
        ...                               references=[["a"]])
        >>> matrix[0, :4].tolist(), included.tolist()
        ([1.0, 0.5, 1.0, 0.6666666666666666], [True])
    """
    spec = get_family(family)
    options = {k: v for k, v in (options or {}).items() if k not in INTERVAL_OPTIONS and k != "return_per_example"}
    spec.check_options(options)
    inputs = {item.name for item in spec.inputs}
    unknown = sorted(set(columns) - inputs)
    if unknown:
        raise ValueError(f"{family} takes no input {unknown[0]!r}; its inputs: {', '.join(sorted(inputs))}")
    matrix = np.asarray(spec.statistics_function(**columns, **options)[0], dtype=np.float64)
    return matrix, matrix.any(axis=1)


class _Layout:
    """What every row of a family's statistics (docs/definitions.md section 11) satisfies,
    from the family and its options alone: the width; the columns that are whole numbers;
    `units`, combinations of columns that are 0 or 1 per example (an example counted, an
    aspect's outcome); and linear bounds `bounds @ row >= 0`. Non-negative whole-number
    weights keep the bounds, so Poisson-weighted and swap-sign sums satisfy them too."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.whole: list[int] = []
        self.units: list[np.ndarray] = []
        self._bounds: list[np.ndarray] = []

    def _row(self, *terms: tuple[int, float]) -> np.ndarray:
        row = np.zeros(self.width)
        for column, coefficient in terms:
            row[column] += coefficient
        return row

    def count(self, *columns: int) -> None:
        """Whole numbers >= 0."""
        self.whole += columns
        self.within(*columns)

    def unit(self, *columns: int) -> None:
        """Their sum is 0 or 1 per example."""
        self.units.append(self._row(*((column, 1.0) for column in columns)))

    def within(self, *columns: int, by: int | None = None, low: float = 0.0, high: float = 1.0) -> None:
        """`low * row[by] <= row[column] <= high * row[by]` (`by` None: `row[column] >= 0`)."""
        for column in columns:
            if by is None:
                self._bounds.append(self._row((column, 1.0)))
                continue
            self._bounds.append(self._row((column, 1.0), (by, -low)))
            if high != math.inf:
                self._bounds.append(self._row((by, high), (column, -1.0)))

    def prf(self, offset: int, *, whole_matches: bool, whole_predicted: bool = True, bounded: bool = True) -> None:
        """The 8 columns of `averaging.prf_statistics` from `offset`: examples, P, R, F1,
        matched / predicted, matched gold / gold (`bounded`: matched gold at most gold)."""
        examples, precision, recall, f1, matched, predicted, matched_gold, gold = range(offset, offset + 8)
        self.count(examples, gold)
        self.unit(examples)
        self.within(precision, by=examples)
        self.within(recall, by=examples, high=1.0 if bounded else math.inf)
        self.within(f1, by=examples, high=1.0 if bounded else 2.0)  # 2PR / (P + R) < 2P
        for column, whole in ((matched, whole_matches), (matched_gold, whole_matches), (predicted, whole_predicted)):
            (self.count if whole else self.within)(column)
        self.within(matched, by=predicted)
        if bounded:
            self.within(matched_gold, by=gold)

    def means(self, count: int, signed: tuple[int, ...] = ()) -> None:
        """`averaging.optional_mean_statistics` of `count` keys: (has a value, value) pairs,
        values in [0, 1] ([-1, 1] for the `signed` keys)."""
        for key in range(count):
            self.count(2 * key)
            self.unit(2 * key)
            self.within(2 * key + 1, by=2 * key, low=-1.0 if key in signed else 0.0)

    def problem(self, array: np.ndarray, examples: float | None) -> str | None:
        """Why `array` (rows of statistics, or their sums: shape (..., width)) cannot hold
        statistics of this family, or None; `examples`: how many examples each row sums at
        most (None: weighted sums, unbounded)."""
        bounds = np.array(self._bounds).reshape(-1, self.width)
        units = np.array(self.units).reshape(-1, self.width)
        all_rows = array.reshape(-1, self.width)
        for start in range(0, len(all_rows), 1 << 16):  # bounded temporary memory
            rows = all_rows[start : start + (1 << 16)]
            if self.whole and not (np.floor(rows[:, self.whole]) == rows[:, self.whole]).all():
                return "a count is not a whole number"
            slack = 1e-6 * (np.abs(rows) @ np.abs(bounds).T) + 1e-9  # summation error, float32 cosines
            if ((rows @ bounds.T) < -slack).any():
                return "a value is out of its range (a negative sum, a ratio above 1, more matched than counted)"
            if examples is not None and ((rows @ units.T) > examples * (1 + 1e-9)).any():
                return f"it counts more examples than the {examples:g} it holds"
        return None


def _layout(family: str, options: Mapping[str, Any]) -> _Layout:
    """The `_Layout` of `family`'s statistics under its canonical options."""
    if family == "keyword_prf":
        layout = _Layout(8)
        layout.prf(0, whole_matches=True)
    elif family == "weighted_keyword_prf":
        layout = _Layout(11)  # matched scores / their total; nDCG, AP of examples with gold
        layout.prf(0, whole_matches=False, whole_predicted=False, bounded=bool(options["one_to_one"]))
        layout.count(8)
        layout.unit(8)
        layout.within(9, 10, by=8)
    elif family == "semantic_keyword_prf":
        layout = _Layout(16)  # thresholded counts, then soft sums of similarities in [0, 1]
        layout.prf(0, whole_matches=True)
        layout.prf(8, whole_matches=False)
    elif family == "sentiment_appropriateness":
        layout = _Layout(4)
        layout.means(2)
    elif family == "aspect_sentiment_score":
        count, span = len(options["aspects"]), options["max_rating"] - options["min_rating"]
        layout = _Layout(4 * count)  # per aspect: TP, FP, FN, squared rating error where both rate it
        for aspect in range(count):
            true_positive, false_positive, false_negative, error = range(aspect, 4 * count, count)
            layout.count(true_positive, false_positive, false_negative)
            layout.unit(true_positive, false_positive, false_negative)
            layout.within(error, by=true_positive, high=float(span**2))
    else:
        with_model = options["model"] is not None
        layout = _Layout(6 if with_model else 4)  # unique keyword and token ratios, self-similarity
        layout.means(3 if with_model else 2, signed=(2,))
    return layout


class MetricState:
    """The mergeable state of one metric family under fixed options (docs/definitions.md section 12).

    Args:
        family: "keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf",
            "sentiment_appropriateness", "aspect_sentiment_score" or "keyword_diversity".
        **options: the family function's options (checked now, before any data), except
            `return_per_example`; `bootstrap` is "multinomial" (default; with intervals the
            state keeps every example's statistics) or "poisson" (constant memory; intervals
            and paired tests independent of how the examples are split when each example has
            a key: `update(keys=...)` ids, or global positions through `update(start=...)`).

    Example:
        >>> from opinion_metrics import keyword_prf
        >>> a = MetricState("keyword_prf", match="exact").update(predictions=[["a"]], references=[["a", "b"]])
        >>> b = MetricState("keyword_prf", match="exact").update(predictions=[["c"]], references=[["c"]])
        >>> (a + b).compute() == keyword_prf([["a"], ["c"]], [["a", "b"], ["c"]], match="exact")
        True
    """

    def __init__(self, family: str, **options: Any) -> None:
        spec = get_family(family)
        if "return_per_example" in options:
            raise ValueError("a MetricState returns no per-example values: leave out return_per_example")
        spec.check_options(options)
        defaults = {name: value for name, value in spec.defaults.items() if name != "return_per_example"}
        self.family = family
        self.options: dict[str, Any] = {**defaults, **options}
        if self.poisson:  # one integer seed, so that states made apart draw the same weights
            self.options["random_state"] = poisson_seed(self.options["random_state"])
        self.n_examples = 0
        self.fingerprint = (0, 0)  # (count, sum of mixed key hashes mod 2**64): the keys seen
        self.positions: list[tuple[int, int]] = []  # Poisson: [start, stop) ranges of the position keys used
        self.sketch = np.zeros(0, dtype=np.uint64)  # the smallest distinct key words (poisson.sketch_of)
        self.sums: np.ndarray | None = None
        self.weighted: np.ndarray | None = None  # (n_resamples x m) Poisson-weighted sums
        self.swapped: np.ndarray | None = None  # (n_resamples x m) swap-sign-weighted sums
        self.rows: list[np.ndarray] = []  # multinomial intervals: every example's statistics
        self._reducer: Reducer | None = None
        self._origin: int | None = None  # random: numbers the examples added here without a key
        self._keyless = 0  # examples numbered from `_origin` so far

    # -- options ---------------------------------------------------------------------------

    @property
    def level(self) -> float | None:
        return self.options["confidence_level"]

    @property
    def poisson(self) -> bool:
        return self.options["bootstrap"] == "poisson" and self.options["confidence_level"] is not None

    @property
    def keeps_rows(self) -> bool:
        return self.options["bootstrap"] == "multinomial" and self.options["confidence_level"] is not None

    @property
    def canonical_options(self) -> dict[str, Any]:
        """The options that decide the values, as JSON values (objects by their name)."""
        spec = get_family(self.family)
        return {name: _canonical_value(self.options[name]) for name in _value_names(spec)}

    @property
    def reducer(self) -> Reducer:
        """Column sums -> values (picklable, built from the family and options alone)."""
        if self._reducer is None:
            self._reducer = get_family(self.family).reducer(self.canonical_options)
        return self._reducer

    @classmethod
    def empty_like(cls, state: MetricState) -> MetricState:
        """A state of the same family and options, without examples."""
        empty = cls.__new__(cls)
        empty.__dict__.update(
            family=state.family,
            options=dict(state.options),
            n_examples=0,
            fingerprint=(0, 0),
            positions=[],
            sketch=np.zeros(0, dtype=np.uint64),
            sums=None,
            weighted=None,
            swapped=None,
            rows=[],
            _reducer=None,
            _origin=None,
            _keyless=0,
        )
        return empty

    @classmethod
    def from_dataset(
        cls,
        dataset: Any,
        family: str,
        *,
        predictions: str = "predictions",
        references: str | None = "references",
        key: str | None = None,
        groups: str | None = None,
        num_proc: int | None = None,
        batch_size: int = 1000,
        **options: Any,
    ) -> MetricState:
        """The state of a Hugging Face `datasets.Dataset`, computed batch by batch by
        `dataset.map(batched=True, num_proc=num_proc)` (each batch becomes a serialized
        state; the states are merged in order), so one machine's cores share the work.

        Column names: `predictions`, `references` (None for a family without them), `key`
        (None: the row index, so the result equals the family function on the whole
        dataset), `groups`, and the family's other inputs through `options` by their input
        name (`texts="review"`, `scores="confidences"`); the rest of `options` are the
        family's options.

        Example:
            >>> import datasets
            >>> data = datasets.Dataset.from_dict({"predictions": [["a"], ["b"]], "references": [["a"], ["c"]]})
            >>> MetricState.from_dataset(data, "keyword_prf", match="exact", batch_size=1).compute()["f1"]
            0.5
        """
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
            state = MetricState.empty_like(template)

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

    # -- adding examples -------------------------------------------------------------------

    def update(
        self, table: Any = None, /, *, keys: Any = None, groups: Any = None, start: int | None = None, **columns: Any
    ) -> MetricState:
        """Add examples; returns the state itself.

        Columns are given by value (`predictions=[...]`, `references=...`, `texts=...`,
        `scores=...`, whatever the family takes), or, with an Arrow `RecordBatch` / `Table` or
        a pandas `DataFrame` as first argument, by column name (see `update_arrow`).

        `keys` (ints or strs, one per example, e.g. review ids) identify examples for the
        Poisson bootstrap. Without them an example's key is its position: `start` (the
        global position of the first example here) plus its index; by default `start`
        continues where this state's positions stopped, so a single state fed in order equals
        the family function. States updated apart must give `keys` or `start` for their
        intervals not to depend on the split: merging Poisson states whose position ranges
        overlap is refused. With `groups` (Poisson only), an example's key is its group: a
        group's examples share their weights. Keys and positions matter only to the Poisson
        bootstrap (the multinomial one draws from every example at once).
        """
        if table is not None:
            return self.update_arrow(table, key=keys, groups=groups, start=start, **columns)
        return self._add(columns, keys, groups, start)

    def update_arrow(
        self, table: Any, *, key: Any = None, groups: Any = None, start: int | None = None, **names: Any
    ) -> MetricState:
        """Add the rows of an Arrow `RecordBatch` or `Table` (or a pandas `DataFrame`):
        `names` maps each family input to its column name (`predictions="pred_col"`);
        `key` and `groups` name the key and group columns (None: position keys from `start`,
        as in `update`)."""
        import pyarrow as pa

        from .evaluate_support import arrow_to_lists, arrow_to_ratings

        if not isinstance(table, (pa.RecordBatch, pa.Table)):
            if hasattr(table, "to_arrow"):  # datasets.Dataset, polars
                table = table.to_arrow()
            elif hasattr(table, "columns") and hasattr(table, "iloc"):  # pandas
                table = pa.Table.from_pandas(table, preserve_index=False)
            else:
                raise TypeError(f"update_arrow takes an Arrow RecordBatch or Table, got {type(table).__name__}")
        spec = get_family(self.family)
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
                raise ValueError(f"{self.family} takes no input {name!r}; its inputs: {', '.join(kinds)}")
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
        return self._add(values, keys, group_column, start)

    def _add(self, columns: dict[str, Any], keys: Any, groups: Any, start: int | None = None) -> MetricState:
        if any(isinstance(value, ObjectOption) for value in self.options.values()):
            raise ValueError(
                "this state was loaded from bytes with an object option (a function or a model): "
                "it can merge and compute, but not add examples"
            )
        if keys is not None and groups is not None:
            raise ValueError("give keys or groups, not both: with groups, an example's key is its group")
        if start is not None and (keys is not None or groups is not None):
            raise ValueError("start numbers examples that have no keys or groups: give start, or keys, or groups")
        if start is not None and (isinstance(start, bool) or not isinstance(start, numbers.Integral) or start < 0):
            raise ValueError(
                f"start must be a non-negative int (the global position of the first example), got {start!r}"
            )
        if groups is not None and self.keeps_rows:
            raise ValueError(
                'groups resample a group\'s examples together only with bootstrap="poisson"; the multinomial '
                "bootstrap draws examples one by one, so groups would be ignored"
            )
        if keys is not None and _length(keys) is None:  # a generator: read once, named by position
            keys = list(keys)
        if groups is not None and _length(groups) is None:
            groups = list(groups)
        given = [value for value in (*columns.values(), keys, groups) if value is not None]
        if "predictions" in columns and all(_length(value) == 0 for value in given):
            return self  # an empty batch (an engine's empty partition) adds nothing
        matrix, _ = statistics(self.family, self.options, **columns)
        count = matrix.shape[0]
        if self.sums is not None and matrix.shape[1] != self.sums.shape[0]:
            raise ValueError(f"these examples have {matrix.shape[1]} statistics, the state {self.sums.shape[0]}")
        positions: list[tuple[int, int]] = []
        hashes = None  # the Poisson bootstrap's keys
        if keys is not None or groups is not None:
            name = "groups" if groups is not None else "keys"
            hashes = key_hashes(groups if groups is not None else keys, name)
            if len(hashes) != count:
                raise ValueError(f"{name} has {len(hashes)} entries but there are {count} examples")
        elif self.poisson:
            if start is None:
                start = self.positions[-1][1] if self.positions else self.n_examples
            positions = [(int(start), int(start) + count)]
            overlap = _overlap(self.positions, positions)
            if overlap is not None:
                raise ValueError(
                    f"positions {overlap[0]}..{overlap[1] - 1} were already used by this state: "
                    "give start (the global position of the first example) or keys"
                )
            hashes = np.arange(start, start + count, dtype=np.uint64)
        # What identifies each example: its key or position; a group's examples, and those
        # without a key, are numbered from this state's random origin.
        if hashes is not None and groups is None:
            words = key_words(hashes)
            if keys is not None:
                _refuse_repeated_keys(words, keys)
        else:
            if self._origin is None:
                self._origin = int.from_bytes(os.urandom(8), "little")
            words = keyless_words(self._origin, self._keyless, count)
        sketch = merge_sketches(self.sketch, sketch_of(words))
        if counted_twice(sketch, self.n_examples + count):
            raise ValueError(
                f"these {count} examples share keys with the {self.n_examples} examples already in this "
                f"{self.family} state ({_distinct_keys(sketch)} distinct keys for {self.n_examples + count} "
                "examples): an example would be counted twice; give each example its own key"
            )
        if self.poisson:
            weighted, swapped = resample_sums(matrix, hashes, self.options["random_state"], self.options["n_resamples"])
            self.weighted = weighted if self.weighted is None else self.weighted + weighted
            self.swapped = swapped if self.swapped is None else self.swapped + swapped
            count_seen, total = key_fingerprint(key_words(hashes) if groups is not None else words)
            self.fingerprint = (self.fingerprint[0] + count_seen, (self.fingerprint[1] + total) % 2**64)
            self.positions = _union(self.positions, positions)
        if hashes is None or groups is not None:
            self._keyless += count
        self.sketch = sketch
        if self.keeps_rows:
            self.rows.append(matrix)
        sums = matrix.sum(axis=0)
        self.sums = sums if self.sums is None else self.sums + sums
        self.n_examples += count
        return self

    # -- merging ---------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        """Raise `ValueError` naming what differs unless `other` is a state of the same
        family and options (objects without an explicit name: the same object)."""
        if not isinstance(other, MetricState):
            raise TypeError(f"a MetricState merges with another MetricState, got {type(other).__name__}")
        if other.family != self.family:
            raise ValueError(f"cannot merge a {self.family} state with a {other.family} state")
        mine, theirs = self.canonical_options, other.canonical_options
        differing = [f"{name} ({mine[name]!r} vs {theirs[name]!r})" for name in mine if mine[name] != theirs[name]]
        if differing:
            seeds = ""
            if self.poisson and mine["random_state"] != theirs["random_state"]:
                seeds = (
                    "; random_state=None draws a new seed for each state: give every state the same integer "
                    "random_state (e.g. random_state=0) to merge them"
                )
            raise ValueError(f"cannot merge {self.family} states with different options: {', '.join(differing)}{seeds}")
        # An object without an explicit name is described by its type: only the same object is the same option.
        unnamed = [
            name for name in mine if isinstance(mine[name], dict) and self.options[name] is not other.options[name]
        ]
        if unnamed:
            raise ValueError(
                f"cannot merge {self.family} states whose option {', '.join(unnamed)} holds different objects "
                f"({mine[unnamed[0]]['object']}): give both states the same object (also to from_bytes), "
                "or an object with an explicit name (a model name, PrecomputedEncoder(name=...))"
            )
        if self.sums is not None and other.sums is not None and self.sums.shape != other.sums.shape:
            raise ValueError(f"cannot merge states of {self.sums.shape[0]} and {other.sums.shape[0]} statistics")

    def merge(self, other: MetricState) -> MetricState:
        """A new state holding the examples of both (the order matters only for the
        multinomial bootstrap, which draws from the rows in order). Poisson states that both
        numbered examples by the same positions are refused (see `update`)."""
        self.check_mergeable(other)
        overlap = _overlap(self.positions, other.positions)
        if overlap is not None:
            raise ValueError(
                f"cannot merge {self.family} states that both numbered examples by position {overlap[0]}: their "
                "intervals would depend on how the examples were split; give update keys= (example ids) or "
                "start= (the global position of the batch's first example)"
            )
        merged = MetricState.empty_like(self)
        merged.n_examples = self.n_examples + other.n_examples
        merged.fingerprint = (
            self.fingerprint[0] + other.fingerprint[0],
            (self.fingerprint[1] + other.fingerprint[1]) % 2**64,
        )
        merged.positions = _union(self.positions, other.positions)
        merged.sketch = merge_sketches(self.sketch, other.sketch)
        if counted_twice(merged.sketch, merged.n_examples):
            raise ValueError(
                f"cannot merge {self.family} states of {self.n_examples} and {other.n_examples} examples: together "
                f"they hold {_distinct_keys(merged.sketch)} distinct example keys, so an example would be counted "
                "twice (a state added to itself or to a copy of itself, or states given the same keys); give each "
                "example its own key"
            )
        for name in ("sums", "weighted", "swapped"):
            mine, theirs = getattr(self, name), getattr(other, name)
            parts = [part for part in (mine, theirs) if part is not None]
            setattr(merged, name, None if not parts else parts[0] + parts[1] if len(parts) == 2 else parts[0].copy())
        merged.rows = [*self.rows, *other.rows]
        return merged

    def __add__(self, other: Any) -> MetricState:
        return self.merge(other)

    def __radd__(self, other: Any) -> MetricState:
        if isinstance(other, numbers.Integral) and other == 0:  # sum(states)
            return self.merge(MetricState.empty_like(self))
        return self.merge(other)

    # -- values ----------------------------------------------------------------------------

    def compute(self) -> dict[str, float]:
        """The dict the family function returns on every example this state has seen
        (the options' intervals included)."""
        if self.sums is None:
            raise ValueError(f"this {self.family} state has no examples: update it first")
        if counted_twice(self.sketch, self.n_examples):
            raise ValueError(
                f"this {self.family} state holds {self.n_examples} examples but {_distinct_keys(self.sketch)} "
                "distinct example keys: an example is counted twice"
            )
        reducer = self.reducer
        if self.keeps_rows:
            if isinstance(self.options["random_state"], ObjectOption):
                raise ValueError("this state's random_state was an object in the process that wrote it")
            statistics_rows = np.asfortranarray(np.vstack(self.rows))
            result = _point(reducer, statistics_rows.sum(axis=0))
            intervals = bootstrap_intervals(
                statistics_rows,
                reducer,
                confidence_level=self.level,
                n_resamples=self.options["n_resamples"],
                random_state=self.options["random_state"],
            )
            return add_intervals(result, intervals)
        result = _point(reducer, self.sums)
        if not self.poisson:
            return result
        return add_intervals(result, resampled_intervals(self.sums, [self.weighted], reducer, self.level))

    # -- bytes -----------------------------------------------------------------------------

    def _arrays(self) -> list[tuple[str, np.ndarray]]:
        """The statistics arrays, by name (none without examples)."""
        if self.sums is None:
            return []
        if self.keeps_rows:
            return [("rows", np.vstack(self.rows))]
        arrays = [("sums", self.sums)]
        if self.poisson:
            arrays += [("weighted", self.weighted), ("swapped", self.swapped)]
        return arrays

    def to_bytes(self) -> bytes:
        """The state in the declared layout of this module's docstring (no pickle)."""
        arrays = [("sketch", self.sketch), *self._arrays()]
        header = {
            "family": self.family,
            "options": self.canonical_options,
            "n_examples": self.n_examples,
            "fingerprint": list(self.fingerprint),
            "positions": [list(span) for span in self.positions],
            "arrays": [{"name": name, "shape": list(array.shape)} for name, array in arrays],
        }
        encoded = json.dumps(header, sort_keys=True, allow_nan=False).encode("utf-8")
        body = b"".join(
            [MAGIC, _PREFIX.pack(FORMAT_VERSION, len(encoded)), encoded]
            + [np.ascontiguousarray(array, dtype=_DTYPES[name]).tobytes() for name, array in arrays]
        )
        return body + hashlib.sha256(body).digest()

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, **objects: Any) -> MetricState:
        """A state from `to_bytes` output. The bytes are untrusted input: anything else
        (corrupted, truncated, foreign, another version, forged with a valid checksum: a
        header that does not fit the family's declaration or its arrays, statistics no
        examples could give) is a `ValueError` ("not a valid MetricState: ..."), raised
        before anything is allocated or computed. Object options (functions, models) can be
        given again by name in `objects`."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"MetricState.from_bytes takes bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) < len(MAGIC) + _PREFIX.size + _DIGEST_SIZE or not data.startswith(MAGIC):
            raise ValueError("not a MetricState: the bytes do not start with the MetricState magic header")
        version, header_size = _PREFIX.unpack_from(data, len(MAGIC))
        if version != FORMAT_VERSION:
            raise ValueError(
                f"MetricState format version {version} is not supported (this library reads version {FORMAT_VERSION})"
            )
        body, digest = data[:-_DIGEST_SIZE], data[-_DIGEST_SIZE:]
        if hashlib.sha256(body).digest() != digest:
            raise ValueError("corrupted or truncated MetricState: its checksum does not match its contents")
        start = len(MAGIC) + _PREFIX.size
        if header_size > min(_MAX_HEADER_BYTES, len(body) - start):
            raise _invalid(f"its header claims {header_size} bytes")
        header = _parse_header(body[start : start + header_size])
        state = cls._from_header(header, objects)
        payload = memoryview(body)[start + header_size :]
        state._load_arrays(header["arrays"], payload)
        return state

    @classmethod
    def _from_header(cls, header: Any, objects: Mapping[str, Any]) -> MetricState:
        if not isinstance(header, dict) or set(header) != _HEADER_KEYS:
            raise _invalid(f"the header must have exactly the keys {sorted(_HEADER_KEYS)}")
        family = header["family"]
        if not isinstance(family, str):
            raise _invalid(f"family {family!r}")
        try:
            spec = get_family(family)
        except ValueError as error:
            raise _invalid(str(error)) from None
        options = header["options"]
        names = _value_names(spec)
        if not isinstance(options, dict) or sorted(options) != sorted(names):
            raise _invalid(f"the options of {family} are {', '.join(names)}")
        decoded = {name: _from_canonical(name, value) for name, value in options.items()}
        for name, value in objects.items():
            if name not in decoded:
                raise ValueError(f"{family} has no option {name!r}")
            if _canonical_value(value) != options[name]:
                raise ValueError(f"{name}: the given object is {_canonical_value(value)}, the state's {options[name]}")
            decoded[name] = value
        try:
            state = cls(family, **{k: v for k, v in decoded.items() if not isinstance(v, ObjectOption)})
        except (TypeError, ValueError) as error:
            raise _invalid(str(error)) from None
        state.options.update(decoded)
        canonical = state.canonical_options
        differing = [
            name
            for name in names
            if canonical[name] != options[name] or type(canonical[name]) is not type(options[name])
        ]
        if state.poisson and not isinstance(state.options["random_state"], int):
            differing.insert(0, "random_state")  # a Poisson state's seed is an int
        if differing:  # e.g. 5.0 for an int option, or a list where a str is
            raise _invalid(f"option {differing[0]} {_short(options[differing[0]])} is not in its canonical form")
        count, fingerprint = header["n_examples"], header["fingerprint"]
        if not _is_count(count):
            raise _invalid(f"n_examples {count!r}")
        if (
            not isinstance(fingerprint, list)
            or len(fingerprint) != 2
            or not all(_is_count(value) for value in fingerprint)
            or fingerprint[1] >= 2**64
            or fingerprint[0] != (count if state.poisson else 0)
            or (fingerprint[0] == 0 and fingerprint[1] != 0)
        ):
            raise _invalid(f"fingerprint {fingerprint!r} for {count} examples")
        positions = header["positions"]
        if (
            not isinstance(positions, list)
            or not all(isinstance(span, list) and len(span) == 2 and all(map(_is_count, span)) for span in positions)
            or not all(start < stop for start, stop in positions)
            or any(positions[i][1] >= positions[i + 1][0] for i in range(len(positions) - 1))
            or (positions and not state.poisson)
            or sum(stop - start for start, stop in positions) > count
        ):
            raise _invalid(f"positions {_short(positions)} for {count} examples")
        state.n_examples, state.fingerprint = count, (fingerprint[0], fingerprint[1])
        state.positions = [(start, stop) for start, stop in positions]
        return state

    def _load_arrays(self, declared: Any, payload: memoryview) -> None:
        n_resamples = self.options["n_resamples"]
        statistics_names = (
            ["rows"] if self.keeps_rows else ["sums", "weighted", "swapped"] if self.poisson else ["sums"]
        )
        expected = ["sketch", *([] if self.n_examples == 0 else statistics_names)]
        if not isinstance(declared, list) or not all(
            isinstance(entry, dict)
            and set(entry) == {"name", "shape"}
            and isinstance(entry["shape"], list)
            and all(_is_count(size) for size in entry["shape"])
            for entry in declared
        ):
            raise _invalid("the arrays must be declared as {name, shape} entries")
        names = [entry["name"] for entry in declared]
        if names != expected:
            raise _invalid(f"arrays {names}, expected {expected} for {self.n_examples} examples and these options")
        layout = _layout(self.family, self.canonical_options)
        width = layout.width
        wanted = {
            "sketch": (min(SKETCH_SIZE, self.n_examples),),
            "rows": (self.n_examples, width),
            "sums": (width,),
            "weighted": (n_resamples, width),
            "swapped": (n_resamples, width),
        }
        shapes = [tuple(entry["shape"]) for entry in declared]
        for name, shape in zip(names, shapes):
            if name == "sketch" and len(shape) == 1 and shape[0] <= wanted["sketch"][0]:
                continue  # fewer distinct keys than examples: refused below, naming the counts
            if shape != wanted[name]:
                raise _invalid(
                    f"array {name} has shape {list(shape)}; {self.family} with these options has "
                    f"{list(wanted[name])} for {self.n_examples} examples"
                )
        sizes = [math.prod(shape) for shape in shapes]
        if 8 * sum(sizes) != len(payload):
            raise _invalid(f"the header declares {8 * sum(sizes)} bytes of arrays, there are {len(payload)}")
        arrays, offset = {}, 0
        for name, shape, size in zip(names, shapes, sizes):
            array = np.frombuffer(payload, dtype=_DTYPES[name], count=size, offset=offset).reshape(shape)
            arrays[name] = array.astype(_DTYPES[name].newbyteorder("="))
            offset += 8 * size
        sketch = arrays.pop("sketch")
        if len(sketch) > 1 and not (sketch[1:] > sketch[:-1]).all():
            raise _invalid("its key sketch is not sorted")
        if counted_twice(sketch, self.n_examples):
            raise _invalid(f"its {self.n_examples} examples have {_distinct_keys(sketch)} distinct keys")
        for name, array in arrays.items():
            if not np.isfinite(array).all():
                raise _invalid(f"array {name} has non-finite values")
            problem = layout.problem(array, 1 if name == "rows" else self.n_examples if name == "sums" else None)
            if problem is not None:
                raise _invalid(f"array {name} cannot hold {self.family} statistics: {problem}")
        if self.poisson and arrays:  # the sums less each swap-sign sum are sums over examples too
            problem = layout.problem(arrays["sums"] - arrays["swapped"], None)
            if problem is not None:
                raise _invalid(f"arrays sums and swapped disagree: {problem}")
        self.sketch = sketch
        if "rows" in arrays:
            self.rows = [arrays["rows"]]
            self.sums = arrays["rows"].sum(axis=0)
        else:
            for name, array in arrays.items():
                setattr(self, name, array)

    # -- pickling --------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_reducer": None, "_origin": None, "_keyless": 0}  # a copy numbers its own examples

    def __repr__(self) -> str:
        return f"MetricState({self.family!r}, n_examples={self.n_examples}, options={self.canonical_options})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetricState):
            return NotImplemented
        mine, theirs = self._arrays(), other._arrays()
        return (
            self.family == other.family
            and self.canonical_options == other.canonical_options
            and self.n_examples == other.n_examples
            and self.fingerprint == other.fingerprint
            and self.positions == other.positions
            and np.array_equal(self.sketch, other.sketch)
            and len(mine) == len(theirs)
            and all(a[0] == b[0] and np.array_equal(a[1], b[1]) for a, b in zip(mine, theirs))
        )

    __hash__ = None  # type: ignore[assignment]


_DTYPES = {name: np.dtype("<f8") for name in ("rows", "sums", "weighted", "swapped")} | {"sketch": np.dtype("<u8")}


def _invalid(reason: str) -> ValueError:
    return ValueError(f"not a valid MetricState: {reason}")


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_DIGITS:
        raise _invalid(f"its header holds an integer of {len(text)} digits")
    return int(text)


def _refuse_constant(text: str) -> None:
    raise _invalid(f"its header holds {text}")


def _depth(value: Any) -> int:
    """How deep a parsed JSON value nests (at most `_MAX_HEADER_DEPTH` + 1 levels are visited)."""
    level, layer = 0, [value]
    while layer and level <= _MAX_HEADER_DEPTH:
        level += 1
        layer = [
            item
            for container in layer
            if isinstance(container, (list, dict))
            for item in (container.values() if isinstance(container, dict) else container)
        ]
    return level + bool(layer)


def _parse_header(raw: bytes) -> Any:
    """The header's JSON: integers of at most `_MAX_DIGITS` digits, no NaN or infinity, at most
    `_MAX_HEADER_DEPTH` levels deep."""
    try:
        header = json.loads(raw.decode("utf-8"), parse_int=_bounded_int, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _invalid(f"unreadable header ({error})") from None
    except RecursionError:
        raise _invalid(f"its header nests more than {_MAX_HEADER_DEPTH} levels") from None
    if _depth(header) > _MAX_HEADER_DEPTH:
        raise _invalid(f"its header nests more than {_MAX_HEADER_DEPTH} levels")
    return header


def _length(value: Any) -> int | None:
    try:
        return len(value)
    except TypeError:  # e.g. a generator: the family function checks it
        return None


def _overlap(first: list[tuple[int, int]], second: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The first overlap of two sorted lists of disjoint [start, stop) ranges, or None."""
    i = j = 0
    while i < len(first) and j < len(second):
        low, high = max(first[i][0], second[j][0]), min(first[i][1], second[j][1])
        if low < high:
            return low, high
        if first[i][1] <= second[j][1]:
            i += 1
        else:
            j += 1
    return None


def _union(first: list[tuple[int, int]], second: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The sorted, coalesced union of two lists of disjoint [start, stop) ranges."""
    union: list[tuple[int, int]] = []
    for start, stop in sorted([*first, *second]):
        if union and start <= union[-1][1]:
            union[-1] = (union[-1][0], max(union[-1][1], stop))
        else:
            union.append((start, stop))
    return union


def _distinct_keys(sketch: np.ndarray) -> str:
    """The number of distinct keys behind a sketch, in words ("5", "about 1,200")."""
    distinct, exact = distinct_count(sketch)
    return f"{distinct:.0f}" if exact else f"about {distinct:,.0f}"


def _refuse_repeated_keys(words: np.ndarray, keys: Any) -> None:
    """A `ValueError` naming the first example of one batch whose key an earlier one has, and that one."""
    _, first_of_word, inverse = np.unique(words, return_index=True, return_inverse=True)
    first_with_key = first_of_word[inverse]
    repeated = np.flatnonzero(first_with_key != np.arange(len(words)))
    if len(repeated):
        second = int(repeated[0])
        first = int(first_with_key[second])
        raise ValueError(
            f"keys: examples {first} and {second} have the same key {_key_at(keys, second)!r}: each example needs "
            "its own key (for examples that share their resampling weights on purpose, give groups= instead)"
        )


def _key_at(keys: Any, index: int) -> Any:
    """Entry `index` of a column of keys (a list, an array, a pandas Series, an Arrow array), by position."""
    if hasattr(keys, "iloc"):
        keys = keys.iloc
    value = keys[index]
    return value.as_py() if hasattr(value, "as_py") else value.item() if isinstance(value, np.generic) else value


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _point(reducer: Callable[[np.ndarray], Mapping[str, Any]], sums: np.ndarray) -> dict[str, float]:
    """Each defined value as a plain float (NaN: undefined, absent), as the family functions give them."""
    return {key: float(value) for key, value in reducer(sums).items() if np.isfinite(value)}
