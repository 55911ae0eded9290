"""Keyword preparation (SPEC section 1): validation, normalization, de-duplication.

A corpus is prepared once into integer ids: every distinct normalized keyword gets one id
in a vocabulary shared by predictions and references, so exact matching is id equality and
every later step (match relations, embeddings, sentiment) runs once per distinct string.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from .validation import (
    check_corpus,
    check_keyword,
    check_keyword_list,
    check_same_length,
    check_score,
    describe,
    lone_surrogate,
)

Normalizer = Callable[[str], str]
NormalizeOption = Union[str, Normalizer]
NORMALIZE_MODES = ("default", "ascii", "none")
STEMMERS = ("porter",)


def _dropped_by_default(category: str) -> bool:
    """Punctuation (P*), symbols (S*) and format characters (Cf: zero-width, BOM, bidi marks)."""
    return category[0] in "PS" or category == "Cf"


class _DropPunctuationSymbolsAndFormat(dict):
    """`str.translate` table deleting every character that `_dropped_by_default` names."""

    def __missing__(self, codepoint: int) -> int | None:
        value = None if _dropped_by_default(unicodedata.category(chr(codepoint))) else codepoint
        self[codepoint] = value
        return value


_DROP_PUNCTUATION_AND_SYMBOLS = _DropPunctuationSymbolsAndFormat()
_NON_ASCII_ALNUM = re.compile(r"[^a-zA-Z0-9\s]")


def _normalize_default(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().translate(_DROP_PUNCTUATION_AND_SYMBOLS)
    return " ".join(text.split())


def _normalize_ascii(text: str) -> str:
    return _NON_ASCII_ALNUM.sub("", text.lower()).strip()


def _normalize_none(text: str) -> str:
    return text.strip()


_NORMALIZERS: dict[str, Normalizer] = {
    "default": _normalize_default,
    "ascii": _normalize_ascii,
    "none": _normalize_none,
}


def _porter_stem_tokens() -> Normalizer:
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError as error:
        raise ImportError(
            "stemmer='porter' needs NLTK: pip install 'opinion-metrics[stem]' (or pip install nltk)"
        ) from error
    stem = PorterStemmer().stem
    return lambda text: " ".join(stem(token, to_lowercase=False) for token in text.split())


def make_normalizer(normalize: NormalizeOption = "default", stemmer: str | None = None) -> Normalizer:
    """Return the `str -> str` function that SPEC section 1 applies to every keyword.

    Args:
        normalize: "default" (NFKC, casefold, punctuation, symbols and format characters
            such as zero-width spaces removed, white space collapsed), "ascii" (the seed
            notebooks' `normalize_kw`), "none" (only stripped), or any callable `str -> str`.
        stemmer: None or "porter" (each white-space token stemmed after normalization).
    """
    if callable(normalize):
        base = normalize
    elif isinstance(normalize, str) and normalize in _NORMALIZERS:
        base = _NORMALIZERS[normalize]
    else:
        raise ValueError(f"normalize must be one of {NORMALIZE_MODES} or a callable str -> str, got {normalize!r}")
    if stemmer is None:
        return base
    if stemmer not in STEMMERS:
        raise ValueError(f"stemmer must be None or one of {STEMMERS}, got {stemmer!r}")
    stem = _porter_stem_tokens()
    return lambda text: stem(base(text))


def normalize_keyword(keyword: str, normalize: NormalizeOption = "default", stemmer: str | None = None) -> str:
    """Normalize one keyword as SPEC section 1 does (see `make_normalizer`)."""
    if not isinstance(keyword, str):
        raise ValueError(f"keyword must be a str, got {type(keyword).__name__} {keyword!r}")
    return make_normalizer(normalize, stemmer)(keyword)


class Vocabulary:
    """Interns normalized keywords to ids; `strings[id]` is the normalized keyword."""

    def __init__(self, normalizer: Normalizer) -> None:
        self._normalizer = normalizer
        self._raw_to_id: dict[str, int] = {}
        self._normalized_to_id: dict[str, int] = {}
        self.strings: list[str] = []
        self.known_id = self._raw_to_id.get  # id of an already seen raw keyword, else None

    def intern(self, raw: Any) -> int | None:
        """Id of a keyword's normalized form; -1 when that is empty; None if not a str."""
        keyword_id = self._raw_to_id.get(raw) if isinstance(raw, str) else None
        if keyword_id is None and isinstance(raw, str) and not lone_surrogate(raw):  # else reported by check_keyword
            normalized = self._normalizer(raw)
            if not isinstance(normalized, str):
                raise ValueError(f"normalize returned {describe(normalized)} for keyword {raw!r}; it must return a str")
            if not normalized:
                keyword_id = -1
            else:
                keyword_id = self._normalized_to_id.setdefault(normalized, len(self.strings))
                if keyword_id == len(self.strings):
                    self.strings.append(normalized)
            self._raw_to_id[raw] = keyword_id
        return keyword_id


@dataclass(frozen=True)
class PreparedSide:
    """One side (predictions or references) of a prepared corpus.

    `ids[i]` holds example i's keyword ids (empty and duplicate keywords dropped, order
    kept), `scores[i]` their scores (or None), `originals[i]` the kept keywords as given,
    stripped (only when asked for: sentiment reads them).
    """

    ids: list[tuple[int, ...]]
    scores: list[tuple[float, ...]] | None = None
    originals: list[tuple[str, ...]] | None = None

    @property
    def sizes(self) -> np.ndarray:
        return np.fromiter(map(len, self.ids), dtype=np.int64, count=len(self.ids))


def _scores_fast_path(raw_scores: Sequence[Any]) -> tuple[float, ...] | None:
    """The scores as a tuple when all are floats in [0, 1] (the common case), else None."""
    if not all(type(score) is float for score in raw_scores) or not math.isfinite(sum(raw_scores)):
        return None
    if raw_scores and (min(raw_scores) < 0.0 or max(raw_scores) > 1.0):
        return None
    return tuple(raw_scores)


def content_key(row: Any) -> Hashable | None:
    """A list or tuple of hashable items as a tuple (its content), else None."""
    if type(row) not in (list, tuple):
        return None
    key = tuple(row)
    try:
        hash(key)
    except TypeError:  # an unhashable item: reported where the row is checked
        return None
    return key


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
    """Validate and prepare one side of a corpus (SPEC section 1).

    With `reuse_lists` (for references: the same gold list broadcast to every review), a
    list given more than once (`repeated_rows`) is prepared once and its prepared tuple
    shared. `numbers` names the examples in messages (default: their positions).
    """
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
        raw_scores = None
        if scores is not None:
            raw_scores = check_keyword_list(scores[position], scores_name, index)
            if len(raw_scores) != len(raw_list):
                raise ValueError(
                    f"{side}: example {index} has {len(raw_list)} keywords but {len(raw_scores)} {scores_name}"
                )
        try:
            ids = [known(raw) for raw in raw_list]
        except TypeError:  # unhashable keyword: reported below
            ids = [None]
        else:
            if None in ids:  # new keywords, or not strings (reported below)
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
    """Predictions and references prepared against one shared vocabulary."""

    strings: list[str]
    predictions: PreparedSide
    references: PreparedSide

    def __len__(self) -> int:
        return len(self.predictions.ids)


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
    predictions = check_corpus(predictions, "predictions")
    references = check_corpus(references, "references")
    inputs = {"predictions": predictions, "references": references}
    if scores is not None:
        inputs[scores_name] = scores = check_corpus(scores, scores_name)
    check_same_length(**inputs)
    vocabulary = Vocabulary(make_normalizer(normalize, stemmer))
    prepared_predictions = prepare_side(
        predictions, vocabulary, "predictions", scores, clip_scores, keep_originals, scores_name=scores_name
    )
    prepared_references = prepare_side(
        references, vocabulary, "references", keep_originals=keep_originals, reuse_lists=True
    )
    return PreparedCorpus(vocabulary.strings, prepared_predictions, prepared_references)


def cutoff_lengths(corpus: PreparedCorpus, top_k: int | str | None) -> list[int | None]:
    """How many leading predictions each example keeps: all (None), `top_k` (int), or as
    many as it has gold keywords ("O"). `top_k` must have passed `validation.check_top_k`."""
    if top_k == "O":
        return [len(gold) for gold in corpus.references.ids]
    return [top_k] * len(corpus)  # type: ignore[list-item]


def precision_denominators(corpus: PreparedCorpus, top_k: int | str | None) -> np.ndarray:
    """Per example, the precision denominator of the count-based families (SPEC section 3):
    the number of predictions (`None`), k (an int: a missing prediction counts as wrong,
    trec_eval's `P_k`) or |G| ("O": R-precision)."""
    if top_k is None:
        return corpus.predictions.sizes
    if top_k == "O":
        return corpus.references.sizes
    return np.full(len(corpus), float(top_k))  # float: k may exceed int64


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
