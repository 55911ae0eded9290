"""What the differential tests share (issue 10, "Method"): random corpora and documents, the
same corpus shaped for each preparation path, each internal strategy of `keyword_prf` and
`weighted_keyword_prf` forced or left to choose, and the comparison with the brute force of
`reference_impl` (written straight from SPEC.md).

Strategies: the relation tested on the pairs that meet in each example (in C or in Python),
found by a containment search over each example's own strings (in C or in Python), or
computed between the distinct strings by substring containment by dict lookup, by
`str.find` or by rolling hashes (`matching`), or each example by one of these drawn at
random; examples normalized and related document by document (in C or in Python) or
through a prepared corpus; each run with other fast paths
forced off or on: the vectorized preparation
or the per-row one, joining predictions to gold lists by expanding the relation or by
testing each gold keyword, one-to-one counts from edge counts or by Hopcroft-Karp for every
example, exact-match counts from one sort of (example, keyword) keys or from the edges,
normalization of many strings in one batch or one by one; and the fast / slow
preparation paths with reference lists cached by identity or by content (`preparation`).
The corpora mix inner double spaces, tabs, format characters (Cf), Unicode case,
duplicates, empty and punctuation-only keywords. The semantic family's differential tests
embed with a stand-in encoder (`StandInEncoder`, `embed`)."""

from __future__ import annotations

import hashlib
import math
import re
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest

import opinion_metrics.core.matching as matching
import opinion_metrics.core.preparation as preparation
from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics._native import helper
from opinion_metrics.core import containment, documents, example_edges, pairs, relations
from opinion_metrics.core.validation import lone_surrogate

_FIND = containment._containment_by_find
_LOOKUP = containment._containment_by_lookup
_HASH = containment._containment_by_hash
_IN_C = containment._contained_in_c
_PAIRS = relations.pair_edges
_PAIRS_IN_PYTHON = example_edges._pair_edges_in_python
_DOCUMENTS = documents.document_edges
_DOCUMENTS_IN_PYTHON = documents._document_edges_in_python
_SEARCH = example_edges.search_edges
STRATEGIES = (
    "auto", "find", "lookup", "hash", "automata", "windows", "pairs", "pairs_in_python", "documents",
    "documents_in_python", "search", "search_in_python", "routes",
)  # fmt: skip
CONTAINMENTS = {"find": "find_cost", "lookup": "lookup_cost", "hash": "hash_cost"}
# The other fast paths forced with each strategy (every one runs on every corpus).
FORCED = {
    "auto": (),
    "find": ("python_containment", "per_row_preparation", "matching_everywhere", "c_edges_by_list", "index"),
    "lookup": ("expand_relation", "one_by_one_normalization", "python_twins", "index"),
    "hash": ("test_each_gold", "exact_by_edges", "python_twins", "index"),
    "automata": ("c_containment_by_small_automata", "index"),
    "windows": ("c_containment_by_windows", "index"),
    "pairs": ("pairs", "prepared_corpus", "matching_everywhere"),
    "pairs_in_python": ("pairs", "prepared_corpus", "python_twins"),
    "documents": ("documents", "pairs"),
    "documents_in_python": ("documents", "python_twins", "pairs", "matching_everywhere"),
    "search": ("documents", "search"),
    "search_in_python": ("documents", "search", "python_twins", "matching_everywhere"),
    "routes": ("prepared_corpus", "routes"),
}


def devowel(text: str) -> str:
    """A custom normalizer: lower case, vowels removed, stripped (inner white space kept)."""
    return re.sub("[aeiou]", "", text.lower()).strip()


MATCHES = ("exact", "substring", "token")
NORMALIZES = ("default", "ascii", "none", devowel)
STEMMERS = (None, "porter")
TOP_KS = (None, "M", 1, 3, "O")
PREPARATIONS = ("lists", "slow", "tuples", "fresh", "series", "arrays")
PRESENCES = ("all", "present", "absent")

# Keyword material: tokens that collide under case folding, NFKC, stemming or vowel removal.
TOKENS = [
    "a", "b", "c", "ab", "war", "wars", "Wars", "star", "art", "party", "satire", "Satire",
    "social", "Straße", "STRASSE", "strasse", "İstanbul", "istanbul", "café", "cafe\u0301",
    "running", "runs", "run", "connection", "connected", "ﬁne", "fine", "ＡＢＣ", "abc", "x", "y",
]  # fmt: skip
SEPARATORS = [" ", " ", " ", "  ", "\t", "\u00a0", " - ", "\u200b", "_", "\x00", "\u3000"]
DECORATIONS = ["", "", "", "", "!", "\ufeff", "\u200f", " ", "\t", "...", "#", "\u200b"]
ODD = ["", "  ", "!!!", "\u200b", "\ufeff", "-", "a  b", "a b", "a\tb", "a b c", "x a b y", "A B", "b\x00a", "\x00"]


