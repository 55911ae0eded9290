"""Present and absent keywords (docs/definitions.md section 9).

A prepared keyword is present in a text iff its tokens occur as a contiguous run of the
text's tokens, the text being prepared like a keyword (same normalization and stemmer).
Each text is prepared once per call; each distinct (keyword list, text) pair is scanned
once, and a keyword is only searched for when all its tokens occur in the text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .normalization import NormalizeOption, make_normalizer, plain_str
from .preparation import PreparedCorpus, PreparedSide
from .validation import check_corpus, check_presence, check_texts, describe


class _PresenceIndex:
    """Which prepared keywords (by id) occur in which prepared texts."""

    def __init__(self, strings: Sequence[str], normalize: NormalizeOption, stemmer: str | None) -> None:
        self._normalize = make_normalizer(normalize, stemmer)
        self._strings = strings
        self._tokens: dict[int, tuple[str, ...]] = {}
        self._texts: dict[str, tuple[str, frozenset[str]]] = {}

    def text(self, raw: str) -> tuple[str, frozenset[str]]:
        """The prepared text, padded with spaces, and its set of tokens (once per text)."""
        raw = plain_str(raw)  # a str subclass by its value (its own methods never asked)
        prepared = self._texts.get(raw)
        if prepared is None:
            normalized = self._normalize(raw)
            if not isinstance(normalized, str):
                raise ValueError(f"normalize returned {describe(normalized)} for a text; it must return a str")
            tokens = normalized.split()
            prepared = self._texts[raw] = (" " + " ".join(tokens) + " ", frozenset(tokens))
        return prepared

    def _tokens_of(self, keyword_id: int) -> tuple[str, ...]:
        tokens = self._tokens.get(keyword_id)
        if tokens is None:
            tokens = self._tokens[keyword_id] = tuple(self._strings[keyword_id].split())
        return tokens

    def _occurs(self, tokens: tuple[str, ...], text: tuple[str, frozenset[str]]) -> bool:
        padded, vocabulary = text
        # (a keyword with no tokens, white space kept by a custom normalize, occurs in every text)
        return vocabulary.issuperset(tokens) and (len(tokens) <= 1 or f" {' '.join(tokens)} " in padded)

    def present(self, ids: Sequence[int], text: tuple[str, frozenset[str]]) -> tuple[bool, ...]:
        return tuple(self._occurs(self._tokens_of(keyword_id), text) for keyword_id in ids)

    def by_first_token(self, ids: Sequence[int]) -> dict[str, list[int]]:
        """Positions in `ids` by the first token of their keyword (for a long, shared list; a
        keyword with no tokens under "")."""
        index: dict[str, list[int]] = {}
        for position, keyword_id in enumerate(ids):
            tokens = self._tokens_of(keyword_id)
            index.setdefault(tokens[0] if tokens else "", []).append(position)
        return index

    def present_in_long_list(
        self, ids: Sequence[int], first_tokens: dict[str, list[int]], text: tuple[str, frozenset[str]]
    ) -> list[int]:
        """The positions in `ids` of present keywords, ascending; only the keywords whose
        first token occurs in the text are tried."""
        vocabulary = text[1]
        candidates = vocabulary & first_tokens.keys() if len(vocabulary) < len(first_tokens) else first_tokens
        present = [
            position
            for token in candidates
            if token in vocabulary
            for position in first_tokens[token]
            if self._occurs(self._tokens_of(ids[position]), text)
        ]
        return sorted([*present, *first_tokens.get("", ())])  # (a keyword with no tokens occurs in every text)


def apply_presence(
    corpus: PreparedCorpus,
    texts: Sequence[str],
    presence: str,
    normalize: NormalizeOption,
    stemmer: str | None,
) -> tuple[PreparedCorpus, np.ndarray]:
    """The corpus keeping only present (or absent) keywords on both sides, and which examples
    count: those with at least one reference of that kind (docs/definitions.md section 9)."""
    keep = presence == "present"
    index = _PresenceIndex(corpus.strings, normalize, stemmer)
    kept_by_key: dict[tuple[int, str], list[int] | range] = {}
    first_token_indexes: dict[int, dict[str, list[int]]] = {}

    def kept_positions(keyword_ids: tuple[int, ...], text: str, shared: bool) -> list[int] | range:
        if not shared:
            flags = index.present(keyword_ids, index.text(text))
            return [position for position, flag in enumerate(flags) if flag == keep]
        key = (id(keyword_ids), text)  # a gold list repeated for many reviews: once per (list, text)
        kept = kept_by_key.get(key)
        if kept is None:
            first_tokens = first_token_indexes.get(id(keyword_ids))
            if first_tokens is None:
                first_tokens = first_token_indexes[id(keyword_ids)] = index.by_first_token(keyword_ids)
            present = index.present_in_long_list(keyword_ids, first_tokens, index.text(text))
            if keep:
                kept = present
            elif not present:
                kept = range(len(keyword_ids))
            else:
                present_set = set(present)
                kept = [p for p in range(len(keyword_ids)) if p not in present_set]
            kept_by_key[key] = kept
        return kept

    def filtered(side: PreparedSide, shared: bool) -> PreparedSide:
        ids, scores, originals = [], [], []
        for example, keyword_ids in enumerate(side.ids):
            kept = kept_positions(keyword_ids, texts[example], shared)
            if isinstance(kept, range):  # everything kept: share the prepared tuples
                ids.append(keyword_ids)
                if side.scores is not None:
                    scores.append(side.scores[example])
                if side.originals is not None:
                    originals.append(side.originals[example])
                continue
            ids.append(tuple(keyword_ids[p] for p in kept))
            if side.scores is not None:
                scores.append(tuple(side.scores[example][p] for p in kept))
            if side.originals is not None:
                originals.append(tuple(side.originals[example][p] for p in kept))
        return PreparedSide(
            ids, scores if side.scores is not None else None, originals if side.originals is not None else None
        )

    references = filtered(corpus.references, shared=True)
    predictions = filtered(corpus.predictions, shared=False)
    included = references.sizes > 0
    return PreparedCorpus(corpus.strings, predictions, references), included


def check_all_texts(texts: Sequence[str] | None, n: int) -> None:
    """Texts given with presence="all" are not read, but a wrong count is a mistake worth naming."""
    if texts is not None and len(check_corpus(texts, "texts")) != n:
        check_texts(texts, n)


def select_presence(
    corpus: PreparedCorpus,
    texts: Sequence[str] | None,
    presence: str,
    normalize: NormalizeOption,
    stemmer: str | None,
) -> tuple[PreparedCorpus, np.ndarray | None]:
    """`apply_presence` for "present" / "absent"; the corpus unchanged (every example
    included: None) for "all"."""
    if check_presence(presence) == "all":
        check_all_texts(texts, len(corpus))
        return corpus, None
    return apply_presence(corpus, check_texts(texts, len(corpus)), presence, normalize, stemmer)
