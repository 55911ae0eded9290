"""Issue 37: a long document (100,000 predictions against 14,286 gold keywords in one example)
and a corpus of short documents with a few long ones among them, each timed as the library
chooses and with each way of finding the relation forced in the same run: every pair tested,
every document searched on its own strings, the relation between distinct strings."""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .common import best_time, same
from .keyphrase import diverse_corpus

ALWAYS = {"c": (0.0, -1.0), "python": (0.0, -1.0)}  # `example_edges.SEARCH_COSTS`: search every document
NEVER = {"c": (math.inf, math.inf), "python": (math.inf, math.inf)}  # search none


def long_document(n: int, start: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """The issue's shape: `kw{i} x{r}` predictions against `kw{j}` gold keywords, n / 7 of
    them: a gold keyword is inside every prediction its number starts (kw1: 11,111 of 100,000)."""
    return [f"kw{i} x{rng.randrange(7)}" for i in range(start, start + n)], [
        f"kw{j}" for j in range(start, start + n // 7)
    ]


def mixed_corpus(n_short: int, n_long: int, long_size: int, seed: int = 0) -> tuple[list, list]:
    """`n_short` documents of their own phrases (`keyphrase.diverse_corpus` over 20,000 made-up
    words) and `n_long` long documents (`long_document`, numbered apart) spread among them."""
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(20_000)]
    predictions, references = diverse_corpus(n_short, words, seed)
    for number in range(n_long):
        at = (number + 1) * len(predictions) // (n_long + 1)
        predicted, gold = long_document(long_size, 1_000_000 * (number + 1), rng)
        predictions.insert(at, predicted)
        references.insert(at, gold)
    return predictions, references


@contextmanager
def forced(strategy: str) -> Iterator[None]:
    """The library with one way of finding the relation forced (or none: "auto").

    "pairs" / "search": each document on its own (the per-document path), every pair tested /
    every document searched; "corpus pairs", "corpus search", "relation": the prepared corpus,
    every example by that route; "corpus auto": the prepared corpus, each example routed by
    its cost."""
    import numpy as np

    from opinion_metrics.core import documents, example_edges, relations

    saved = (documents.documents_cheaper, example_edges.SEARCH_COSTS, relations.edge_routes)
    routes = {"corpus pairs": relations.PAIRS, "corpus search": relations.SEARCH, "relation": relations.RELATION}
    try:
        if strategy in ("pairs", "search"):
            documents.documents_cheaper = lambda references: True
            costs = NEVER if strategy == "pairs" else ALWAYS
            example_edges.SEARCH_COSTS = {"documents": costs, "examples": costs}
        elif strategy != "auto":
            documents.documents_cheaper = lambda references: False
        if strategy in routes:
            relations.edge_routes = lambda corpus: np.full(len(corpus), routes[strategy], np.int8)
        yield
    finally:
        documents.documents_cheaper, example_edges.SEARCH_COSTS, relations.edge_routes = saved


STRATEGIES = ("pairs", "search", "corpus pairs", "corpus search", "relation", "corpus auto")


def timed_strategies(
    call: Callable[[], dict], repeat: int, skip: tuple[str, ...] = ()
) -> tuple[float, dict[str, float], dict]:
    """(auto seconds, forced seconds by strategy, auto's values): each the best of `repeat`
    cold calls, the strategies interleaved (the machine's load changes while they run); every
    strategy's values asserted equal to auto's."""
    best = {name: math.inf for name in ("auto", *STRATEGIES) if name not in skip}
    expected = None
    best_time(call, 1, cold=True)  # (a process's first call also pays for its first touches of memory)
    for _ in range(repeat):
        for name in best:
            with forced(name):
                seconds, result = best_time(call, 1, cold=True)
            best[name] = min(best[name], seconds)
            if expected is None:
                expected = result
            elif not same(expected, result):
                raise SystemExit(f"{name}: values differ\n{expected}\n{result}")
    auto = best.pop("auto")
    return auto, best, expected


def print_row(label: str, auto: float, strategies: dict[str, float], one_to_one: float) -> None:
    fastest = min(seconds for name, seconds in strategies.items() if name != "corpus auto")
    print(f"{label:<28}{auto:>9.3f}{auto / fastest:>8.2f}x", end="")
    print("".join(f"{strategies[name]:>14.3f}" if name in strategies else f"{'-':>14}" for name in STRATEGIES), end="")
    print(f"{one_to_one:>10.3f}")


def long_documents(n_predicted: int, n_short: int, n_long: int, long_size: int, repeat: int) -> None:
    """The long document and the mixed corpus, `keyword_prf(one_to_one=False)` (the relation's
    own cost; one-to-one matching adds the same to every strategy), against each strategy."""
    from opinion_metrics import keyword_prf
    from opinion_metrics._native import helper

    in_c = helper() is not None
    predicted, gold = long_document(n_predicted, 0, random.Random(0))
    mixed = mixed_corpus(n_short, n_long, long_size)
    header = f"{'long documents, cold s':<28}{'auto':>9}{'/best':>9}" + "".join(f"{name:>14}" for name in STRATEGIES)
    print(f"{header}{'auto 1:1':>10}")
    for match in ("substring", "token"):
        # every pair of the long documents tested: 1.4 billion (minutes in Python)
        skip = () if in_c else ("pairs", "corpus pairs")
        for label, corpus, rounds in (("one long document", ([predicted], [gold]), 1), ("mixed corpus", mixed, repeat)):
            call = functools.partial(keyword_prf, *corpus, match=match, one_to_one=False)
            auto, strategies, _ = timed_strategies(call, rounds, skip)  # (the forced pairs take seconds)
            one_to_one, _ = best_time(functools.partial(keyword_prf, *corpus, match=match), rounds, cold=True)
            print_row(f"{label}, {match}", auto, strategies, one_to_one)
    print(
        f"One long document: {n_predicted:,} predictions `kw{{i}} x{{r}}` against {n_predicted // 7:,} gold keywords "
        f"`kw{{j}}`. Mixed corpus: {n_short:,} documents of their own phrases (5 predictions, 5-20 gold) and "
        f"{n_long} long documents of {long_size:,} predictions and {long_size // 7:,} gold keywords among them. "
        "keyword_prf(one_to_one=False), cold (normalized forms and relations computed afresh); auto: as the "
        f"library chooses, /best: against the fastest strategy forced (corpus auto aside); best of {repeat} (the "
        "long document: one call), the strategies interleaved, values asserted equal; auto 1:1: keyword_prf as "
        "called by default (one-to-one matching). pairs / search: each document on its own, "
        "every pair tested / every document searched; corpus pairs / corpus search / relation: the prepared "
        "corpus, every example by its pairs / its own strings searched / the relation between distinct strings; "
        "corpus auto: the prepared corpus, each example routed by its cost."
        + ("" if in_c else " Without the C helper the pair tests of the long document are left out (minutes).")
        + "\n"
    )
