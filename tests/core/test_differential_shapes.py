"""Differential test of the corpus shapes that select each strategy (thousands of predictions
sharing one gold list, or copies of it; long gold keywords; thousands of distinct gold lists;
one movie's reviews; a diverse vocabulary): every strategy equals the brute force of
`reference_impl`, and each shape gets the search the cost models choose for it."""

from __future__ import annotations

import numpy as np
import pytest
import reference_impl as ref
from differential_cases import (
    MATCHES,
    NORMALIZES,
    SEPARATORS,
    STRATEGIES,
    TOKENS,
    check,
    differences,
    force,
    options_text,
    random_keyword,
    random_list,
    random_scores,
    strategy,
)

from opinion_metrics import keyword_prf, weighted_keyword_prf
from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics._native import helper

# Which search each strategy runs under "substring" and "token" ("c": the C helper's
# containment; "pairs": the C helper's pair tests; the documents strategies relate by pairs
# what the per-document path leaves to the corpus: the weighted family, a callable normalize).
SEARCHES = {
    "auto": None, "find": "find", "lookup": "lookup", "hash": "hash", "automata": "c", "windows": "c",
    "pairs": "pairs", "pairs_in_python": "pairs_in_python", "documents": "pairs",
    "documents_in_python": "pairs_in_python", "search": "search", "search_in_python": "search", "routes": None,
}  # fmt: skip
# Which per-document path each strategy runs where it applies (keyword_prf, a built-in
# normalization, no stemmer, presence "all").
DOCUMENTS = {
    "documents": "documents", "documents_in_python": "documents_in_python", "search": "documents",
    "search_in_python": "documents_in_python",
}  # fmt: skip


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


def long_document(rng: np.random.Generator, n_predicted: int, start: int) -> tuple[list[str], list[str]]:
    """A long document (issue 37): `kw{i} x{r}` predictions against `kw{j}` gold keywords
    (each gold keyword inside many predictions), numbered from `start`, with odd keywords and
    copies mixed in."""
    gold = [f"kw{j}" for j in range(start, start + n_predicted // 7)] + [random_keyword(rng) for _ in range(10)]
    predicted = [f"kw{i} x{int(rng.integers(7))}" for i in range(start, start + n_predicted)]
    predicted += random_list(rng, 30, borrow=gold)
    return [predicted[i] for i in rng.permutation(len(predicted))], gold


def mixed_corpus(seed: int, n_short: int, n_long: int) -> tuple[list, list, list]:
    """Documents of their own phrases (`diverse_corpus`) with a few long documents among them:
    each must be routed by its own cost."""
    rng = np.random.default_rng(seed)
    predictions, _, references = diverse_corpus(seed, n_short)
    for number in range(n_long):
        at = int(rng.integers(len(predictions) + 1))
        predicted, gold = long_document(rng, 700, 1000 * (number + 1))
        predictions.insert(at, predicted)
        references.insert(at, gold)
    scores = [random_scores(rng, len(p)) for p in predictions]
    return predictions, scores, references


SHAPES = {
    "broadcast": lambda: broadcast_corpus(10, 2500, fresh=False),
    "copies": lambda: broadcast_corpus(11, 2500, fresh=True),
    "long_gold": lambda: long_gold_corpus(12, 8),
    "distinct_gold": lambda: distinct_gold_corpus(13, 2500),
    "movie": lambda: movie_corpus(14, 1000),
    "diverse": lambda: diverse_corpus(15, 600),
    "long": lambda: mixed_corpus(16, 0, 2),
    "mixed": lambda: mixed_corpus(17, 300, 3),
}
PYTHON_CHOICE = {"broadcast": "lookup", "copies": "lookup", "long_gold": "find", "distinct_gold": "hash"}
# What the cost models choose, left to choose: the relation between the distinct strings
# ("c": the C helper's containment) where few strings meet in many pairs, each example's
# pairs ("pairs") in a diverse vocabulary, normalized and related document by document where
# that path applies, no gold list repeats and the C helper is built; a long document searched
# on its own: in `document_edges` (C) where that path applies, else by `search_edges` (the
# weighted family, a callable normalize; every case without C).
AUTO = {
    "movie": ("c", None), "diverse": ("pairs", "documents"), "long": ("search", "documents"),
    "mixed": ("search", "documents"),
}  # fmt: skip


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
