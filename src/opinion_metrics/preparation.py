"""Keyword preparation (docs/definitions.md section 1): validation, normalization, de-duplication.

A corpus is prepared once into integer ids: every distinct normalized keyword gets one id
in a vocabulary shared by predictions and references, so exact matching is id equality and
every later step (match relations, embeddings, sentiment) runs once per distinct string.
"""

from __future__ import annotations

import importlib
import math
import operator
import os
import re
import sysconfig
import threading
import unicodedata
import warnings
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any

import numpy as np

from .columnar import paused_gc
from .validation import (
    any_lone_surrogate,
    check_corpus,
    check_keyword,
    check_keyword_list,
    check_same_length,
    check_score,
    describe,
    lone_surrogate,
)

_SPEEDUPS_VERSION = 6  # the VERSION of _speedups.c these functions call


def _load_speedups() -> Any:
    """The C helper (_speedups.c), or None: then its twins below run, in Python and numpy.
    None where it was not built (no compiler), where OPINION_METRICS_PURE_PYTHON=1, on a
    free-threaded Python (it relies on the GIL), and (with a warning) where it fails to load
    or was built from another version of its source."""
    pure = os.environ.get("OPINION_METRICS_PURE_PYTHON") == "1"
    if pure and os.environ.get("OPINION_METRICS_REQUIRE_C_HELPER") == "1":
        raise ImportError(
            "OPINION_METRICS_PURE_PYTHON=1 and OPINION_METRICS_REQUIRE_C_HELPER=1 contradict each other: unset one"
        )
    if pure or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    try:  # (`from . import` would report a missing helper as a circular import)
        _speedups = importlib.import_module(f"{__package__}._native._speedups")
    except ModuleNotFoundError:
        return None
    except ImportError as error:
        warnings.warn(f"opinion_metrics: the C helper did not load ({error}); running without it", stacklevel=2)
        return None
    if getattr(_speedups, "VERSION", None) != _SPEEDUPS_VERSION:
        warnings.warn("opinion_metrics: the C helper is from another version; reinstall to rebuild it", stacklevel=2)
        return None
    return _speedups


_speedups: Any = _load_speedups()

Normalizer = Callable[[str], str]
NormalizeOption = str | Normalizer
NORMALIZE_MODES = ("default", "ascii", "none")
STEMMERS = ("porter",)


def _default_replacement(codepoint: int) -> int | None:
    """What the "default" normalization makes of a character (after NFKC and casefold): a
    space for the word separators, dashes and connectors (Pd, Pc: "-", "–", "_") and "/";
    nothing for other punctuation (P*), symbols (S*) and format characters (Cf: zero-width,
    BOM, bidi marks); the character itself otherwise."""
    category = unicodedata.category(chr(codepoint))
    if category in ("Pd", "Pc") or codepoint == ord("/"):
        return ord(" ")
    return None if category[0] in "PS" or category == "Cf" else codepoint


class _DefaultTable(dict):
    """`str.translate` table of `_default_replacement`, filled as characters are met."""

    def __missing__(self, codepoint: int) -> int | None:
        value = self[codepoint] = _default_replacement(codepoint)
        return value


_DEFAULT_TABLE = _DefaultTable()
# The same table restricted to ASCII, for the ASCII fast path (no ASCII character is Cf).
_ASCII_DEFAULT = {codepoint: _DEFAULT_TABLE[codepoint] for codepoint in range(128)}
_NON_ASCII_ALNUM = re.compile(r"[^a-zA-Z0-9\s]")
# What `_NON_ASCII_ALNUM` deletes from ASCII text but the separator, as a table (faster
# than the regular expression).
_ASCII_NOT_ALNUM = str.maketrans(
    "", "", "".join(chr(c) for c in range(1, 128) if _NON_ASCII_ALNUM.match(chr(c)))
)  # (chr(0) is the separator)
_SEPARATOR = "\x00"


