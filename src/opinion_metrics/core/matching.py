"""One-to-one matchings (docs/definitions.md section 2): from the edges of each example, the
matched predictions and gold keywords of a maximum matching (Hopcroft-Karp where the edges
do not already form one), or of every edge where one-to-one is off.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._native import helper
from .encoding import int64_arrays, list_keys, ragged_ranges, sort_with_payload
from .preparation import PreparedCorpus
from .relations import Edges, corpus_edges, sorted_lookup

if TYPE_CHECKING:
    from .pairs import KeywordPairs


def corpus_neighbors(corpus: PreparedCorpus, match: str) -> list[list[tuple[int, ...]]]:
    """For each example and each of its predictions, the positions (ascending) of the gold
    keywords of that example that the prediction matches."""
    edges = corpus_edges(corpus, match)
    neighbors: list[list[tuple[int, ...]]] = [[()] * size for size in corpus.predictions.sizes.tolist()]
    if len(edges.examples):
        examples, predictions, gold = edges.examples.tolist(), edges.predictions.tolist(), edges.gold.tolist()
        run: list[int] = []
        for index, (example, prediction, position) in enumerate(zip(examples, predictions, gold)):
            run.append(position)
            if index + 1 == len(examples) or examples[index + 1] != example or predictions[index + 1] != prediction:
                neighbors[example][prediction] = tuple(run)
                run = []
    return neighbors


def examples_neighbors(edges: Edges, chosen: np.ndarray, sizes: Sequence[int]) -> list[list[tuple[int, ...]]]:
    """`corpus_neighbors` of the examples `chosen`, the i-th with `sizes[i]`
    predictions, from their edges (read in one pass)."""
    starts = np.searchsorted(edges.examples, chosen)
    counts = np.searchsorted(edges.examples, chosen, side="right") - starts
    owner, k = ragged_ranges(counts)
    taken = starts[owner] + k
    predictions, gold = edges.predictions[taken].tolist(), edges.gold[taken].tolist()
    bounds = np.cumsum(counts).tolist()
    every, start = [], 0
    for size, stop in zip(sizes, bounds):
        neighbors: list[list[int]] = [[] for _ in range(size)]
        for prediction, position in zip(predictions[start:stop], gold[start:stop]):
            neighbors[prediction].append(position)
        every.append([tuple(positions) for positions in neighbors])
        start = stop
    return every


def shared_vertices(edges: Edges, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per example: edges, distinct predictions and distinct gold keywords in its edges."""
    examples, predictions, gold, is_matching = edges
    if is_matching:
        count = np.bincount(examples, minlength=n)
        return count, count, count
    new_prediction = np.ones(len(examples), dtype=bool)
    new_prediction[1:] = (examples[1:] != examples[:-1]) | (predictions[1:] != predictions[:-1])
    sorted_examples, sorted_gold = sort_with_payload(examples, gold)
    new_gold = np.ones(len(examples), dtype=bool)
    new_gold[1:] = (sorted_examples[1:] != sorted_examples[:-1]) | (sorted_gold[1:] != sorted_gold[:-1])
    return (
        np.bincount(examples, minlength=n),
        np.bincount(examples[new_prediction], minlength=n),
        np.bincount(sorted_examples[new_gold], minlength=n),
    )


def cut_edges(edges: Edges, cutoffs: np.ndarray | None) -> Edges:
    """The edges of predictions at positions below `cutoffs[example]` (None: all)."""
    if cutoffs is None or not len(edges.examples):
        return edges
    kept = edges.predictions < cutoffs[edges.examples]
    return Edges(edges.examples[kept], edges.predictions[kept], edges.gold[kept], edges.matching)


