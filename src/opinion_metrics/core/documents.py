"""The match edges of a corpus document by document, without a vocabulary: for built-in
normalizations where each example has its own gold list, each document's own keywords are
normalized and its own pairs tested, or a long document's strings searched (in C where the
helper is built), so that the cost follows each document's pairs, or its strings where those
cost less.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import chain, islice, repeat
from typing import Any

import numpy as np

from .._native import helper
from . import normalization
from .containment import relation_pair_arrays, token_form
from .encoding import CONTENT_SAMPLE
from .example_edges import MATCH_CODES, Edges, search_costs, searched


def _ascii_tables(normalize: str) -> tuple[bytes, bytes, int]:
    """A built-in normalization of ASCII text as the C helper's `document_edges` applies it:
    each character's replacement (after lower case; 255: removed), which characters are
    white space (`str.split`'s), and whether white space is collapsed (1: "default") or only
    stripped (0). Read from the normalizations themselves (`preparation`)."""
    characters = [chr(c) for c in range(128)]
    if normalize == "default":
        replaced = [normalization.ASCII_DEFAULT[ord(ch.lower())] for ch in characters]
    elif normalize == "ascii":
        replaced = [None if normalization.NON_ASCII_ALNUM.match(ch) else ord(ch.lower()) for ch in characters]
    else:
        replaced = list(range(128))
    table = bytes(255 if code is None else code for code in replaced)
    return table, bytes(ch.isspace() for ch in characters), int(normalize == "default")


_DOCUMENT_TABLES = {normalize: _ascii_tables(normalize) for normalize in normalization.NORMALIZE_MODES}


def by_documents(predictions: Sequence[Any], references: Sequence[Any], normalize: Any) -> bool:
    """Whether `document_edges` takes the corpus: a built-in normalization, rows given as
    lists or tuples, and `documents_cheaper`."""
    return (
        isinstance(normalize, str)
        and normalize in _DOCUMENT_TABLES
        and type(predictions) in (list, tuple)
        and type(references) in (list, tuple)
        and 0 < len(predictions) == len(references)
        and documents_cheaper(references)
    )


def documents_cheaper(references: Sequence[Any]) -> bool:
    """Whether normalizing and relating each example on its own costs less than preparing the
    corpus: with the C helper (without it, the corpus path's arrays cost as much as a loop
    over documents in Python, or less), and when the gold keywords of the first
    `CONTENT_SAMPLE` examples are nearly all distinct (`_DISTINCT_GOLD`): documents of their
    own phrases. Where they repeat (a movie's list given to each of its reviews, phrases drawn
    from a small vocabulary), the corpus path normalizes and relates each distinct string
    once, from a table small enough to stay in cache. A sample: its cost does not grow with
    the corpus."""
    if helper() is None:
        return False
    sample = references[:CONTENT_SAMPLE]
    # a list given again, found without reading the lists: right after itself (a movie's list
    # given to each of its reviews: found at once), or later
    if any(map(operator.is_, sample, islice(sample, 1, None))) or len(set(map(id, sample))) < len(sample):
        return False
    try:
        keywords = list(chain.from_iterable(sample))
    except TypeError:  # rows that are not lists: the corpus path names what is wrong
        return False
    # exact str only: a subclass's __hash__ and __eq__ are never asked (the corpus path reads it by value)
    return set(map(type, keywords)) <= {str} and len(set(keywords)) >= _DISTINCT_GOLD * len(keywords)


# The share of distinct strings among a sample of gold keywords above which documents are
# taken to have their own phrases: 0.97-0.99 for phrases of the movie reviews' 21,339 words,
# 0.70-0.73 for phrases drawn from a vocabulary of 5,000.
_DISTINCT_GOLD = 0.9


def document_edges(
    predictions: Sequence[Any], references: Sequence[Any], normalize: str, match: str
) -> tuple[np.ndarray, np.ndarray, Edges] | None:
    """`(prediction sizes, gold sizes, edges)` of a corpus prepared under a built-in
    normalization (docs/definitions.md section 1) and related under `match`, each example on
    its own: its keywords normalized, empty and repeated forms dropped, every (prediction,
    gold keyword) pair tested, or, in a long document (`example_edges.searched`), its
    relation found by a containment search over its strings; sizes and positions count the
    kept keywords. No vocabulary: time and memory linear in the keywords and each example's
    pairs (a long document's strings). In C when the helper is built (ASCII text normalized
    there, the rest by `preparation`), else `_document_edges_in_python`. None when a row is
    not a list or tuple of str, or a keyword holds a lone surrogate (the corpus path names it)."""
    speedups = helper()
    if speedups is None:
        return _document_edges_in_python(predictions, references, normalize, match)
    known: dict[str, tuple[str, str]] = {}
    while True:
        found = speedups.document_edges(
            predictions, references, *_DOCUMENT_TABLES[normalize], MATCH_CODES[match], known, *search_costs("documents")
        )
        if not isinstance(found, list):
            break
        missing = list(dict.fromkeys(found))  # keywords that are not ASCII: normalized in Python
        forms = normalization.make_normalizer(normalize).many(missing)
        if forms is None:
            return None
        known.update(zip(missing, ((form, " ".join(form.split())) for form in forms)))
    if found is None:
        return None
    prediction_sizes, gold_sizes, columns = found
    examples, positions, gold_positions = (np.frombuffer(column, dtype=np.int64) for column in columns)
    edges = Edges(examples, positions, gold_positions, match == "exact")
    return np.frombuffer(prediction_sizes, dtype=np.int64), np.frombuffer(gold_sizes, dtype=np.int64), edges


def _document_edges_in_python(
    predictions: Sequence[Any], references: Sequence[Any], normalize: str, match: str
) -> tuple[np.ndarray, np.ndarray, Edges] | None:
    """`document_edges` in Python: the distinct keywords normalized in one batch, then each
    example's kept forms related pair by pair (token forms padded with spaces), or by a
    search (`relation_pair_arrays`) in a long document."""
    rows = [*predictions, *references]
    if not set(map(type, rows)) <= {list, tuple} or not set(map(type, chain.from_iterable(rows))) <= {str}:
        return None
    distinct = list(dict.fromkeys(chain.from_iterable(rows)))
    forms = normalization.make_normalizer(normalize).many(distinct)
    if forms is None:
        return None
    form_of = dict(zip(distinct, forms))
    sizes: list[list[int]] = [[], []]
    edges: list[tuple[int, int, int]] = []
    for example, (predicted, gold) in enumerate(zip(predictions, references)):
        kept = []
        for side, row in enumerate((predicted, gold)):
            forms_kept = list(dict.fromkeys(form for form in map(form_of.__getitem__, row) if form))
            sizes[side].append(len(forms_kept))
            kept.append(forms_kept)
        predicted_forms, gold_forms = kept
        pairs = len(predicted_forms) * len(gold_forms)
        if match != "exact" and searched(pairs, sum(map(len, (*predicted_forms, *gold_forms))), "documents"):
            related, around = relation_pair_arrays(predicted_forms, gold_forms, match)
            edges += zip(repeat(example), related.tolist(), around.tolist())
            continue
        if match == "exact":
            position = {form: g for g, form in enumerate(gold_forms)}
            edges += [(example, j, position[form]) for j, form in enumerate(predicted_forms) if form in position]
            continue
        if match == "token":
            predicted_forms, gold_forms = list(map(token_form, predicted_forms)), list(map(token_form, gold_forms))
        edges += [
            (example, j, g) for j, a in enumerate(predicted_forms) for g, b in enumerate(gold_forms) if a in b or b in a
        ]
    columns = [np.fromiter((edge[k] for edge in edges), dtype=np.int64, count=len(edges)) for k in range(3)]
    prediction_sizes, gold_sizes = (np.asarray(side, dtype=np.int64) for side in sizes)
    return prediction_sizes, gold_sizes, Edges(*columns, match == "exact")