def _normalize_unicode(text: str) -> str:
    """The "default" normalization of any string (docs/definitions.md section 1)."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_DEFAULT_TABLE)
    return " ".join(text.split())


def _normalize_default(text: str) -> str:
    if text.isascii():  # NFKC is the identity and casefold is lower on ASCII: same result
        return " ".join(text.lower().translate(_ASCII_DEFAULT).split())
    return _normalize_unicode(text)


def _normalize_ascii(text: str) -> str:
    return _NON_ASCII_ALNUM.sub("", text.lower()).strip()


def _normalize_none(text: str) -> str:
    return text.strip()


def _many_default(joined: str) -> list[str]:
    return list(map(" ".join, map(str.split, joined.lower().translate(_ASCII_DEFAULT).split(_SEPARATOR))))


def _many_ascii(joined: str) -> list[str]:
    return list(map(str.strip, joined.lower().translate(_ASCII_NOT_ALNUM).split(_SEPARATOR)))


def _many_none(joined: str) -> list[str]:
    return list(map(str.strip, joined.split(_SEPARATOR)))


_NORMALIZERS: dict[str, Normalizer] = {
    "default": _normalize_default,
    "ascii": _normalize_ascii,
    "none": _normalize_none,
}
# Whole-batch forms of the built-in modes for ASCII strings without the separator, given
# joined by it: one pass over the joined strings instead of one call per string (same
# results: tests/test_fast_paths.py).
_BATCH_NORMALIZERS: dict[str, Callable[[str], list[str]]] = {
    "default": _many_default,
    "ascii": _many_ascii,
    "none": _many_none,
}
_STEMS: dict[str, str] = {}  # Porter stem of each token seen (the stemmer is deterministic)
_STEM_CACHE_LIMIT = 1_000_000


def _porter_stem_tokens() -> Normalizer:
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError as error:
        raise ImportError(
            "stemmer='porter' needs NLTK: pip install nltk (or, in a checkout of opinion-metrics, "
            'pip install ".[stem]")'
        ) from error
    stem = PorterStemmer().stem

    def stem_tokens(text: str) -> str:
        tokens = text.split()
        try:
            return " ".join([_STEMS[token] for token in tokens])
        except KeyError:
            if len(_STEMS) > _STEM_CACHE_LIMIT:
                _STEMS.clear()
            # read from this call's stems: another thread may clear the shared ones meanwhile
            stems = [_STEMS.get(token) or stem(token, to_lowercase=False) for token in tokens]
            _STEMS.update(zip(tokens, stems))
            return " ".join(stems)

    return stem_tokens


# Normalized forms under each built-in (mode, stemmer), kept across calls: the same gold
# lists and vocabularies come back call after call (both lexical families, every top_k).
_NORMALIZED: dict[tuple[str, str | None], dict[str, str]] = {}
_NORMALIZED_LIMIT = 500_000


def clear_normalization_cache() -> None:
    """Forget the normalized forms (and Porter stems) and the prepared corpora kept across calls."""
    for cache in _NORMALIZED.values():
        cache.clear()
    _STEMS.clear()
    clear_prepared_corpora()


def clear_prepared_corpora() -> None:
    """Forget the corpora kept prepared for a call on the same rows (and let go of those rows)."""
    with _CACHE_LOCK:
        _PREPARED.clear()
        _SEEN.clear()


class _Normalizer:
    """A `str -> str` normalizer that can also normalize many strings at once (`many`)."""

    def __init__(
        self,
        base: Normalizer,
        batch: Callable[[list[str]], list[str]] | None,
        stem: Normalizer | None,
        cache: dict[str, str] | None = None,
    ):
        self._base = base
        self._batch = batch
        self._stem = stem
        self._cache = cache

    def __call__(self, text: str) -> str:
        normalized = self._base(plain_str(text) if self._cache is not None and issubclass(type(text), str) else text)
        return normalized if self._stem is None or not isinstance(normalized, str) else self._stem(normalized)

    def many(self, texts: list[str]) -> list[Any] | None:
        """`[self(text) for text in texts]`, or None when a text not normalized before holds
        a lone surrogate (the per-row path names it): for a built-in mode, from the forms kept
        across calls, the others computed with ASCII strings in one batch."""
        cache = self._cache
        if cache is None:
            return None if any_lone_surrogate(texts) else self._compute_many(texts)
        found = list(map(cache.get, texts))
        if None not in found:
            return found
        missing = texts if found.count(None) == len(texts) else [t for t, form in zip(texts, found) if form is None]
        if any_lone_surrogate(missing):
            return None
        forms = self._compute_many(missing)
        if len(cache) + len(forms) > _NORMALIZED_LIMIT:
            cache.clear()
        cache.update(zip(missing, forms))
        if missing is texts:
            return forms
        # read from this call's forms: another thread may clear the shared ones meanwhile
        computed = iter(forms)
        return [next(computed) if form is None else form for form in found]

    def _compute_many(self, texts: list[str]) -> list[Any]:
        if self._batch is None or len(texts) < 8:
            normalized = list(map(self._base, texts))
        else:
            joined = _SEPARATOR.join(texts)
            if joined.isascii() and joined.count(_SEPARATOR) == len(texts) - 1:  # (no string holds the separator)
                normalized = self._batch(joined)
            else:
                batch = [text for text in texts if text.isascii() and _SEPARATOR not in text]
                done = dict(zip(batch, self._batch(_SEPARATOR.join(batch)) if batch else []))
                normalized = [done[text] if text in done else self._base(text) for text in texts]
        if self._stem is None:
            return normalized
        stem = self._stem
        return [stem(text) if isinstance(text, str) else text for text in normalized]


def make_normalizer(normalize: NormalizeOption = "default", stemmer: str | None = None) -> Normalizer:
    """Return the `str -> str` function that docs/definitions.md section 1 applies to every keyword.

    Args:
        normalize: "default" (NFKC, casefold, dashes, connectors and "/" as spaces, other
            punctuation, symbols and format characters such as zero-width spaces removed,
            white space collapsed), "ascii" (the seed
            notebooks' `normalize_kw`), "none" (only stripped), or any callable `str -> str`.
        stemmer: None or "porter" (each white-space token stemmed after normalization).
    """
    if callable(normalize):
        base, batch = normalize, None
    elif isinstance(normalize, str) and normalize in _NORMALIZERS:
        base, batch = _NORMALIZERS[normalize], _BATCH_NORMALIZERS[normalize]
    else:
        raise ValueError(f"normalize must be one of {NORMALIZE_MODES} or a callable str -> str, got {normalize!r}")
    if stemmer is not None and stemmer not in STEMMERS:
        raise ValueError(f"stemmer must be None or one of {STEMMERS}, got {stemmer!r}")
    cache = None if batch is None else _NORMALIZED.setdefault((normalize, stemmer), {})
    return _Normalizer(base, batch, None if stemmer is None else _porter_stem_tokens(), cache)


def normalize_keyword(keyword: str, normalize: NormalizeOption = "default", stemmer: str | None = None) -> str:
    """Normalize one keyword as docs/definitions.md section 1 does (see `make_normalizer`)."""
    if not isinstance(keyword, str):
        raise ValueError(f"keyword must be a str, got {type(keyword).__name__} {keyword!r}")
    return make_normalizer(normalize, stemmer)(keyword)


def plain_str(text: str) -> str:
    """`text` as an exact str: its value, whatever a str subclass's methods (`__str__`,
    `__eq__`, `__hash__`, `lower`) do."""
    return text if type(text) is str else str.__str__(text)


def plain_keywords(row: Sequence[Any]) -> tuple[Sequence[Any], bool]:
    """`row` with each str subclass as an exact str (other items as given, checked later), and
    whether every item is then a str: only those are looked up (an object equal to a str is
    not one)."""
    if set(map(type, row)) <= {str}:
        return row, True
    row = [plain_str(item) if issubclass(type(item), str) else item for item in row]
    return row, set(map(type, row)) <= {str}


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


def content_key(row: Any) -> Hashable | None:
    """A list or tuple of exact str as a tuple (its content), else None: an object equal to a
    str (or a str subclass whose `__eq__` says so) never stands for another row unchecked."""
    if type(row) not in (list, tuple) or not set(map(type, row)) <= {str}:
        return None
    return tuple(row)


def _plain_rows(rows: Sequence[Any]) -> bool:
    """Whether every row is a list or tuple of exact str (rows that may be grouped by content)."""
    return set(map(type, rows)) <= {list, tuple} and set(map(type, chain.from_iterable(rows))) <= {str}


def repeated_rows(
    rows: Sequence[Any], key: Callable[[Any], Hashable | None] = content_key, by_identity: bool = True
) -> tuple[list[int], list[int]]:
    """The one place where repeated rows (a gold list broadcast to every review of a movie)
    are recognized, so that each is checked, prepared, matched and stored once.

    Rows are repeated when they are the same object (`by_identity`) or have the same
    `key(row)` (None: no key). Returns `(first, group)`: `first[g]` is the index of group
    g's first row, `group[i]` the group of row i.
    """
    first: list[int] = []
    group: list[int] = []
    by_object: dict[int, int] = {}
    by_key: dict[Hashable, int] = {}
    for index, row in enumerate(rows):
        number = by_object.get(id(row)) if by_identity else None
        if number is None:
            row_key = key(row)
            number = len(first) if row_key is None else by_key.setdefault(row_key, len(first))
            if number == len(first):
                first.append(index)
            if by_identity:  # `rows` keeps every row alive, so an id is never reused meanwhile
                by_object[id(row)] = number
        group.append(number)
    return first, group


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
            raw_scores = check_keyword_list(scores[position], scores_name, index)
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


_CONTENT_SAMPLE = 256


def _row_groups(lists: Sequence[Any]) -> np.ndarray | None:
    """`repeated_rows`'s groups, computed without a Python loop: by identity (a gold list
    broadcast to its movie's reviews) or, when no row object repeats but the first
    `_CONTENT_SAMPLE` rows hold equal copies (a gold list read back per example), by content
    (rows of hashable items). None: every row its own."""
    by_object, first = row_objects(lists.objects if isinstance(lists, FrozenRows) else lists)
    if len(first) == len(lists):  # no object repeats: look for copies only if the sample has some
        sample = lists[:_CONTENT_SAMPLE]
        if not _plain_rows(sample) or len(set(map(tuple, sample))) == min(len(lists), _CONTENT_SAMPLE):
            return None
    # Equal content among the distinct objects (one per group found so far), of exact str only:
    # an object equal to a str is checked in its own row.
    distinct = [lists[i] for i in first.tolist()]
    by_content = np.arange(len(first))
    if _plain_rows(distinct):
        number: defaultdict[Any, int] = defaultdict()
        number.default_factory = number.__len__
        by_content = np.fromiter(map(number.__getitem__, map(tuple, distinct)), dtype=np.int64, count=len(first))
    groups = by_content[by_object]
    return groups if int(groups.max(initial=-1)) + 1 < len(lists) else None


def row_objects(lists: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """`(numbers, first)`: each row's number among the distinct row objects, numbered in order
    of first appearance, and the position where each first appears (int64 arrays). In C when
    the helper is built (addresses hashed), else by sorting the addresses."""
    numbered = None if _speedups is None else _speedups.row_objects(lists)
    if numbered is not None:
        return np.frombuffer(numbered[0], dtype=np.int64), np.frombuffer(numbered[1], dtype=np.int64)
    addresses = np.fromiter(map(id, lists), dtype=np.uint64, count=len(lists))
    ordered = np.sort(addresses)
    if (ordered[1:] != ordered[:-1]).all():  # no object repeats
        return np.arange(len(lists)), np.arange(len(lists))
    _, first, inverse = np.unique(addresses, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty(len(first), dtype=np.int64)
    rank[order] = np.arange(len(first))
    return rank[inverse], first[order]


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


def encode_lists(lists: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """`(sizes, codes, distinct)`: the length of each row, and each keyword's position in
    `distinct` (the distinct keywords in order of first appearance); None unless every row
    is a list or tuple and every keyword a str. In C when the helper is built (one pass, no
    Python call per keyword), else `_encode_lists_in_python`."""
    if isinstance(lists, FrozenRows):
        return lists.encoded()
    if _speedups is None:
        return _encode_lists_in_python(lists)
    encoded = _speedups.distinct_codes(lists)
    if encoded is None:
        return None
    return np.frombuffer(encoded[0], dtype=np.int64), np.frombuffer(encoded[1], dtype=np.uint32), encoded[2]


def _encode_lists_in_python(lists: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    if not set(map(type, lists)) <= {list, tuple}:
        return None
    if not set(map(type, chain.from_iterable(lists))) <= {str}:  # every keyword: one equal to a str is not one
        return None
    sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    code_of: defaultdict[str, int] = defaultdict()
    code_of.default_factory = code_of.__len__
    keywords = chain.from_iterable(lists)
    codes = np.fromiter(map(code_of.__getitem__, keywords), dtype=np.int64, count=int(sizes.sum()))
    return sizes, codes, list(code_of)


def number_strings(strings: list[str], table: defaultdict[str, int]) -> np.ndarray:
    """`[table[string] for string in strings]` as an int64 array, where `table` numbers the
    strings it meets in order (its default factory is its own `__len__`)."""
    codes = None if _speedups is None else _speedups.number_strings(strings, table)
    if codes is None:  # without the helper, or a str subclass
        return np.fromiter(map(table.__getitem__, strings), dtype=np.int64, count=len(strings))
    return np.frombuffer(codes, dtype=np.uint32).astype(np.int64)


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


def encode_floats(lists: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """`(sizes, values)`: the length of each row and all its values as one float array; None
    unless every row is a list or tuple of floats. In C when the helper is built."""
    if isinstance(lists, FrozenRows):
        return lists.floats()
    if _speedups is not None:
        encoded = _speedups.encode_floats(lists)
        return None if encoded is None else (np.frombuffer(encoded[0], np.int64), np.frombuffer(encoded[1], np.float64))
    if not set(map(type, lists)) <= {list, tuple}:
        return None
    values = list(chain.from_iterable(lists))
    if not set(map(type, values)) <= {float}:
        return None
    return np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)), np.array(values, dtype=np.float64)


def int64_arrays(*arrays: Any) -> list[np.ndarray]:
    """The arrays as the C helper takes them: contiguous int64 (no copy when they are)."""
    return [np.ascontiguousarray(array, dtype=np.int64) for array in arrays]


def _first_nonempty_occurrences(
    ids: np.ndarray, offsets: np.ndarray, vocabulary_size: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """`(keep, keys)`: which keywords to keep (not empty, -1; not a repeat of an earlier one
    in its list), or None when that is all of them; then also `list_keys` of every one,
    sorted (else None). In C when the helper is built (ids marked, no sort; no keys)."""
    if not len(ids):
        return None, ids
    if _speedups is not None:
        keep = _speedups.first_occurrences(*int64_arrays(ids, offsets), vocabulary_size)
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


def list_keys(lists: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """`list << 32 | id` (ids are below 2**32): one integer per (list, keyword id), ordered
    by list, then id."""
    keys = lists << 32
    keys |= ids
    return keys


def sort_with_payload(keys: np.ndarray, payload: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`keys` sorted, and `payload` (non-negative) in the same order (ties by payload): one
    `np.sort` of `keys << bits | payload` when that fits in int64, else a lexsort."""
    if not len(keys):
        return keys, payload
    bits = int(payload.max()).bit_length()
    if keys.min() >= 0 and int(keys.max()) < 1 << (62 - bits):
        encoded = keys << bits
        encoded |= payload
        encoded.sort()
        payload = encoded & ((1 << bits) - 1)
        encoded >>= bits
        return encoded, payload
    order = np.lexsort((payload, keys))
    return keys[order], payload[order]


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
    key, snapshot, plain = None, None, None
    # Kept across calls: rows given as lists or tuples (others are converted to new lists each
    # call), under a built-in normalization (a callable may not give the same forms again).
    if isinstance(normalize, str) and all(map(operator.is_, given, (predictions, references, scores))):
        first_rows = (id(predictions[0]) if predictions else None, id(references[0]) if references else None)
        key = _corpus_key(predictions, first_rows, scores, normalize, stemmer, clip_scores, keep_originals)
        kept = _PREPARED.get(key)
        if kept is not None and kept[0].holds(predictions, references, scores):
            return kept[1]
        if scores is not None:  # the same rows kept prepared without scores (the other family)
            plain = _PREPARED.get(_corpus_key(predictions, first_rows, None, normalize, stemmer, False, keep_originals))
            if plain is not None and not plain[0].holds(predictions, references, None):
                plain = None
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
    # With a snapshot, the frozen rows are prepared: another thread may change a live row (and
    # restore it) meanwhile, and the corpus kept must be the one the snapshot stands for.
    rows = (predictions, references, scores)
    if snapshot is not None:
        rows = (*snapshot.frozen[:2], None if scores is None else snapshot.frozen[2])
    corpus = None if plain is None else _with_scores(plain[1], rows[2])
    if corpus is None:
        vocabulary = Vocabulary(normalizer)
        prepared_predictions = prepare_side(
            rows[0], vocabulary, "predictions", rows[2], clip_scores, keep_originals, scores_name=scores_name
        )
        prepared_references = prepare_side(
            rows[1], vocabulary, "references", keep_originals=keep_originals, reuse_lists=True
        )
        corpus = PreparedCorpus(vocabulary.strings, prepared_predictions, prepared_references)
    # Kept with its snapshot, whatever the live rows do meanwhile (it is what the frozen rows give,
    # and a later call compares the live rows with them), and with scores only if all are floats
    # (immutable: a 0-d array or a tensor can change in place, under the same identity).
    if snapshot is not None and (scores is None or corpus.predictions.has_flat_scores):
        _put_bounded(_PREPARED, key, (snapshot, corpus), _PREPARED_ENTRIES)
    return corpus


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


