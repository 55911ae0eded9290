"""Match relations (docs/definitions.md section 2) and one-to-one matchings.

The relation between a corpus's predictions and references is computed once per distinct
(prediction, reference list) pair: examples sharing a gold list (a movie's keywords
broadcast to each of its reviews) share the work. Substring containment is found by
`str.find` over the joined gold (or prediction) strings rather than pair by pair.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain

import numpy as np

from .preparation import PreparedCorpus, repeated_rows
from .validation import check_match

_SEPARATOR = "\x00"


def containment_pairs(needles: Sequence[str], haystacks: Sequence[str]) -> set[tuple[int, int]]:
    """All pairs `(i, j)` such that `needles[i]` is a substring of `haystacks[j]`.

    Equal needles (token forms of keywords that differ only in white space) are searched
    once and each gets the pairs. Two strategies give the same pairs; the cheaper one runs:
    looking every substring of the haystacks (of a needle's length) up in a set, or
    `str.find` of each needle in the joined haystacks.
    """
    if not needles or not haystacks:
        return set()
    positions: dict[str, list[int]] = {}
    for i, needle in enumerate(needles):
        positions.setdefault(needle, []).append(i)
    distinct = list(positions)
    if lookup_cost(distinct, haystacks) < find_cost(distinct, haystacks):
        pairs = _containment_by_lookup(distinct, haystacks)
    else:
        pairs = _containment_by_find(distinct, haystacks)
    if len(distinct) == len(needles):
        return pairs
    return {(i, j) for d, j in pairs for i in positions[distinct[d]]}


def lookup_cost(needles: Sequence[str], haystacks: Sequence[str]) -> int:
    """Characters hashed (and held at once, per haystack) by `_containment_by_lookup`:
    every substring of a haystack whose length is a needle length."""
    widths = sorted(set(map(len, needles)))
    sizes = Counter(map(len, haystacks))
    if len(widths) * len(sizes) <= 4096:  # small inputs: numpy's set-up would cost more
        return sum(
            count * sum((size - width + 1) * width for width in widths if width <= size)
            for size, count in sizes.items()
        )
    width_array = np.asarray(widths, dtype=np.int64)
    size_array = np.fromiter(sizes, dtype=np.int64, count=len(sizes))
    per_size = np.clip(size_array[:, None] - width_array[None, :] + 1, 0, None) * width_array[None, :]
    return int(per_size.sum(axis=1) @ np.fromiter(sizes.values(), dtype=np.int64, count=len(sizes)))


def find_cost(needles: Sequence[str], haystacks: Sequence[str]) -> int:
    """Comparable cost of `_containment_by_find`: one fast scan of the joined haystacks per needle."""
    return len(needles) * (sum(map(len, haystacks)) // 50 + 1)


def _containment_by_lookup(needles: Sequence[str], haystacks: Sequence[str]) -> set[tuple[int, int]]:
    """`containment_pairs` for distinct needles by set lookups of the haystacks' substrings."""
    position = {needle: i for i, needle in enumerate(needles)}
    lengths = sorted(set(map(len, needles)))
    pairs = set()
    for j, haystack in enumerate(haystacks):
        size = len(haystack)
        substrings = {
            haystack[start : start + width] for width in lengths if width <= size for start in range(size - width + 1)
        }
        pairs.update((position[needle], j) for needle in substrings & position.keys())
    return pairs


def _containment_by_find(needles: Sequence[str], haystacks: Sequence[str]) -> set[tuple[int, int]]:
    """`containment_pairs` for distinct needles by `str.find` in the joined haystacks."""
    joined = _SEPARATOR.join(haystacks)
    starts = []
    ends = []
    offset = 0
    for haystack in haystacks:
        starts.append(offset)
        offset += len(haystack)
        ends.append(offset)
        offset += 1
    find = joined.find
    pairs = set()
    for i, needle in enumerate(needles):
        width = len(needle)
        position = find(needle)
        while position != -1:
            j = bisect_right(starts, position) - 1
            if position + width <= ends[j]:
                pairs.add((i, j))
                position = find(needle, ends[j] + 1)
            else:  # the hit spans a separator (only if the needle contains one)
                position = find(needle, position + 1)
    return pairs


def _token_form(keyword: str) -> str:
    return " " + " ".join(keyword.split()) + " "


def relation_pairs(predicted: Sequence[str], gold: Sequence[str], match: str) -> set[tuple[int, int]]:
    """Pairs `(i, j)` with `predicted[i] ~ gold[j]` under the match relation `match`.

    `"exact"`: equal strings; `"substring"`: equal or either contains the other;
    `"token"`: the token sequence of either is a contiguous sub-sequence of the other's.
    """
    if match == "exact":
        position = {keyword: j for j, keyword in enumerate(gold)}
        return {(i, position[keyword]) for i, keyword in enumerate(predicted) if keyword in position}
    if match == "token":
        predicted = [_token_form(keyword) for keyword in predicted]
        gold = [_token_form(keyword) for keyword in gold]
    elif match != "substring":
        check_match(match)
    pairs = containment_pairs(predicted, gold)
    pairs.update((i, j) for j, i in containment_pairs(gold, predicted))
    return pairs


def reference_groups(corpus: PreparedCorpus) -> tuple[list[tuple[int, ...]], list[list[int]]]:
    """Distinct reference lists and, for each, the examples that have it."""
    references = corpus.references.ids
    first, group = repeated_rows(references, key=lambda ids: ids)
    members: list[list[int]] = [[] for _ in first]
    for index, number in enumerate(group):
        members[number].append(index)
    return [references[i] for i in first], members


def corpus_neighbors(corpus: PreparedCorpus, match: str) -> list[list[tuple[int, ...]]]:
    """For each example and each of its predictions, the positions (ascending) of the gold
    keywords of that example that the prediction matches."""
    check_match(match)
    strings = corpus.strings
    prediction_ids = corpus.predictions.ids
    neighbors: list[list[tuple[int, ...]]] = [None] * len(corpus)  # type: ignore[list-item]
    for gold_ids, members in zip(*reference_groups(corpus)):
        unique = list(dict.fromkeys(chain.from_iterable(prediction_ids[index] for index in members)))
        found: dict[int, list[int]] = {}
        if gold_ids and unique:
            pairs = relation_pairs([strings[p] for p in unique], [strings[g] for g in gold_ids], match)
            for i, j in pairs:
                found.setdefault(unique[i], []).append(j)
        by_prediction = {p: tuple(sorted(js)) for p, js in found.items()}
        get = by_prediction.get
        for index in members:
            neighbors[index] = [get(p, ()) for p in prediction_ids[index]]
    return neighbors


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


def match_counts(neighbors: Sequence[Sequence[Sequence[int]]], one_to_one: bool) -> tuple[list[int], list[int]]:
    """Per example: (matched predictions, matched gold keywords).

    With `one_to_one`, both are the size of a maximum matching; otherwise a prediction
    (gold keyword) counts when it matches any gold keyword (prediction).
    """
    matched_predictions: list[int] = []
    matched_gold: list[int] = []
    for example in neighbors:
        hit = [gold for gold in example if gold]
        if len(hit) <= 1:
            n_gold = len(hit[0]) if hit else 0
            n_pred = len(hit)
            if one_to_one:
                n_pred = n_gold = min(n_pred, n_gold)
        elif one_to_one:
            n_pred = n_gold = sum(maximum_matching(hit))
        else:
            n_pred = len(hit)
            n_gold = len(set().union(*hit))
        matched_predictions.append(n_pred)
        matched_gold.append(n_gold)
    return matched_predictions, matched_gold