def random_keyword(rng: np.random.Generator) -> str:
    if rng.random() < 0.15:
        return str(rng.choice(ODD))
    n = int(rng.integers(1, 4))
    text = str(rng.choice(TOKENS))
    for _ in range(n - 1):
        text += str(rng.choice(SEPARATORS)) + str(rng.choice(TOKENS))
    if rng.random() < 0.2:
        text = text.upper() if rng.random() < 0.5 else text.title()
    return str(rng.choice(DECORATIONS)) + text + str(rng.choice(DECORATIONS))


def random_list(rng: np.random.Generator, size: int, borrow: list[str] = ()) -> list[str]:
    keywords: list[str] = []
    for _ in range(size):
        roll = rng.random()
        if keywords and roll < 0.12:
            keywords.append(keywords[int(rng.integers(len(keywords)))])  # duplicate
        elif borrow and roll < 0.35:
            keywords.append(borrow[int(rng.integers(len(borrow)))])  # likely a match
        else:
            keywords.append(random_keyword(rng))
    return keywords


def random_scores(rng: np.random.Generator, size: int) -> list[float]:
    values = [0.0, 1.0, 0.5, 0.25]
    return [float(rng.choice(values)) if rng.random() < 0.3 else float(rng.random()) for _ in range(size)]


def random_corpus(rng: np.random.Generator, n_examples: int) -> tuple[list, list, list]:
    """Predictions, scores, references; reference lists are broadcast (one object for
    several examples), copied (equal content, fresh object) or drawn anew."""
    pool = [random_list(rng, int(rng.integers(0, 6))) for _ in range(3)]
    predictions, scores, references = [], [], []
    for _ in range(n_examples):
        roll = rng.random()
        if roll < 0.4:
            gold = pool[int(rng.integers(len(pool)))]
        elif roll < 0.6:
            gold = list(pool[int(rng.integers(len(pool)))])
        else:
            gold = random_list(rng, int(rng.integers(0, 6)))
        predicted = random_list(rng, int(rng.integers(0, 7)), borrow=gold)
        predictions.append(predicted)
        scores.append(random_scores(rng, len(predicted)))
        references.append(gold)
    return predictions, scores, references


def random_texts(rng: np.random.Generator, predictions: list, references: list) -> list[str]:
    """Per example a document: random tokens and separators around some of its keywords."""
    texts = []
    for predicted, gold in zip(predictions, references):
        keywords = [*predicted, *gold]
        parts = []
        for _ in range(int(rng.integers(0, 12))):
            if keywords and rng.random() < 0.4:
                parts.append(keywords[int(rng.integers(len(keywords)))])
            else:
                parts.append(str(rng.choice(TOKENS)))
            parts.append(str(rng.choice([*SEPARATORS, ". ", ", "])))
        texts.append("".join(parts))
    return texts


def prepared_as(
    preparation: str, predictions: list, scores: list, references: list, texts: list
) -> tuple[list, list, list, list]:
    """The same corpus shaped for one preparation path (values unchanged under SPEC):
    "slow" appends an empty keyword to every list (and gives numpy scores), "tuples" gives
    tuples, "arrays" numpy arrays, "series" pandas Series whose index labels are not
    positions, "fresh" gives every example its own copy of its reference list. Lists that
    were one object stay one object, except under "fresh"."""
    memo: dict[int, object] = {}

    def once(value, make):
        if id(value) not in memo:
            memo[id(value)] = (value, make(value))
        return memo[id(value)][1]

    if preparation == "lists":
        return predictions, scores, references, texts
    if preparation == "fresh":
        return predictions, scores, [list(gold) for gold in references], texts
    if preparation == "series":  # read by position, whatever the index labels
        labels = np.random.default_rng(len(predictions)).permutation(len(predictions))[::-1]
        sides = (predictions, scores, references, texts)
        return tuple(pd.Series(side, index=labels, dtype=object) for side in sides)
    if preparation == "arrays":
        return (
            [np.array(p, dtype=object) for p in predictions],
            [np.array(s, dtype=np.float64) for s in scores],
            [once(g, lambda g: np.array(g, dtype=object)) for g in references],
            np.array(texts, dtype=object),
        )
    if preparation == "tuples":
        return (
            [tuple(p) for p in predictions],
            [tuple(s) for s in scores],
            [once(g, tuple) for g in references],
            tuple(texts),
        )
    return (
        [[*p, ""] for p in predictions],
        [[*map(np.float64, s), np.float64(0.5)] for s in scores],
        [once(g, lambda g: [*g, ""]) for g in references],
        texts,
    )