# Taken by whatever changes `_PREPARED` or `_SEEN` (an iterator over a dict that another
# thread resizes raises).
_CACHE_LOCK = threading.Lock()


# Corpora prepared by recent calls, by the options and the identity of the inputs' first
# rows: the same rows evaluated again (both lexical families, every top_k, a session's repeated
# calls) are compared with a snapshot of their rows instead of being prepared again. The
# snapshot is taken from the second call that looks the same (`_SEEN`), so that a call made
# once pays nothing; with the C helper, from the first call of a corpus of at most
# `_FIRST_CALL_ITEMS` keywords (a tuple of their pointers: microseconds).
_PREPARED: dict[tuple[Any, ...], tuple[_Snapshot, PreparedCorpus]] = {}
_SEEN: dict[tuple[Any, ...], bool] = {}
_SEEN_ENTRIES = 64
_PREPARED_ENTRIES = 4
_PREPARED_ROWS = 1 << 16  # examples per corpus at most
_PREPARED_ITEMS = 1 << 20  # keywords (and scores) copied per corpus at most
_FIRST_CALL_ITEMS = 1 << 17


class FrozenRows(Sequence[tuple[Any, ...]]):
    """Rows frozen by the C helper's `snapshot_rows`: their items in one tuple (`items`; a row
    given again right after itself, once), each row's size and start there (int64 bytes), and
    the row objects they were taken from (`objects`, held: an object's rows hold the same
    items). Read whole in C by `encode_lists` and `encode_floats`, grouped by `objects` in
    `_row_groups`; row r is a new tuple at each access (the per-row path reads `list(rows)`)."""

    def __init__(
        self, items: tuple[Any, ...], sizes: bytes, starts: bytes, objects: tuple[Any, ...], helper: Any
    ) -> None:
        self.items = items
        self.sizes = sizes
        self.row_sizes = np.frombuffer(sizes, dtype=np.int64)
        self.starts = np.frombuffer(starts, dtype=np.int64)
        self.objects = objects
        self._helper = helper  # the C helper that froze them

    def __len__(self) -> int:
        return len(self.objects)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start = int(self.starts[index])
        return self.items[start : start + int(self.row_sizes[index])]

    def __iter__(self) -> Any:
        items = self.items
        return iter([items[start : start + size] for start, size in zip(self.starts.tolist(), self.row_sizes.tolist())])

    def _positions(self) -> np.ndarray | None:
        """Where in `items` each item of the rows, in turn, is (None: `items` in order)."""
        total = int(self.row_sizes.sum())
        if total == len(self.items):
            return None
        offsets = np.cumsum(self.row_sizes) - self.row_sizes
        return np.repeat(self.starts - offsets, self.row_sizes) + np.arange(total)

    def encoded(self) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
        """`encode_lists` of the rows: one pass in C over `items`."""
        encoded = self._helper.distinct_codes((self.items,))
        if encoded is None:
            return None
        codes, positions = np.frombuffer(encoded[1], dtype=np.uint32), self._positions()
        return self.row_sizes, codes if positions is None else codes[positions], encoded[2]

    def floats(self) -> tuple[np.ndarray, np.ndarray] | None:
        """`encode_floats` of the rows: one pass in C over `items`."""
        encoded = self._helper.encode_floats((self.items,))
        if encoded is None:
            return None
        values, positions = np.frombuffer(encoded[1], dtype=np.float64), self._positions()
        return self.row_sizes, values if positions is None else values[positions]


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
        speedups = _speedups
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


