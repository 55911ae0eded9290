"""Keyword preparation (docs/definitions.md section 1): validation, normalization, de-duplication.

A corpus is prepared once into integer ids: every distinct normalized keyword gets one id
in a vocabulary shared by predictions and references, so exact matching is id equality and
every later step (match relations, embeddings, sentiment) runs once per distinct string.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any

import numpy as np

from .._native import helper
from ..io.rows import repeated_rows
from .corpus_cache import look_up
from .encoding import (
    FrozenRows,
    _row_groups,
    encode_floats,
    encode_lists,
    int64_arrays,
    list_keys,
    number_strings,
    sort_with_payload,
)
from .normalization import NormalizeOption, _Normalizer, make_normalizer, plain_keywords, plain_str
from .validation import (
    check_corpus,
    check_keyword,
    check_keyword_list,
    check_same_length,
    check_score,
    describe,
    lone_surrogate,
)


class Vocabulary:
    """Interns normalized keywords to ids; `strings[id]` is the normalized keyword."""

    def __init__(self, normalizer: _Normalizer) -> None:
        self._normalizer = normalizer
        self._raw_to_id: dict[str, int] = {}
        # Id + 1 of each normalized form, in order of first appearance (a C-level counter);
        # the empty form is 0, id -1 (dropped).
        self._normalized_to_id: defaultdict[str, int] = defaultdict()
        self._normalized_to_id.default_factory = self._normalized_to_id.__len__
        self._normalized_to_id[""] = 0
        self.strings: list[str] = []
        self.known_id = self._raw_to_id.get  # id of an already seen raw keyword, else None

    def intern(self, raw: Any) -> int | None:
        """Id of a keyword's normalized form; -1 when that is empty; None if not a str. A str
        subclass enters by its value, as an exact str (its own methods are never called)."""
        if not issubclass(type(raw), str):
            return None
        raw = plain_str(raw)
        keyword_id = self._raw_to_id.get(raw)
        if keyword_id is None and not lone_surrogate(raw):  # else reported by check_keyword
            normalized = self._normalizer(raw)
            if not isinstance(normalized, str):
                raise ValueError(f"normalize returned {describe(normalized)} for keyword {raw!r}; it must return a str")
            normalized = str.__str__(normalized)  # a plain str, also from a subclass
            keyword_id = self._normalized_to_id[normalized] - 1
            if keyword_id == len(self.strings):
                self.strings.append(normalized)
            self._raw_to_id[raw] = keyword_id
        return keyword_id

    def ids_of(self, raws: list[str]) -> np.ndarray | None:
        """`[intern(raw) for raw in raws]` for distinct strings, as an array: normalized in
        one batch (`_Normalizer.many`), interned without a Python loop. None when a string
        not normalized before holds a lone surrogate (the per-row path names it)."""
        normalized_forms = self._normalizer.many(raws)
        if normalized_forms is None:
            return None
        if not set(map(type, normalized_forms)) <= {str}:  # a callable's: a str subclass is taken as a str
            wrong = next(((r, n) for r, n in zip(raws, normalized_forms) if not isinstance(n, str)), None)
            if wrong is not None:
                raw, normalized = wrong
                raise ValueError(f"normalize returned {describe(normalized)} for keyword {raw!r}; it must return a str")
            normalized_forms = list(map(str.__str__, normalized_forms))
        to_id = self._normalized_to_id
        ids = number_strings(normalized_forms, to_id) - 1
        if len(to_id) - 1 > len(self.strings):
            self.strings.extend(islice(to_id, len(self.strings) + 1, None))
        return ids


class PreparedSide:
    """One side (predictions or references) of a prepared corpus.

    `ids[i]` holds example i's keyword ids (empty and duplicate keywords dropped, order
    kept), `scores[i]` their scores (or None), `originals[i]` the kept keywords as given,
    stripped (only when asked for: sentiment reads them).

    A side is built from those lists, or (`from_flat`, the vectorized preparation) from
    flat arrays: `flat[offsets[l]:offsets[l + 1]]` are the ids of list l, and example i has
    list `groups[i]` (None: list i), so that a gold list shared by many examples is stored
    once. Each form is derived from the other when first asked for.
    """

    def __init__(
        self,
        ids: list[tuple[int, ...]] | None,
        scores: list[tuple[float, ...]] | None = None,
        originals: list[tuple[str, ...]] | None = None,
    ) -> None:
        self._ids = ids
        self._scores = scores
        self.originals = originals
        self._flat: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None
        self._flat_scores: np.ndarray | None = None
        self.sorted_keys: np.ndarray | None = None  # `list_keys` of `flat`, sorted, when known
        # From the vectorized preparation of rows without repeated lists: each row's length
        # as given and which keywords were kept (None: all), to read scores for them later.
        self.given_sizes: np.ndarray | None = None
        self.keep_mask: np.ndarray | None = None

    @classmethod
    def from_flat(
        cls, flat: np.ndarray, offsets: np.ndarray, groups: np.ndarray | None = None, scores: np.ndarray | None = None
    ) -> PreparedSide:
        side = cls(None)
        side._flat = (flat, offsets, groups)
        side._flat_scores = scores
        return side

    @property
    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """`(flat ids, offsets, groups)` as described in the class docstring."""
        if self._flat is None:
            ids = self._ids
            sizes = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
            offsets = np.zeros(len(ids) + 1, dtype=np.int64)
            np.cumsum(sizes, out=offsets[1:])
            flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(offsets[-1]))
            self._flat = (flat, offsets, None)
        return self._flat

    @staticmethod
    def _lists(values: np.ndarray, offsets: np.ndarray, groups: np.ndarray | None) -> list[tuple[Any, ...]]:
        items = values.tolist()
        bounds = offsets.tolist()
        lists = [tuple(items[a:b]) for a, b in zip(bounds, bounds[1:])]
        return lists if groups is None else [lists[g] for g in groups.tolist()]

    @property
    def ids(self) -> list[tuple[int, ...]]:
        if self._ids is None:
            self._ids = self._lists(*self.flat)
        return self._ids

    @property
    def has_flat_scores(self) -> bool:
        """Whether the scores were read by the vectorized preparation (all floats)."""
        return self._flat_scores is not None

    @property
    def flat_scores(self) -> tuple[np.ndarray, np.ndarray]:
        """Every example's scores in one array, example i's at `offsets[i]:offsets[i + 1]`
        (a shared list repeated per example); for a side prepared with scores."""
        flat, offsets, groups = self.flat
        if self._flat_scores is not None and groups is None:
            return self._flat_scores, offsets
        scores = self.scores
        sizes = np.fromiter(map(len, scores), dtype=np.int64, count=len(scores))
        starts = np.zeros(len(scores) + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        return np.fromiter(chain.from_iterable(scores), dtype=np.float64, count=int(starts[-1])), starts

    @property
    def scores(self) -> list[tuple[float, ...]] | None:
        if self._scores is None and self._flat_scores is not None:
            flat, offsets, groups = self.flat
            self._scores = self._lists(self._flat_scores, offsets, groups)
        return self._scores

    def __len__(self) -> int:
        if self._ids is not None:
            return len(self._ids)
        _, offsets, groups = self.flat
        return len(offsets) - 1 if groups is None else len(groups)

    @property
    def sizes(self) -> np.ndarray:
        if self._ids is not None:
            return np.fromiter(map(len, self._ids), dtype=np.int64, count=len(self._ids))
        _, offsets, groups = self.flat
        sizes = np.diff(offsets)
        return sizes if groups is None else sizes[groups]


def _scores_fast_path(raw_scores: Sequence[Any]) -> tuple[float, ...] | None:
    """The scores as a tuple when all are floats in [0, 1] (the common case), else None."""
    if not all(type(score) is float for score in raw_scores) or not math.isfinite(sum(raw_scores)):
        return None
    if raw_scores and (min(raw_scores) < 0.0 or max(raw_scores) > 1.0):
        return None
    return tuple(raw_scores)


def prepare_side(
    lists: Sequence[Any],
    vocabulary: Vocabulary,
    side: str,
    scores: Sequence[Any] | None = None,
    clip_scores: bool = False,
    keep_originals: bool = False,
    reuse_lists: bool = False,
    scores_name: str = "scores",
    numbers: Sequence[int] | None = None,
) -> PreparedSide:
    """Validate and prepare one side of a corpus (docs/definitions.md section 1).

    With `reuse_lists` (for references: the same gold list broadcast to every review), a
    list given more than once (`repeated_rows`) is prepared once and its prepared tuple
    shared. `numbers` names the examples in messages (default: their positions).
    """
    if not keep_originals and numbers is None:
        fast = _prepare_flat(lists, vocabulary, scores, group_repeats=reuse_lists and scores is None)
        if fast is not None:
            return fast
    if isinstance(lists, FrozenRows):  # rows read one by one below: each a tuple held meanwhile
        lists = list(lists)
    if isinstance(scores, FrozenRows):
        scores = list(scores)
    if reuse_lists and scores is None:
        first, group = repeated_rows(lists)
        if len(first) < len(lists):
            distinct = prepare_side(
                [lists[i] for i in first], vocabulary, side, keep_originals=keep_originals, numbers=first
            )
            originals = distinct.originals
            return PreparedSide(
                [distinct.ids[g] for g in group], None, None if originals is None else [originals[g] for g in group]
            )
    all_ids: list[tuple[int, ...]] = []
    all_scores: list[tuple[float, ...]] | None = None if scores is None else []
    all_originals: list[tuple[str, ...]] | None = [] if keep_originals else None
    known = vocabulary.known_id
    intern = vocabulary.intern
    for position, raw_list in enumerate(lists):
        index = position if numbers is None else numbers[position]
        if type(raw_list) is not list:
            raw_list = check_keyword_list(raw_list, side, index)
        raw_list, all_str = plain_keywords(raw_list)  # a str subclass by its value, before any lookup
        raw_scores = None
        if scores is not None:
            raw_scores = check_keyword_list(scores[position], scores_name, index, "scores (numbers)")
            if len(raw_scores) != len(raw_list):
                raise ValueError(
                    f"{side}: example {index} has {len(raw_list)} keywords but {len(raw_scores)} {scores_name}"
                )
        ids = [known(raw) for raw in raw_list] if all_str else [None]  # (not str: reported below)
        if all_str and None in ids:  # new keywords
            ids = [intern(raw) if i is None else i for i, raw in zip(ids, raw_list)]
        kept_scores = None if raw_scores is None else _scores_fast_path(raw_scores)
        fast = (
            None not in ids
            and -1 not in ids
            and len(set(ids)) == len(ids)
            and (raw_scores is None or kept_scores is not None)
        )
        if fast:
            ids = tuple(ids)
            originals = tuple(raw.strip() for raw in raw_list) if keep_originals else ()
        else:
            ids, kept_scores, originals = _prepare_list(
                raw_list, raw_scores, vocabulary, side, index, clip_scores, scores_name
            )
        all_ids.append(ids)
        if all_originals is not None:
            all_originals.append(originals)
        if all_scores is not None:
            all_scores.append(kept_scores)
    return PreparedSide(all_ids, all_scores, all_originals)


def _prepare_flat(
    lists: Sequence[Any], vocabulary: Vocabulary, scores: Sequence[Any] | None, group_repeats: bool
) -> PreparedSide | None:
    """`prepare_side` without a Python loop over rows or keywords (docs/definitions.md section 1): each
    distinct keyword string is normalized once, repeats are found by marking ids (the C
    helper) or by sorting (its twin). Applies
    when every row is a list or tuple of str (and every score row a list or tuple of floats
    in [0, 1] of the same length) and no keyword holds a lone surrogate; otherwise None, and
    the per-row path checks and reports."""
    groups = None
    if group_repeats and len(lists) > 1:
        groups = _row_groups(lists)
        if groups is not None:
            _, first = np.unique(groups, return_index=True)
            lists = [lists[i] for i in first.tolist()]
    encoded = encode_lists(lists)
    if encoded is None:
        return None
    sizes, codes, distinct = encoded
    flat_scores = None
    if scores is not None:
        flat_scores = _flat_scores(scores, sizes)
        if flat_scores is None:
            return None
    distinct_ids = vocabulary.ids_of(distinct)
    if distinct_ids is None:
        return None
    ids = distinct_ids[codes]
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    keep, keys = _first_nonempty_occurrences(ids, offsets, len(vocabulary.strings))
    if keep is not None:
        ids = ids[keep]
        if flat_scores is not None:
            flat_scores = flat_scores[keep]
        rows = np.repeat(np.arange(len(lists)), sizes)[keep]
        offsets[1:] = np.cumsum(np.bincount(rows, minlength=len(lists)))
    side = PreparedSide.from_flat(ids, offsets, groups, flat_scores)
    side.sorted_keys = keys
    if groups is None:
        side.given_sizes, side.keep_mask = sizes, keep
    return side


def _with_scores(corpus: PreparedCorpus, scores: Sequence[Any]) -> PreparedCorpus | None:
    """`corpus` (prepared without scores) as prepared with `scores`: its keyword ids, and the
    scores read as the vectorized preparation reads them; None where that preparation would
    not apply (then the rows are prepared with their scores). Shares the corpus's `memo`:
    match edges do not depend on scores."""
    side = corpus.predictions
    if side.given_sizes is None:
        return None
    flat_scores = _flat_scores(scores, side.given_sizes)
    if flat_scores is None:
        return None
    flat, offsets, groups = side.flat
    kept_scores = flat_scores if side.keep_mask is None else flat_scores[side.keep_mask]
    scored = PreparedSide.from_flat(flat, offsets, groups, kept_scores)
    scored.sorted_keys = side.sorted_keys
    return PreparedCorpus(corpus.strings, scored, corpus.references, corpus.memo)


def _flat_scores(scores: Sequence[Any], sizes: np.ndarray) -> np.ndarray | None:
    """All scores as one float array when every row is a list or tuple of floats in [0, 1]
    with one score per keyword, else None."""
    encoded = encode_floats(scores)
    if encoded is None:
        return None
    row_sizes, values = encoded
    if not np.array_equal(row_sizes, sizes) or not ((values >= 0.0) & (values <= 1.0)).all():  # NaN fails too
        return None
    return values


def _first_nonempty_occurrences(
    ids: np.ndarray, offsets: np.ndarray, vocabulary_size: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """`(keep, keys)`: which keywords to keep (not empty, -1; not a repeat of an earlier one
    in its list), or None when that is all of them; then also `list_keys` of every one,
    sorted (else None). In C when the helper is built (ids marked, no sort; no keys)."""
    if not len(ids):
        return None, ids
    speedups = helper()
    if speedups is not None:
        keep = speedups.first_occurrences(*int64_arrays(ids, offsets), vocabulary_size)
        return (None if keep is None else np.frombuffer(keep, dtype=bool)), None
    rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    if ids.min() >= 0:
        ordered = list_keys(rows, ids)
        ordered.sort()
        if not (ordered[1:] == ordered[:-1]).any():
            return None, ordered
    # The first of each run of equal keys, in the keys' order (ties by index).
    keys, order = sort_with_payload(rows * (vocabulary_size + 1) + (ids + 1), np.arange(len(ids)))
    first = np.ones(len(ids), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    keep = np.empty(len(ids), dtype=bool)
    keep[order] = first
    return keep & (ids >= 0), None


def _prepare_list(
    raw_list: Sequence[Any],
    raw_scores: Sequence[Any] | None,
    vocabulary: Vocabulary,
    side: str,
    index: int,
    clip_scores: bool,
    scores_name: str,
) -> tuple[tuple[int, ...], tuple[float, ...] | None, tuple[str, ...]]:
    """Check every keyword (and score) of one example; drop empty and duplicate keywords."""
    ids: list[int] = []
    originals: list[str] = []
    kept_scores: list[float] = []
    seen: set[int] = set()
    for position, raw in enumerate(raw_list):
        check_keyword(raw, side, index, position)
        score = None
        if raw_scores is not None:
            score = check_score(raw_scores[position], scores_name, index, position, raw, clip_scores)
        keyword_id = vocabulary.intern(raw)
        if keyword_id < 0 or keyword_id in seen:
            continue
        seen.add(keyword_id)
        ids.append(keyword_id)
        originals.append(raw.strip())
        if score is not None:
            kept_scores.append(score)
    return tuple(ids), None if raw_scores is None else tuple(kept_scores), tuple(originals)


@dataclass(frozen=True)
class PreparedCorpus:
    """Predictions and references prepared against one shared vocabulary; `memo` keeps
    what later steps derive from it alone (match edges), for a corpus prepared again."""

    strings: list[str]
    predictions: PreparedSide
    references: PreparedSide
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.predictions)


def prepare_corpus(
    predictions: Sequence[Any],
    references: Sequence[Any],
    *,
    scores: Sequence[Any] | None = None,
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    clip_scores: bool = False,
    keep_originals: bool = False,
    scores_name: str = "scores",
) -> PreparedCorpus:
    """Validate and prepare a corpus: one list of predicted and one of gold keywords per example."""
    given = (predictions, references, scores)
    predictions = check_corpus(predictions, "predictions")
    references = check_corpus(references, "references")
    inputs = {"predictions": predictions, "references": references}
    if scores is not None:
        inputs[scores_name] = scores = check_corpus(scores, scores_name)
    check_same_length(**inputs)
    normalizer = make_normalizer(normalize, stemmer)  # checks normalize and stemmer
    cached = look_up(given, predictions, references, scores, (normalize, stemmer, clip_scores, keep_originals))
    if cached.kept is not None:
        return cached.kept
    rows = cached.rows(predictions, references, scores)
    corpus = None if cached.plain is None else _with_scores(cached.plain, rows[2])
    if corpus is None:
        vocabulary = Vocabulary(normalizer)
        prepared_predictions = prepare_side(
            rows[0], vocabulary, "predictions", rows[2], clip_scores, keep_originals, scores_name=scores_name
        )
        prepared_references = prepare_side(
            rows[1], vocabulary, "references", keep_originals=keep_originals, reuse_lists=True
        )
        corpus = PreparedCorpus(vocabulary.strings, prepared_predictions, prepared_references)
    cached.keep(corpus, scored=scores is not None)
    return corpus