@contextmanager
def strategy(name: str, monkeypatch: pytest.MonkeyPatch, used: dict[str, int] | None = None):
    """Force the containment strategy: a Python one ("find", "lookup", "hash") through the
    cost model, or the C helper's automata or windows; or leave the choice to the library
    ("auto"); count in `used` which search runs (`SEARCHES`)."""

    def counted(kind, function):
        def wrapper(*args, **kwargs):
            if used is not None:
                used[kind] = used.get(kind, 0) + 1
            return function(*args, **kwargs)

        return wrapper

    def found_by(kind, function):
        def wrapper(*args, **kwargs):
            found = function(*args, **kwargs)
            if used is not None and found is not None:
                used[kind] = used.get(kind, 0) + 1
            return found

        return wrapper

    relations.clear_lexical_caches()  # every strategy computes afresh
    with monkeypatch.context() as patch:
        patch.setattr(containment, "_containment_by_find", counted("find", _FIND))
        patch.setattr(containment, "_containment_by_lookup", counted("lookup", _LOOKUP))
        patch.setattr(containment, "_containment_by_hash", counted("hash", _HASH))
        patch.setattr(containment, "_contained_in_c", counted("c", _IN_C))
        patch.setattr(relations, "pair_edges", counted("pairs", _PAIRS))
        patch.setattr(example_edges, "_pair_edges_in_python", counted("pairs_in_python", _PAIRS_IN_PYTHON))
        patch.setattr(relations, "search_edges", counted("search", _SEARCH))
        patch.setattr(pairs, "document_edges", found_by("documents", _DOCUMENTS))  # as `keyword_pairs` calls it
        patch.setattr(documents, "_document_edges_in_python", found_by("documents_in_python", _DOCUMENTS_IN_PYTHON))
        if name != "auto":
            for kind, cost in CONTAINMENTS.items():
                patch.setattr(containment, cost, lambda *args, kind=kind: 0 if name == kind else 1)
        for forced in FORCED[name]:
            force(forced, patch)
        yield


# `example_edges.SEARCH_COSTS` that search every document, or none.
ALWAYS = {"c": (0.0, -1.0), "python": (0.0, -1.0)}
NEVER = {"c": (math.inf, math.inf), "python": (math.inf, math.inf)}