def edge_counts(edges: Edges, n: int, one_to_one: bool, cutoffs: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Per example (n of them): (matched predictions, matched gold keywords), counting only
    predictions at positions below `cutoffs[example]` (None: all).

    With `one_to_one`, both are the size of a maximum matching: found by counting where
    `needs_matching` says so (the usual case), by Hopcroft-Karp on the other examples;
    otherwise a prediction (gold keyword) counts when it is in any edge.
    """
    edges = cut_edges(edges, cutoffs)
    examples, predictions, gold, _ = edges
    edge_count, matched_predictions, matched_gold = shared_vertices(edges, n)
    if not one_to_one:
        return matched_predictions, matched_gold
    size = np.minimum(matched_predictions, matched_gold)
    general = np.flatnonzero(needs_matching(edge_count, matched_predictions, matched_gold))
    if len(general):
        starts = np.searchsorted(examples, general)
        stops = np.searchsorted(examples, general, side="right")
        for example, start, stop in zip(general.tolist(), starts.tolist(), stops.tolist()):
            adjacency: dict[int, list[int]] = {}
            for prediction, position in zip(predictions[start:stop].tolist(), gold[start:stop].tolist()):
                adjacency.setdefault(prediction, []).append(position)
            size[example] = hopcroft_karp(list(adjacency.values()))
    return size, size.copy()


def match_counts(
    corpus: PreparedCorpus, match: str, one_to_one: bool, cutoffs: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per example: (matched predictions, matched gold keywords) under `match`, as
    `edge_counts` counts them; "exact" without building edges (`exact_match_counts`)."""
    if match == "exact":
        matched = exact_match_counts(corpus, cutoffs)
        return matched, matched.copy()
    return edge_counts(corpus_edges(corpus, match), len(corpus), one_to_one, cutoffs)


def count_matches(pairs: KeywordPairs, one_to_one: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per example of `pairs`: (matched predictions, matched gold keywords) below its cut-off,
    as `edge_counts` counts them, from the pairs' edges or their corpus's relation."""
    if pairs.edges is not None:
        return edge_counts(pairs.edges, len(pairs), one_to_one, pairs.cutoffs)
    return match_counts(pairs.corpus, pairs.match, one_to_one, pairs.cutoffs)  # type: ignore[arg-type]


def exact_match_counts(corpus: PreparedCorpus, cutoffs: np.ndarray | None = None) -> np.ndarray:
    """Per example: how many of its predictions below `cutoffs[example]` (None: all) are
    among its gold keywords. Under "exact" a prediction matches one gold keyword at most and
    a gold keyword one prediction (neither list repeats an id), so this is both matched
    counts, one-to-one or not. Found from the keys (list, id): the predictions' searched
    among the gold keywords' sorted keys, or both sides' (sorted by the preparation) merged;
    in C when the helper is built (`_speedups.exact_hits`)."""
    predicted, prediction_offsets, _ = corpus.predictions.flat
    gold, gold_offsets, groups = corpus.references.flat
    n = len(prediction_offsets) - 1
    speedups = helper()
    if speedups is not None:  # the C helper: each list's ids marked, no sort
        lists = np.arange(n) if groups is None else groups
        arrays = int64_arrays(predicted, prediction_offsets, gold, gold_offsets, lists)
        cut = None if cutoffs is None else int64_arrays(cutoffs)[0]
        hits = speedups.exact_hits(*arrays, cut, len(corpus.strings))
        return np.frombuffer(hits, dtype=np.int64).copy()
    gold_keys = corpus.references.sorted_keys
    if gold_keys is None:
        gold_keys = np.sort(list_keys(np.repeat(np.arange(len(gold_offsets) - 1), np.diff(gold_offsets)), gold))
    keys = corpus.predictions.sorted_keys
    if keys is None or cutoffs is not None or groups is not None:
        examples = np.repeat(np.arange(n), np.diff(prediction_offsets))
        if cutoffs is not None:
            kept = np.arange(len(predicted)) - prediction_offsets[examples] < cutoffs[examples]
            examples, predicted = examples[kept], predicted[kept]
        keys = list_keys(examples if groups is None else groups[examples], predicted)
    else:  # two sorted runs without repeats: merged (timsort), a key found twice is a match
        merged = np.concatenate([keys, gold_keys])
        merged.sort(kind="stable")
        return np.bincount(merged[1:][merged[1:] == merged[:-1]] >> 32, minlength=n)
    _, hit = sorted_lookup(gold_keys, keys)
    return np.bincount(examples[hit], minlength=n)


def needs_matching(edge_count: np.ndarray, matched_predictions: np.ndarray, matched_gold: np.ndarray) -> np.ndarray:
    """Per example: whether a maximum matching must be searched (`hopcroft_karp`). Not when
    no gold keyword is in two edges (each matched prediction keeps one of its own: the size
    is the number of matched predictions) or no prediction is (the number of matched gold
    keywords), the usual cases; in both the size is `min(matched predictions, matched gold)`."""
    return (edge_count != matched_predictions) & (edge_count != matched_gold)


def hopcroft_karp(neighbors: Sequence[Sequence[int]]) -> int:
    """Size of a maximum bipartite matching (Hopcroft-Karp: O(E sqrt(V)) time, O(E) memory).

    `neighbors[i]` lists the right vertices (any hashable) adjacent to left vertex i.
    """
    match_of_left: list[Any] = [None] * len(neighbors)
    match_of_right: dict[Any, int] = {}
    size = 0
    # A greedy pass first: most edges of sparse graphs end up here.
    for left, rights in enumerate(neighbors):
        for right in rights:
            if right not in match_of_right:
                match_of_right[right] = left
                match_of_left[left] = right
                size += 1
                break
    infinity = len(neighbors) + 1
    while True:
        # BFS from the free left vertices: layer (distance) of each left vertex.
        distance = [infinity] * len(neighbors)
        queue = [left for left in range(len(neighbors)) if match_of_left[left] is None and neighbors[left]]
        for left in queue:
            distance[left] = 0
        found = False
        head = 0
        while head < len(queue):
            left = queue[head]
            head += 1
            for right in neighbors[left]:
                owner = match_of_right.get(right)
                if owner is None:
                    found = True
                elif distance[owner] == infinity:
                    distance[owner] = distance[left] + 1
                    queue.append(owner)
        if not found:
            return size
        # DFS along the layers for vertex-disjoint shortest augmenting paths.
        position = [0] * len(neighbors)
        for root in range(len(neighbors)):
            if match_of_left[root] is not None or distance[root] != 0:
                continue
            stack = [root]
            while stack:
                left = stack[-1]
                rights = neighbors[left]
                advanced = False
                while position[left] < len(rights):
                    right = rights[position[left]]
                    position[left] += 1
                    owner = match_of_right.get(right)
                    if owner is None:  # augment along the stack
                        for vertex in reversed(stack):
                            previous = match_of_left[vertex]
                            match_of_left[vertex] = right
                            match_of_right[right] = vertex
                            right = previous
                        size += 1
                        stack = []
                        advanced = True
                        break
                    if distance[owner] == distance[left] + 1:
                        stack.append(owner)
                        advanced = True
                        break
                if not advanced:
                    distance[left] = infinity  # dead end for this phase
                    stack.pop()


def maximum_matching_pairs(
    neighbors: Sequence[Sequence[int]], order: Iterable[int] | None = None
) -> list[tuple[int, int]]:
    """The (left, right) pairs, sorted, of the matching that `maximum_matching` finds."""
    match_of_right: dict[int, int] = {}
    maximum_matching(neighbors, order, match_of_right)
    return sorted((left, right) for right, left in match_of_right.items())


def maximum_matching(
    neighbors: Sequence[Sequence[int]], order: Iterable[int] | None = None, match_of_right: dict[int, int] | None = None
) -> list[bool]:
    """Which left vertices a maximum bipartite matching covers (Kuhn's augmenting paths).

    `neighbors[i]` lists the right vertices adjacent to left vertex i. Left vertices are
    inserted in `order` (default: index order); a vertex stays matched once matched, so
    inserting by decreasing weight gives a maximum-weight matching for vertex weights
    (transversal matroid greedy). `match_of_right`, when given (empty), receives the
    matching: right vertex -> its left vertex.
    """
    match_of_right = {} if match_of_right is None else match_of_right
    matched = [False] * len(neighbors)
    visited: set[int] = set()  # kept across failed searches: the matching has not changed
    for root in range(len(neighbors)) if order is None else order:
        if not neighbors[root]:
            continue
        # Iterative DFS for an augmenting path from `root`.
        stack = [(root, iter(neighbors[root]))]
        path: list[tuple[int, int]] = []
        found = False
        while stack and not found:
            left, candidates = stack[-1]
            for right in candidates:
                if right in visited:
                    continue
                visited.add(right)
                owner = match_of_right.get(right)
                path.append((left, right))
                if owner is None:
                    found = True
                else:
                    stack.append((owner, iter(neighbors[owner])))
                break
            else:
                stack.pop()
                if path:
                    path.pop()
        if found:
            for left, right in path:
                match_of_right[right] = left
            matched[root] = True
            visited.clear()
    return matched
