"""Differential test (issue 10, "Method"): every option combination of `keyword_prf` and
`weighted_keyword_prf` on random corpora, with each internal strategy forced and also left
to choose, against the brute force of `reference_impl` (written straight from SPEC.md).

Strategies: the relation tested on the pairs that meet in each example (in C or in Python),
or computed between the distinct strings by substring containment by dict lookup, by
`str.find` or by rolling hashes (`matching`); examples normalized and related document by
document (in C or in Python) or through a prepared corpus; each run with other fast paths
forced off or on: the vectorized preparation
or the per-row one, joining predictions to gold lists by expanding the relation or by
testing each gold keyword, one-to-one counts from edge counts or by Hopcroft-Karp for every
example, exact-match counts from one sort of (example, keyword) keys or from the edges,
normalization of many strings in one batch or one by one; and the fast / slow
preparation paths with reference lists cached by identity or by content (`preparation`).
The corpora mix the shapes that select each one (thousands of predictions sharing one gold
list; long gold keywords; thousands of distinct gold lists) with inner double spaces, tabs,
format characters (Cf), Unicode case, duplicates, empty and punctuation-only keywords.
`presence` ("all" / "present" / "absent", with random texts) is cycled over the
combinations, as is the shape of the inputs (lists, tuples, numpy arrays, pandas Series).
OPINION_METRICS_DIFFERENTIAL_SEEDS=5 runs each combination on 5 corpora instead of 1.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
import reference_impl as ref

import opinion_metrics.core.matching as matching
import opinion_metrics.core.preparation as preparation
from opinion_metrics import keyword_prf, map_at_k, ndcg_at_k, weighted_keyword_prf
from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics._native import helper
from opinion_metrics.core import containment, documents, pairs, relations
from opinion_metrics.core.validation import lone_surrogate

SEEDS = int(os.environ.get("OPINION_METRICS_DIFFERENTIAL_SEEDS", "1"))
_FIND = containment._containment_by_find
_LOOKUP = containment._containment_by_lookup
_HASH = containment._containment_by_hash
_IN_C = containment._contained_in_c
_PAIRS = relations.pair_edges
_PAIRS_IN_PYTHON = relations._pair_edges_in_python
_DOCUMENTS = documents.document_edges
_DOCUMENTS_IN_PYTHON = documents._document_edges_in_python
STRATEGIES = (
    "auto", "find", "lookup", "hash", "automata", "windows", "pairs", "pairs_in_python", "documents",
    "documents_in_python",
)  # fmt: skip
CONTAINMENTS = {"find": "find_cost", "lookup": "lookup_cost", "hash": "hash_cost"}
# Which search each strategy runs under "substring" and "token" ("c": the C helper's
# containment; "pairs": the C helper's pair tests; the documents strategies relate by pairs
# what the per-document path leaves to the corpus: the weighted family, a callable normalize).
SEARCHES = {
    "auto": None, "find": "find", "lookup": "lookup", "hash": "hash", "automata": "c", "windows": "c",
    "pairs": "pairs", "pairs_in_python": "pairs_in_python", "documents": "pairs",
    "documents_in_python": "pairs_in_python",
}  # fmt: skip
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
}
# Which per-document path each strategy runs where it applies (keyword_prf, a built-in
# normalization, no stemmer, presence "all").
DOCUMENTS = {"documents": "documents", "documents_in_python": "documents_in_python"}


def devowel(text: str) -> str:
    """A custom normalizer: lower case, vowels removed, stripped (inner white space kept)."""
    return re.sub("[aeiou]", "", text.lower()).strip()


MATCHES = ("exact", "substring", "token")
NORMALIZES = ("default", "ascii", "none", devowel)
STEMMERS = (None, "porter")
TOP_KS = (None, "M", 1, 3, "O")
KEYWORD_OPTIONS = [
    dict(zip(("one_to_one", "average", "top_k", "zero_division"), values))
    for values in itertools.product((True, False), ("macro", "micro"), TOP_KS, (0.0, 1.0))
]
WEIGHTED_OPTIONS = [
    {**options, "k": k, "relevance": relevance}
    for options in KEYWORD_OPTIONS
    for k in (1, 3, 5)
    for relevance in ("graded", "binary")
]
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
        patch.setattr(relations, "_pair_edges_in_python", counted("pairs_in_python", _PAIRS_IN_PYTHON))
        patch.setattr(pairs, "document_edges", found_by("documents", _DOCUMENTS))  # as `keyword_pairs` calls it
        patch.setattr(documents, "_document_edges_in_python", found_by("documents_in_python", _DOCUMENTS_IN_PYTHON))
        if name != "auto":
            for kind, cost in CONTAINMENTS.items():
                patch.setattr(containment, cost, lambda *args, kind=kind: 0 if name == kind else 1)
        for forced in FORCED[name]:
            force(forced, patch)
        yield


def force(path: str, patch: pytest.MonkeyPatch) -> None:
    """Force one of the fast paths of `preparation` and `matching` off (or its alternative on)."""
    if path == "pairs":  # the relation tested on each example's pairs, however many per distinct string
        patch.setattr(relations, "relation_by_pairs", lambda corpus: True)
    elif path == "index":  # the relation computed between the distinct strings
        patch.setattr(relations, "relation_by_pairs", lambda corpus: False)
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


def presence_for(n: int) -> str:
    """The presence option of combination n (cycled apart from the preparation path)."""
    return PRESENCES[n // len(PREPARATIONS) % len(PRESENCES)]


@pytest.mark.parametrize("stemmer", STEMMERS)
@pytest.mark.parametrize("normalize", NORMALIZES, ids=lambda n: getattr(n, "__name__", n))
@pytest.mark.parametrize("match", MATCHES)
def test_keyword_prf_equals_spec(match, normalize, stemmer, monkeypatch):
    problems = []
    for seed, (n, options) in itertools.product(range(SEEDS), enumerate(KEYWORD_OPTIONS)):
        rng = np.random.default_rng([seed, n, MATCHES.index(match), NORMALIZES.index(normalize), int(stemmer is None)])
        predictions, _, references = random_corpus(rng, int(rng.integers(1, 12)))
        texts = random_texts(rng, predictions, references)
        options = {**options, "presence": presence_for(n), "match": match, "normalize": normalize, "stemmer": stemmer}
        expected = ref.keyword_prf(predictions, references, texts=texts, **options)
        preparation = PREPARATIONS[n % len(PREPARATIONS)]
        shaped, _, shaped_references, shaped_texts = prepared_as(
            preparation, predictions, [[]] * len(predictions), references, texts
        )
        for name in STRATEGIES:
            with strategy(name, monkeypatch):
                actual = keyword_prf(shaped, shaped_references, texts=shaped_texts, return_per_example=True, **options)
            where = f"keyword_prf({options_text(**options)}; strategy {name}, preparation {preparation})"
            problems += differences(actual, expected, (predictions, references, texts), where)
        without = keyword_prf(shaped, shaped_references, texts=shaped_texts, **options)
        assert without == {k: v for k, v in actual.items() if k != "per_example"}
    check(problems)


@pytest.mark.parametrize("stemmer", STEMMERS)
@pytest.mark.parametrize("normalize", NORMALIZES, ids=lambda n: getattr(n, "__name__", n))
@pytest.mark.parametrize("match", MATCHES)
def test_weighted_keyword_prf_equals_spec(match, normalize, stemmer, monkeypatch):
    problems = []
    derived = []  # calls that read only the scores of rows the keyword family had prepared
    with_scores = preparation._with_scores
    monkeypatch.setattr(preparation, "_with_scores", lambda *args: derived.append(1) or with_scores(*args))
    for seed, (n, options) in itertools.product(range(SEEDS), enumerate(WEIGHTED_OPTIONS)):
        combination = [seed, n, MATCHES.index(match), NORMALIZES.index(normalize), int(stemmer is None), 1]
        rng = np.random.default_rng(combination)
        predictions, scores, references = random_corpus(rng, int(rng.integers(1, 10)))
        texts = random_texts(rng, predictions, references)
        options = {**options, "presence": presence_for(n), "match": match, "normalize": normalize, "stemmer": stemmer}
        expected = ref.weighted_keyword_prf(predictions, scores, references, texts=texts, **options)
        shape = PREPARATIONS[n % len(PREPARATIONS)]
        shaped = prepared_as(shape, predictions, scores, references, texts)
        for name in STRATEGIES:
            with strategy(name, monkeypatch):
                actual = weighted_keyword_prf(*shaped[:3], texts=shaped[3], return_per_example=True, **options)
            where = f"weighted_keyword_prf({options_text(**options)}; strategy {name}, preparation {shape})"
            problems += differences(actual, expected, (predictions, scores, references, texts), where)
        with strategy("auto", monkeypatch):  # after the keyword family on the same rows: its ids, these scores
            keyword_prf(shaped[0], shaped[2], match=match, normalize=normalize, stemmer=stemmer)
            actual = weighted_keyword_prf(*shaped[:3], texts=shaped[3], return_per_example=True, **options)
        where = f"weighted_keyword_prf({options_text(**options)}; after keyword_prf, preparation {shape})"
        problems += differences(actual, expected, (predictions, scores, references, texts), where)
        if options["presence"] == "all" and options["top_k"] is None and options["one_to_one"]:
            k, relevance = options["k"], options["relevance"]
            common = {key: options[key] for key in ("match", "normalize", "stemmer", "k", "zero_division")}
            ndcg = ndcg_at_k(shaped[0], shaped[2], relevance=relevance, **common)
            assert close(ndcg, expected[f"ndcg@{k}"]), (ndcg, expected[f"ndcg@{k}"], predictions, references, common)
            if relevance == "binary":
                ap = map_at_k(shaped[0], shaped[2], **common)
                assert close(ap, expected[f"map@{k}"]), (ap, expected[f"map@{k}"], predictions, references, common)
    check(problems)
    if helper() is not None and isinstance(normalize, str):  # (a callable's forms are not kept)
        assert derived, "the scores were never read for rows kept prepared without them"


BIG_OPTIONS = [
    {"one_to_one": True, "average": "macro", "top_k": None},
    {"one_to_one": False, "average": "micro", "top_k": 3},
    {"one_to_one": True, "average": "micro", "top_k": "O"},
    {"one_to_one": False, "average": "macro", "top_k": 1},
]


def broadcast_corpus(seed: int, n_examples: int, fresh: bool) -> tuple[list, list, list]:
    """Thousands of short prediction lists sharing one gold list (one object, or equal copies)."""
    rng = np.random.default_rng(seed)
    gold = [str(rng.choice(TOKENS)) for _ in range(4)] + ["a b c", "x a b y", "\ufeffwar", "a  b", "Straße!"]
    candidates = [random_keyword(rng) for _ in range(300)] + ["a b", "a  b", "a\tb", "b c", "A  B"]
    candidates += [f"filler{i}" for i in range(2000)]  # many predictions, short gold: lookup
    predictions = []
    for _ in range(n_examples):
        picks = rng.integers(len(candidates), size=int(rng.integers(1, 4)))
        predictions.append([candidates[i] for i in picks])
    scores = [random_scores(rng, len(p)) for p in predictions]
    references = [list(gold) for _ in predictions] if fresh else [gold] * n_examples
    return predictions, scores, references


def long_gold_corpus(seed: int, n_examples: int) -> tuple[list, list, list]:
    """Gold keywords of hundreds to thousands of characters; short predictions, some cut from them."""
    rng = np.random.default_rng(seed)
    references, predictions = [], []
    for _ in range(n_examples):
        gold = []
        for _ in range(int(rng.integers(1, 4))):
            words = [str(rng.choice(TOKENS)) for _ in range(int(rng.integers(50, 500)))]
            gold.append("".join(word + str(rng.choice(SEPARATORS)) for word in words))
        predicted = random_list(rng, int(rng.integers(0, 5)))
        for _ in range(int(rng.integers(0, 4))):
            source = gold[int(rng.integers(len(gold)))]
            start = int(rng.integers(len(source)))
            predicted.append(source[start : start + int(rng.integers(1, 30))])
        references.append(gold)
        predictions.append(predicted)
    scores = [random_scores(rng, len(p)) for p in predictions]
    return predictions, scores, references


def distinct_gold_corpus(seed: int, n_examples: int) -> tuple[list, list, list]:
    """The keyphrase benchmark shape: every example has its own gold list, drawn (with the
    predictions) from a vocabulary of a thousand phrases, so that thousands of distinct
    strings meet thousands (rolling hashes)."""
    rng = np.random.default_rng(seed)
    phrases = [random_keyword(rng) for _ in range(1000)] + [f"phrase {i} of {i % 7}" for i in range(1000)]
    predictions, references = [], []
    for _ in range(n_examples):
        gold = [phrases[i] for i in rng.integers(len(phrases), size=int(rng.integers(0, 9)))]
        predicted = [phrases[i] for i in rng.integers(len(phrases), size=int(rng.integers(0, 4)))]
        predictions.append(predicted + random_list(rng, int(rng.integers(0, 3)), borrow=gold))
        references.append(gold)
    scores = [random_scores(rng, len(p)) for p in predictions]
    return predictions, scores, references


def movie_corpus(seed: int, n_examples: int) -> tuple[list, list, list]:
    """One movie against its gold list: reviews of a few predictions each, drawn from a few
    hundred keywords (some of them gold keywords or parts of one), all against one list of
    80 gold keywords (one object): few distinct strings meet in many pairs."""
    rng = np.random.default_rng(seed)
    gold = list(dict.fromkeys(random_keyword(rng) for _ in range(80)))
    candidates = [random_keyword(rng) for _ in range(300)] + gold[:40] + [g.split()[0] for g in gold if g.split()]
    predictions = [
        [candidates[i] for i in rng.integers(len(candidates), size=int(rng.integers(0, 5)))] for _ in range(n_examples)
    ]
    scores = [random_scores(rng, len(p)) for p in predictions]
    return predictions, scores, [gold] * n_examples


def diverse_corpus(seed: int, n_examples: int) -> tuple[list, list, list]:
    """Documents of their own phrases (the keyphrase benchmark shape with a real vocabulary):
    each example's 3-12 gold keywords and 2-6 predictions are phrases of 1-3 words drawn
    from thousands of words, so that nearly every string is new and short words make the
    relation between the distinct strings large; predictions copy or cut some gold phrases."""
    rng = np.random.default_rng(seed)
    words = list(dict.fromkeys("".join(rng.choice(list("abcdeilnorst"), int(rng.integers(1, 8)))) for _ in range(4000)))
    words += TOKENS

    def phrase() -> str:
        text = " ".join(words[i] for i in rng.integers(len(words), size=int(rng.integers(1, 4))))
        return text.title() if rng.random() < 0.2 else text if rng.random() < 0.9 else random_keyword(rng)

    predictions, references = [], []
    for _ in range(n_examples):
        gold = [phrase() for _ in range(int(rng.integers(3, 13)))]
        predicted = [phrase() for _ in range(int(rng.integers(1, 4)))]
        for source in [gold[i] for i in rng.integers(len(gold), size=int(rng.integers(0, 4)))]:
            tokens = source.split()
            start = int(rng.integers(len(tokens))) if tokens else 0
            predicted.append(
                " ".join(tokens[start : start + int(rng.integers(1, 3))]) if rng.random() < 0.5 else source
            )
        predictions.append(predicted)
        references.append(gold)
    scores = [random_scores(rng, len(p)) for p in predictions]
    return predictions, scores, references


SHAPES = {
    "broadcast": lambda: broadcast_corpus(10, 2500, fresh=False),
    "copies": lambda: broadcast_corpus(11, 2500, fresh=True),
    "long_gold": lambda: long_gold_corpus(12, 8),
    "distinct_gold": lambda: distinct_gold_corpus(13, 2500),
    "movie": lambda: movie_corpus(14, 1000),
    "diverse": lambda: diverse_corpus(15, 600),
}
PYTHON_CHOICE = {"broadcast": "lookup", "copies": "lookup", "long_gold": "find", "distinct_gold": "hash"}
# What the cost models choose, left to choose: the relation between the distinct strings
# ("c": the C helper's containment) where few strings meet in many pairs, each example's
# pairs ("pairs") in a diverse vocabulary, normalized and related document by document where
# that path applies, no gold list repeats and the C helper is built.
AUTO = {"movie": ("c", None), "diverse": ("pairs", "documents")}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("match", MATCHES)
def test_strategy_shapes_equal_spec(shape, match, monkeypatch):
    predictions, scores, references = SHAPES[shape]()
    problems = []
    for n, normalize in enumerate(NORMALIZES):
        options = BIG_OPTIONS[n % len(BIG_OPTIONS)]
        common = {"match": match, "normalize": normalize, **options}
        expected = ref.keyword_prf(predictions, references, **common)
        weighted_options = {**common, "k": 3 + n % 2, "relevance": ("graded", "binary")[n % 2]}
        expected_weighted = ref.weighted_keyword_prf(predictions, scores, references, **weighted_options)
        for name in STRATEGIES:
            used: dict[str, int] = {}
            with strategy(name, monkeypatch, used):
                actual = keyword_prf(predictions, references, return_per_example=True, **common)
                by_documents = dict(used)
                weighted = weighted_keyword_prf(
                    predictions, scores, references, return_per_example=True, **weighted_options
                )
            where = f"{shape}: keyword_prf({options_text(**common)}; strategy {name})"
            problems += differences(actual, expected, (predictions, references), where)
            where = f"{shape}: weighted_keyword_prf({options_text(**weighted_options)}; strategy {name})"
            problems += differences(weighted, expected_weighted, (predictions, scores, references), where)
            has_c = helper() is not None
            search, documents = (
                AUTO.get(shape, (None, None)) if name == "auto" else (SEARCHES[name], DOCUMENTS.get(name))
            )
            documents = documents if has_c or name != "auto" else None  # (chosen only with the helper)
            if match != "exact" and search:
                assert used.get(search), f"{shape}, strategy {name}: {search} never ran ({used})"
            if name == "pairs" and has_c:
                assert not used.get("pairs_in_python"), f"{shape}: the C helper's pair tests did not run ({used})"
            if documents and isinstance(normalize, str):
                assert by_documents.get(documents), f"{shape}, strategy {name}: {documents} never ran ({used})"
            if name == "auto" and shape in AUTO and not documents:
                assert not by_documents.get("documents"), f"{shape}: the per-document path ran ({used})"
    check(problems)


@pytest.mark.parametrize("shape", PYTHON_CHOICE)
def test_without_the_c_helper_each_shape_gets_its_cheap_containment_search(shape, monkeypatch):
    predictions, _, references = SHAPES[shape]()
    used: dict[str, int] = {}
    with strategy("auto", monkeypatch, used):
        monkeypatch.setenv(IMPLEMENTATION, "python")
        force("index", monkeypatch)
        force("prepared_corpus", monkeypatch)
        keyword_prf(predictions, references)
    assert used.get(PYTHON_CHOICE[shape]), used


def test_inner_white_space_with_lookup_issue_10(monkeypatch):
    """Issue 10 item 1: "a b" and "a  b" are distinct keywords under "ascii" / "none", and
    both token-match "a b c" (SPEC section 2), whichever strategy runs."""
    fillers = [[f"filler{i}"] for i in range(3000)]
    for normalize in ("ascii", "none"):
        for name in STRATEGIES:
            with strategy(name, monkeypatch):
                result = keyword_prf(
                    [["a b"], ["a  b"], *fillers],
                    [["a b c"]] * 3002,
                    match="token",
                    normalize=normalize,
                    return_per_example=True,
                )
            assert result["per_example"]["precision"][:3] == [1.0, 1.0, 0.0], (normalize, name)
            assert result["precision"] == 2 / 3002, (normalize, name)


def test_inner_white_space_weighted_issue_10(monkeypatch):
    """Issue 10 item 1, weighted: "a  b" (0.9) claims "x a b y" first: precision 0.9 / (0.9 + 0.1),
    nDCG@5 = 1 (one gold keyword, found at rank 1)."""
    predictions = [["a  b", "a b"], *[[f"filler{i}"] for i in range(100)]]
    scores = [[0.9, 0.1], *[[0.5]] * 100]
    for normalize in ("ascii", "none"):
        for name in STRATEGIES:
            with strategy(name, monkeypatch):
                references = [["x a b y"]] * 101
                result = weighted_keyword_prf(
                    predictions, scores, references, match="token", normalize=normalize, return_per_example=True
                )
            per_example = result["per_example"]
            assert math.isclose(per_example["weighted_precision"][0], 0.9), (normalize, name)
            assert per_example["ndcg@5"][0] == 1.0, (normalize, name)
            assert per_example["map@5"][0] == 1.0, (normalize, name)


def test_two_spaces_anywhere_in_a_keyword_of_letters_equal_spec(monkeypatch):
    """Keywords of ASCII letters and spaces are read 8 bytes at a time by the per-document path
    in C: two spaces in a row are found wherever they fall, across a word boundary too."""
    keywords = [("abcdefghijklmnopqrst"[:start] + "  " + "uvwxyz")[: start + 8] for start in range(1, 18)]
    keywords += [keyword.upper() for keyword in keywords]
    predictions = [[keyword] for keyword in keywords]
    references = [[" ".join(keyword.split()), f"x {keyword.lower()} y"] for keyword in keywords]
    problems = []
    for normalize, match in itertools.product(("default", "ascii", "none"), MATCHES):
        expected = ref.keyword_prf(predictions, references, match=match, normalize=normalize)
        for name in ("auto", "documents", "documents_in_python", "pairs"):
            used: dict[str, int] = {}
            with strategy(name, monkeypatch, used):
                actual = keyword_prf(predictions, references, match=match, normalize=normalize, return_per_example=True)
            where = f"keyword_prf(match={match!r}, normalize={normalize!r}; strategy {name})"
            problems += differences(actual, expected, (predictions, references), where)
            if name == "documents":
                assert used.get("documents"), (normalize, match, used)
    check(problems)


def test_a_keyword_of_white_space_alone_token_matches_every_gold_keyword(monkeypatch):
    """Under a normalization that keeps white space, "  " has no tokens: an empty sequence of
    tokens occurs in every gold keyword (SPEC's containment), whichever strategy runs."""
    predictions, references = [["  ", "good film"], ["\t"]], [["good film here", "x"], ["y"]]
    expected = ref.keyword_prf(predictions, references, match="token", normalize=lambda s: s)
    problems = []
    for name in STRATEGIES:
        with strategy(name, monkeypatch):
            actual = keyword_prf(predictions, references, match="token", normalize=lambda s: s, return_per_example=True)
        problems += differences(actual, expected, (predictions, references), f"strategy {name}")
    check(problems)


@pytest.mark.parametrize("presence", ["present", "absent"])
def test_a_keyword_of_white_space_alone_is_present_in_every_text(presence):
    """Its empty sequence of tokens occurs in every text: present, in short lists and in a long
    gold list shared by many examples (looked up by first token)."""
    identity = lambda s: s  # noqa: E731 (keeps white space)
    long_gold = ["  ", *(f"w{i}" for i in range(3000))]
    for predictions, references, texts in (
        ([["  ", "good film"]], [["  ", "great"]], ["a good film"]),
        ([["  ", "w1"]] * 50, [long_gold] * 50, ["w1 x"] * 50),
    ):
        common = {"texts": texts, "presence": presence, "normalize": identity, "match": "token"}
        expected = ref.keyword_prf(predictions, references, **common)
        actual = keyword_prf(predictions, references, return_per_example=True, **common)
        check(differences(actual, expected, (predictions, references), f"presence={presence}"))