def force(path: str, patch: pytest.MonkeyPatch) -> None:
    """Force one of the fast paths of `preparation` and `matching` off (or its alternative on)."""
    if path == "pairs":  # the relation tested on each example's pairs, however many per distinct string
        patch.setattr(relations, "edge_routes", lambda corpus: np.full(len(corpus), relations.PAIRS, np.int8))
        patch.setattr(example_edges, "SEARCH_COSTS", {"documents": NEVER, "examples": NEVER})
    elif path == "index":  # the relation computed between the distinct strings
        patch.setattr(relations, "edge_routes", lambda corpus: np.full(len(corpus), relations.RELATION, np.int8))
    elif path == "search":  # every document's relation by a containment search over its strings
        patch.setattr(example_edges, "SEARCH_COSTS", {"documents": ALWAYS, "examples": ALWAYS})
        patch.setattr(relations, "edge_routes", lambda corpus: np.full(len(corpus), relations.SEARCH, np.int8))
    elif path == "routes":  # each example by a route drawn at random: pairs, search or the relation
        patch.setattr(
            relations, "edge_routes", lambda corpus: np.random.default_rng(len(corpus)).integers(0, 3, len(corpus))
        )
    elif path == "documents":  # every example on its own, also where gold lists repeat
        patch.setattr(documents, "documents_cheaper", lambda references: True)
    elif path == "prepared_corpus":
        patch.setattr(documents, "documents_cheaper", lambda references: False)
    elif path == "per_row_preparation":
        patch.setattr(preparation, "_prepare_flat", lambda *args, **kwargs: None)
    elif path == "matching_everywhere":  # Hopcroft-Karp even where the edges form a matching
        patch.setattr(matching, "needs_matching", lambda edge_count, *args: edge_count > 0)
    elif path == "expand_relation":
        patch.setattr(relations, "join_by_relation_cost", lambda degrees, sizes: np.ones(len(degrees), bool))
    elif path == "test_each_gold":
        patch.setattr(relations, "join_by_relation_cost", lambda degrees, sizes: np.zeros(len(degrees), bool))
    elif path == "exact_by_edges":  # exact counts from the edges, as the other relations count
        patch.setattr(
            matching,
            "exact_match_counts",
            lambda corpus, cutoffs=None: matching.edge_counts(
                matching.corpus_edges(corpus, "exact"), len(corpus), True, cutoffs
            )[0],
        )
    elif path == "python_containment":  # the Python strategies, the C helper's search left out
        patch.setattr(containment, "_contained_in_c", lambda *args: None)
    elif path == "c_containment_by_small_automata":  # automata over blocks of 16 needle bytes
        in_c = containment._contained_in_c
        patch.setattr(
            containment, "_contained_in_c", lambda needles, haystacks: in_c(needles, haystacks, "automata", 16)
        )
    elif path == "c_containment_by_windows":
        in_c = containment._contained_in_c
        patch.setattr(containment, "_contained_in_c", lambda needles, haystacks: in_c(needles, haystacks, "windows"))
    elif path == "c_edges_by_list":  # the C helper searching each list's ids, never a relation row
        if helper() is not None:
            by_list = lambda corpus, match: relations._corpus_edges_in_c(corpus, match, "list")  # noqa: E731
            patch.setattr(relations, "_corpus_edges", by_list)
    elif path == "python_twins":  # every step of the C helper by its twin in Python and numpy
        patch.setenv(IMPLEMENTATION, "python")
    elif path == "one_by_one_normalization":
        patch.setattr(
            preparation._Normalizer,
            "many",
            lambda self, texts: None if any(map(lone_surrogate, texts)) else [self(text) for text in texts],
        )
    else:
        raise ValueError(path)


def close(a, b, tolerance: float = 1e-12) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)


def differences(actual: dict, expected: dict, corpus: tuple, where: str, tolerance: float = 1e-12) -> list[str]:
    """Descriptions of every returned value that differs from the brute force; a per-example
    difference names the example and its raw input (a minimal reproducer)."""
    problems = []
    top = {key: value for key, value in expected.items() if key != "per_example"}
    if set(actual) != {*top, "per_example"}:
        return [f"{where}: keys {sorted(actual)} != {sorted(top)} + per_example"]
    for key, value in top.items():
        if not close(actual[key], value, tolerance):
            problems.append(f"{where}: {key} = {actual[key]!r}, SPEC {value!r}")
    per_example = actual["per_example"]
    if set(per_example) != set(expected["per_example"]):
        return [*problems, f"{where}: per_example keys {sorted(per_example)}"]
    for key, values in expected["per_example"].items():
        got = per_example[key]
        if len(got) != len(values):
            problems.append(f"{where}: per_example[{key}] has {len(got)} values, SPEC {len(values)}")
            continue
        for i, (a, b) in enumerate(zip(got, values)):
            if not close(a, b, tolerance):
                inputs = ", ".join(repr(side[i]) for side in corpus)
                problems.append(f"{where}: example {i} ({inputs}): {key} = {a!r}, SPEC {b!r}")
                break
    return problems


def options_text(**options) -> str:
    return ", ".join(f"{k}={getattr(v, '__name__', v)!r}" for k, v in options.items())


def check(problems: list[str]) -> None:
    assert not problems, f"{len(problems)} differences from SPEC; first ones:\n" + "\n".join(problems[:8])


def embed(text: str) -> np.ndarray:
    """Twelve integers in [-1, 2] from the string's MD5 (never the zero vector)."""
    vector = np.array([byte % 4 - 1 for byte in hashlib.md5(text.encode("utf-8", "surrogatepass")).digest()[:12]])
    if not vector.any():
        vector[0] = 1
    return vector.astype(np.float64)


class StandInEncoder:
    """A sentence-transformers style model: `encode(texts, **options)` -> array."""

    def encode(self, texts, **options):
        return np.array([embed(text) for text in texts], dtype=np.float32)
