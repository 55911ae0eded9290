"""What a count-based keyword family counts, prepared in one step: per example, its kept
predictions and gold keywords and the match relation between them, with the top-k cut-offs,
the precision denominators and which examples a presence view keeps.

Two paths give the same `KeywordPairs`: documents of their own gold lists are normalized and
related document by document (`documents.document_edges`: cost follows each document's own
pairs); any other corpus is prepared once into ids (`preparation.prepare_corpus`), filtered
by presence, and related through its vocabulary when it is counted (`matching.count_matches`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cutoffs import cutoffs_of_sizes, denominators_of_sizes, precision_denominators, prediction_cutoffs
from .documents import by_documents, document_edges
from .normalization import NormalizeOption
from .preparation import PreparedCorpus, prepare_corpus
from .presence import check_all_texts, select_presence
from .relations import Edges
from .validation import TopK


@dataclass(frozen=True)
class KeywordPairs:
    """A corpus ready to be counted: `edges` of its match relation (the per-document path) or
    the prepared `corpus` whose relation `matching.count_matches` finds under `match`; each
    example's gold keywords (`gold_sizes`), the cut-off of its predictions (None: all), its
    precision denominator and whether it counts (`included`, None: all)."""

    match: str
    gold_sizes: np.ndarray
    denominators: np.ndarray
    cutoffs: np.ndarray | None
    included: np.ndarray | None
    edges: Edges | None = None
    corpus: PreparedCorpus | None = None

    def __len__(self) -> int:
        return len(self.gold_sizes)


def keyword_pairs(
    predictions: Sequence[Any],
    references: Sequence[Any],
    *,
    texts: Sequence[Any] | None,
    presence: str,
    match: str,
    normalize: NormalizeOption,
    stemmer: str | None,
    top_k: TopK,
) -> KeywordPairs:
    """The `KeywordPairs` of a corpus (inputs checked here, options by the caller)."""
    if presence == "all" and stemmer is None and by_documents(predictions, references, normalize):
        found = document_edges(predictions, references, normalize, match)  # type: ignore[arg-type]
        if found is not None:  # (None: rows the corpus path checks and names)
            prediction_sizes, gold_sizes, edges = found
            n = len(gold_sizes)
            check_all_texts(texts, n)
            cutoffs = cutoffs_of_sizes(top_k, n, lambda: gold_sizes)
            denominators = denominators_of_sizes(top_k, n, lambda: prediction_sizes, lambda: gold_sizes)
            return KeywordPairs(match, gold_sizes, denominators, cutoffs, None, edges=edges)
    corpus = prepare_corpus(predictions, references, normalize=normalize, stemmer=stemmer)
    corpus, included = select_presence(corpus, texts, presence, normalize, stemmer)
    return KeywordPairs(
        match,
        corpus.references.sizes,
        precision_denominators(corpus, top_k),
        prediction_cutoffs(corpus, top_k),
        included,
        corpus=corpus,
    )
