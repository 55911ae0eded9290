"""Corpora kept prepared across calls: the same rows evaluated again (both lexical families,
every `top_k`, a session's repeated calls) are compared with a frozen snapshot of their rows
instead of being prepared again.

The cache is keyed by the options and the identity of the inputs' first rows. A snapshot is
taken from the second call that looks the same, so that a call made once pays nothing; with
the C helper, from the first call of a corpus of at most `_FIRST_CALL_ITEMS` keywords (a tuple
of their pointers: microseconds). `look_up` says what the cache holds for a call's rows;
`Lookup.keep` keeps the corpus prepared from them.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from .._native import helper
from ..io.rows import paused_gc
from .encoding import FrozenRows

if TYPE_CHECKING:
    from .preparation import PreparedCorpus

# Taken by whatever changes `_PREPARED` or `_SEEN` (an iterator over a dict that another
# thread resizes raises).
_CACHE_LOCK = threading.Lock()
_PREPARED: dict[tuple[Any, ...], tuple[_Snapshot, PreparedCorpus]] = {}  # corpora kept, with their snapshots
_SEEN: dict[tuple[Any, ...], bool] = {}  # calls seen once
_SEEN_ENTRIES = 64
_PREPARED_ENTRIES = 4
_PREPARED_ROWS = 1 << 16  # examples per corpus at most
_PREPARED_ITEMS = 1 << 20  # keywords (and scores) copied per corpus at most
_FIRST_CALL_ITEMS = 1 << 17


def clear_prepared_corpora() -> None:
    """Forget the corpora kept prepared for a call on the same rows (and let go of those rows)."""
    with _CACHE_LOCK:
        _PREPARED.clear()
        _SEEN.clear()


@dataclass
class Lookup:
    """What the cache holds for one call's rows: the corpus kept for them (`kept`), or the
    same rows kept prepared without scores (`plain`, the other lexical family's), and the
    snapshot to keep the corpus under (None: not kept)."""

    key: tuple[Any, ...] | None = None
    kept: PreparedCorpus | None = None
    plain: PreparedCorpus | None = None
    snapshot: _Snapshot | None = None

    def rows(self, *inputs: Sequence[Any] | None) -> tuple[Sequence[Any] | None, ...]:
        """The rows to prepare: with a snapshot, its frozen rows (another thread may change a
        live row, and restore it, meanwhile: the corpus kept must be the one the snapshot
        stands for), else `inputs` as given."""
        if self.snapshot is None:
            return inputs
        frozen = self.snapshot.frozen
        return (*frozen[:2], None if inputs[2] is None else frozen[2])

    def keep(self, corpus: PreparedCorpus, scored: bool) -> None:
        """Keep `corpus` with the snapshot, whatever the live rows do meanwhile (a later call
        compares them with it); with scores only if all are floats (immutable: a 0-d array or
        a tensor can change in place, under the same identity)."""
        if self.snapshot is not None and (not scored or corpus.predictions.has_flat_scores):
            _put_bounded(_PREPARED, self.key, (self.snapshot, corpus), _PREPARED_ENTRIES)


def look_up(
    given: tuple[Any, ...],
    predictions: Sequence[Any],
    references: Sequence[Any],
    scores: Sequence[Any] | None,
    options: tuple[Any, ...],
) -> Lookup:
    """The cache's `Lookup` for checked rows (`given`: the inputs before they were checked)
    prepared under `options` (normalize, stemmer, clip_scores, keep_originals). Kept across
    calls: rows given as lists or tuples (others are converted to new lists each call), under
    a built-in normalization (a callable may not give the same forms again)."""
    if not isinstance(options[0], str) or not all(map(operator.is_, given, (predictions, references, scores))):
        return Lookup()
    first_rows = (id(predictions[0]) if predictions else None, id(references[0]) if references else None)
    key = _corpus_key(predictions, first_rows, scores, *options)
    kept = _PREPARED.get(key)
    if kept is not None and kept[0].holds(predictions, references, scores):
        return Lookup(key, kept=kept[1])
    plain = None
    if scores is not None:  # the same rows kept prepared without scores (the other family)
        normalize, stemmer, _, keep_originals = options
        plain = _PREPARED.get(_corpus_key(predictions, first_rows, None, normalize, stemmer, False, keep_originals))
        if plain is not None and not plain[0].holds(predictions, references, None):
            plain = None
    snapshot = None
    if len(predictions) <= _PREPARED_ROWS:  # the rows' snapshot, taken before they are read
        base = None if plain is None else plain[0]  # its predictions and references: just compared
        snapshot = _Snapshot.of(predictions, references, scores, first_call=True, plain=base)  # small: in C
        if snapshot is None and _seen_before(key):  # a second call that looks the same
            snapshot = _Snapshot.of(predictions, references, scores, plain=base)
        elif snapshot is None:
            _put_bounded(_SEEN, key, True, _SEEN_ENTRIES)
    # The plain corpus stands for the snapshot's rows only if they were frozen by its snapshot.
    if (
        plain is not None
        and snapshot is not None
        and not all(map(operator.is_, snapshot.frozen[:2], plain[0].frozen[:2]))
    ):
        plain = None  # the snapshot read the live rows again (another path): prepared from them
    return Lookup(key, plain=None if plain is None else plain[1], snapshot=snapshot)


def _corpus_key(
    predictions: Sequence[Any],
    first_rows: tuple[int | None, int | None],
    scores: Sequence[Any] | None,
    *options: Any,
) -> tuple[Any, ...]:
    """The key of a kept corpus: its size, the identity of its first rows (predictions,
    references, scores) and the preparation options."""
    first_score = id(scores[0]) if scores else None
    return (len(predictions), (*first_rows, first_score), *options, scores is None)


def _put_bounded(cache: dict[Any, Any], key: Any, value: Any, entries: int) -> None:
    """`cache[key] = value`, the oldest entries dropped to keep at most `entries`."""
    with _CACHE_LOCK:
        while len(cache) >= entries:
            cache.pop(next(iter(cache)))
        cache[key] = value


def _seen_before(key: Any) -> bool:
    """Whether a call with `key` was seen (and forget it)."""
    with _CACHE_LOCK:
        return _SEEN.pop(key, False)


class _Snapshot:
    """The rows of a corpus's inputs as they were when taken, frozen: the row objects in order
    (`rows`) and each row's items (`frozen`: `FrozenRows`, by the C helper's `snapshot_rows`,
    or a copy of each list row; `held` items in all). Only rows of exact str and float
    items are taken (a str subclass may normalize differently at each call). The corpus is
    prepared from `frozen`, never from the live rows, so what is kept is what `holds` compares."""

    def __init__(
        self,
        rows: list[tuple[Any, ...]],
        frozen: list[Sequence[Any]],
        held: int,
        unchanged: Callable[..., bool] | None = None,
    ) -> None:
        self.rows = rows
        self.frozen = frozen
        self.held = held  # items frozen in all
        self.unchanged = unchanged  # the C helper's `rows_unchanged` for its snapshots

    @classmethod
    def of(
        cls, *inputs: Sequence[Any] | None, first_call: bool = False, plain: _Snapshot | None = None
    ) -> _Snapshot | None:
        """The snapshot of `inputs` (None entries allowed), or None when a row is not a list
        or tuple of exact str and float items or the rows hold more than `_PREPARED_ITEMS`
        items; for a `first_call`, only the C helper's, of at most `_FIRST_CALL_ITEMS` items.
        `plain`: a snapshot of the same first two inputs (predictions and references kept
        without scores) that was just found to hold them: theirs are taken from it, when it
        was made the way this one is."""
        speedups = helper()
        if speedups is not None:
            rows_of, frozen_of, held, most = [], [], 0, _FIRST_CALL_ITEMS if first_call else _PREPARED_ITEMS
            if plain is not None and plain.unchanged is not None:
                rows_of, frozen_of, held = plain.rows[:2], plain.frozen[:2], plain.held
            for rows in inputs[len(rows_of) :]:
                rows = () if rows is None else tuple(rows)
                taken = speedups.snapshot_rows(rows, most - held)
                if taken is None:
                    return None
                if taken is False:  # too many (or a gold list repeated, but not row after row: copied once below)
                    break
                held += len(taken[0])
                rows_of.append(rows)
                frozen_of.append(FrozenRows(*taken, rows, speedups))
            else:
                return cls(rows_of, frozen_of, held, speedups.rows_unchanged)
        if first_call:
            return None
        rows_of, frozen_of, held = [], [], 0
        if plain is not None and plain.unchanged is None:
            rows_of, frozen_of, held = plain.rows[:2], plain.frozen[:2], plain.held
        for rows in inputs[len(rows_of) :]:
            rows = () if rows is None else tuple(rows)
            distinct = {id(row): row for row in rows}
            if not set(map(type, distinct.values())) <= {list, tuple}:
                return None
            held += sum(map(len, distinct.values()))
            if held > _PREPARED_ITEMS:
                return None
            with paused_gc():  # many small tuples
                copies = {key: tuple(row) for key, row in distinct.items()}  # (a tuple is its own copy)
            if not set(map(type, chain.from_iterable(copies.values()))) <= {str, float}:
                return None
            rows_of.append(rows)
            frozen_of.append([copies[id(row)] for row in rows])
        return cls(rows_of, frozen_of, held)

    def holds(self, *inputs: Sequence[Any] | None) -> bool:
        """Whether `inputs` are the same row objects, in the same order, each holding the same
        item objects as when the snapshot was taken."""
        if self.unchanged is not None:
            return all(
                self.unchanged(() if rows is None else rows, kept, frozen.items, frozen.sizes)
                for rows, kept, frozen in zip(inputs, self.rows, self.frozen)
            )
        for rows, kept, frozen in zip(inputs, self.rows, self.frozen):
            rows = () if rows is None else rows
            if len(rows) != len(kept) or not all(map(operator.is_, rows, kept)):
                return False
            lists = [(row, copy) for row, copy in zip(kept, frozen) if row is not copy]  # list rows
            if list(map(len, (row for row, _ in lists))) != list(map(len, (copy for _, copy in lists))):
                return False
            items = chain.from_iterable(row for row, _ in lists)
            if not all(map(operator.is_, items, chain.from_iterable(copy for _, copy in lists))):
                return False
        return True