def cutoff_lengths(corpus: PreparedCorpus, top_k: int | str | None) -> list[int | None]:
    """How many leading predictions each example keeps: all (None), `top_k` (int), or as
    many as it has gold keywords ("O"). `top_k` must have passed `validation.check_top_k`."""
    if top_k == "O":
        return [len(gold) for gold in corpus.references.ids]
    return [top_k] * len(corpus)  # type: ignore[list-item]


def prediction_cutoffs(corpus: PreparedCorpus, top_k: int | str | None) -> np.ndarray | None:
    """`cutoff_lengths` as an array (None: every prediction kept)."""
    return cutoffs_of_sizes(top_k, len(corpus), lambda: corpus.references.sizes)


def cutoffs_of_sizes(top_k: int | str | None, n: int, gold_sizes: Callable[[], np.ndarray]) -> np.ndarray | None:
    """`prediction_cutoffs` of n examples whose kept gold keywords `gold_sizes()` counts
    (called only for "O")."""
    if top_k is None:
        return None
    if top_k == "O":
        return gold_sizes()
    return np.full(n, min(int(top_k), np.iinfo(np.int64).max), dtype=np.int64)


def precision_denominators(corpus: PreparedCorpus, top_k: int | str | None) -> np.ndarray:
    """Per example, the precision denominator of the count-based families (docs/definitions.md section 3):
    the number of predictions (`None`), k (an int: a missing prediction counts as wrong,
    trec_eval's `P_k`) or |G| ("O": R-precision)."""
    return denominators_of_sizes(top_k, len(corpus), lambda: corpus.predictions.sizes, lambda: corpus.references.sizes)


def denominators_of_sizes(
    top_k: int | str | None, n: int, prediction_sizes: Callable[[], np.ndarray], gold_sizes: Callable[[], np.ndarray]
) -> np.ndarray:
    """`precision_denominators` of n examples whose kept predictions and gold keywords
    `prediction_sizes()` and `gold_sizes()` count (each called only where needed)."""
    if top_k is None:
        return prediction_sizes()
    if top_k == "O":
        return gold_sizes()
    return np.full(n, float(top_k))  # float: k may exceed int64


def apply_top_k(corpus: PreparedCorpus, top_k: int | str | None) -> PreparedCorpus:
    """The corpus with each example's predictions cut as `cutoff_lengths` says."""
    if top_k is None:
        return corpus
    lengths = cutoff_lengths(corpus, top_k)

    def cut(lists: list[tuple[Any, ...]] | None) -> list[tuple[Any, ...]] | None:
        return None if lists is None else [items[:n] for items, n in zip(lists, lengths)]

    predictions = corpus.predictions
    cut_predictions = PreparedSide(cut(predictions.ids), cut(predictions.scores), cut(predictions.originals))
    return PreparedCorpus(corpus.strings, cut_predictions, corpus.references)
