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

`to_bytes()` and `MetricState.from_bytes` write and read a declared, versioned layout
(`wire`: no pickle).
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..families.options import INTERVAL_OPTIONS
from ..families.registry import Reducer, get_family
from ..stats.poisson import (
    counted_twice,
    key_fingerprint,
    key_hashes,
    key_words,
    keyless_words,
    merge_sketches,
    resample_sums,
    sketch_of,
)
from ..stats.resampling import add_intervals, bootstrap_intervals, poisson_seed, resampled_intervals
from . import wire
from .from_arrow import arrow_columns, from_dataset
from .layout import _value_names
from .options import ObjectOption, _canonical_value
from .wire import (
    _distinct_keys,
    _length,
)

# Columns of a table given to `update` by name: each family input, plus the keys and groups.
_EXTRA_COLUMNS = ("key", "groups")


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
        return from_dataset(cls, dataset, family, predictions, references, key, groups, num_proc, batch_size, options)

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
        values, keys, group_column = arrow_columns(self.family, table, key, groups, names)
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

    def named_arrays(self) -> list[tuple[str, np.ndarray]]:
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
        """The state in a declared, versioned layout (`state.wire`; no pickle)."""
        return wire.write(self)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, **objects: Any) -> MetricState:
        """A state from `to_bytes` output. The bytes are untrusted input: anything else
        (corrupted, truncated, foreign, another version, forged with a valid checksum: a
        header that does not fit the family's declaration or its arrays, statistics no
        examples could give) is a `ValueError` ("not a valid MetricState: ..."), raised
        before anything is allocated or computed. Object options (functions, models) can be
        given again by name in `objects`."""
        return wire.read(cls, data, objects)

    # -- pickling --------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_reducer": None, "_origin": None, "_keyless": 0}  # a copy numbers its own examples

    def __repr__(self) -> str:
        return f"MetricState({self.family!r}, n_examples={self.n_examples}, options={self.canonical_options})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetricState):
            return NotImplemented
        mine, theirs = self.named_arrays(), other.named_arrays()
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


def _point(reducer: Callable[[np.ndarray], Mapping[str, Any]], sums: np.ndarray) -> dict[str, float]:
    """Each defined value as a plain float (NaN: undefined, absent), as the family functions give them."""
    return {key: float(value) for key, value in reducer(sums).items() if np.isfinite(value)}
