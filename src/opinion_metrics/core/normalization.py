"""Keyword normalization (docs/definitions.md section 1): the built-in modes ("default",
"ascii", "none") or a callable, optionally Porter-stemmed, with whole-batch forms for ASCII
strings and the normalized forms kept across calls.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from .validation import (
    any_lone_surrogate,
)

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
ASCII_DEFAULT = {codepoint: _DEFAULT_TABLE[codepoint] for codepoint in range(128)}


NON_ASCII_ALNUM = re.compile(r"[^a-zA-Z0-9\s]")


# What `NON_ASCII_ALNUM` deletes from ASCII text but the separator, as a table (faster
# than the regular expression).
_ASCII_NOT_ALNUM = str.maketrans(
    "", "", "".join(chr(c) for c in range(1, 128) if NON_ASCII_ALNUM.match(chr(c)))
)  # (chr(0) is the separator)


_SEPARATOR = "\x00"


def _normalize_unicode(text: str) -> str:
    """The "default" normalization of any string (docs/definitions.md section 1)."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_DEFAULT_TABLE)
    return " ".join(text.split())


def _normalize_default(text: str) -> str:
    if text.isascii():  # NFKC is the identity and casefold is lower on ASCII: same result
        return " ".join(text.lower().translate(ASCII_DEFAULT).split())
    return _normalize_unicode(text)


def _normalize_ascii(text: str) -> str:
    return NON_ASCII_ALNUM.sub("", text.lower()).strip()


def _normalize_none(text: str) -> str:
    return text.strip()


def _many_default(joined: str) -> list[str]:
    return list(map(" ".join, map(str.split, joined.lower().translate(ASCII_DEFAULT).split(_SEPARATOR))))


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
# results: tests/core/test_fast_paths_normalization.py).
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
    """Forget the normalized forms (and Porter stems) kept across calls."""
    for cache in _NORMALIZED.values():
        cache.clear()
    _STEMS.clear()


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
