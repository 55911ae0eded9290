"""The one-to-one assignment of sentiment tuples under partial credit (docs/definitions.md
section 13): among the assignments of compatible (prediction, gold) pairs, one with the largest
sum of (precision credit + recall credit) / 2, and among those the largest sum of precision
credits. Exact, in rational arithmetic: credits are fractions, scaled to integers per component
of the compatibility graph and compared lexicographically.

Lists are short: a component whose smaller side has at most `SMALL` tuples is solved by a
search over the sets of that side it uses; a longer one by scipy's `linear_sum_assignment` on
one integer weight (exact while the sums stay below 2**53), else by the Hungarian algorithm on
Python integers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import cache

SMALL = 8  # largest smaller side searched exhaustively
EXACT_FLOAT = 2**53

Edge = tuple[int, int, Fraction, Fraction]  # (prediction, gold, precision credit, recall credit)


def _components(edges: Sequence[Edge]) -> list[list[Edge]]:
    """The edges grouped by connected component of the bipartite graph."""
    parent: dict[tuple[int, int], tuple[int, int]] = {}

    def root(node: tuple[int, int]) -> tuple[int, int]:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for i, j, _, _ in edges:
        a, b = root((0, i)), root((1, j))
        if a != b:
            parent[a] = b
    groups: dict[tuple[int, int], list[Edge]] = {}
    for edge in edges:
        groups.setdefault(root((0, edge[0])), []).append(edge)
    return list(groups.values())


def _weights(edges: Sequence[Edge]) -> tuple[list[int], list[int]]:
    """Each edge's (credit sum, precision credit) as integers over one common denominator."""
    totals = [(pc + rc) / 2 for _, _, pc, rc in edges]
    scale = math.lcm(*(value.denominator for value in totals), *(edge[2].denominator for edge in edges))
    return [int(value * scale) for value in totals], [int(edge[2] * scale) for edge in edges]


def _search(edges: Sequence[Edge]) -> list[Edge]:
    """The best assignment by a search over the rows, remembering the columns used (the
    smaller side as columns)."""
    rows = sorted({edge[0] for edge in edges})
    columns = sorted({edge[1] for edge in edges})
    flip = len(columns) > len(rows)
    if flip:
        rows, columns = columns, rows
    row_of, column_of = {r: k for k, r in enumerate(rows)}, {c: k for k, c in enumerate(columns)}
    total, credit = _weights(edges)
    options: list[list[tuple[int, int, int, int]]] = [[] for _ in rows]
    for index, edge in enumerate(edges):
        row, column = (edge[1], edge[0]) if flip else (edge[0], edge[1])
        options[row_of[row]].append((column_of[column], total[index], credit[index], index))

    @cache
    def best(row: int, used: int) -> tuple[int, int, tuple[int, ...]]:
        if row == len(rows):
            return 0, 0, ()
        found = best(row + 1, used)  # this row unassigned
        for column, weight, precision, index in options[row]:
            if not used >> column & 1:
                rest = best(row + 1, used | 1 << column)
                candidate = (rest[0] + weight, rest[1] + precision, (index, *rest[2]))
                if candidate[:2] > found[:2]:
                    found = candidate
        return found

    chosen = best(0, 0)[2]
    best.cache_clear()
    return [edges[index] for index in chosen]


def _hungarian(weights: list[list[int]]) -> list[int]:
    """A maximum-weight assignment of a square matrix of non-negative integers: the column of
    each row (the Hungarian algorithm with potentials, shortest augmenting paths; exact)."""
    n = len(weights)
    infinity = float("inf")
    u, v = [0] * (n + 1), [0] * (n + 1)
    owner, way = [0] * (n + 1), [0] * (n + 1)  # owner[j]: the row holding column j (1-based; 0: none)
    for row in range(1, n + 1):
        owner[0], column = row, 0
        least = [infinity] * (n + 1)
        used = [False] * (n + 1)
        while owner[column]:
            used[column] = True
            current, delta, nearest = owner[column], infinity, 0
            for j in range(1, n + 1):
                if not used[j]:
                    reduced = -weights[current - 1][j - 1] - u[current] - v[j]
                    if reduced < least[j]:
                        least[j], way[j] = reduced, column
                    if least[j] < delta:
                        delta, nearest = least[j], j
            for j in range(n + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    least[j] -= delta
            column = nearest
        while column:
            previous = way[column]
            owner[column] = owner[previous]
            column = previous
    assigned = [0] * n
    for column in range(1, n + 1):
        assigned[owner[column] - 1] = column - 1
    return assigned


def _by_weight(edges: Sequence[Edge]) -> list[Edge]:
    """The best assignment as a maximum-weight assignment of one integer weight per edge:
    credit sum x (1 + the most any assignment's precision credits can add) + precision credit."""
    rows = sorted({edge[0] for edge in edges})
    columns = sorted({edge[1] for edge in edges})
    row_of, column_of = {r: k for k, r in enumerate(rows)}, {c: k for k, c in enumerate(columns)}
    total, credit = _weights(edges)
    ceiling = 1 + sum(credit)
    n = max(len(rows), len(columns))
    matrix = [[0] * n for _ in range(n)]
    at = {}
    for index, edge in enumerate(edges):
        row, column = row_of[edge[0]], column_of[edge[1]]
        matrix[row][column] = total[index] * ceiling + credit[index]
        at[row, column] = index
    assigned = None
    if max(map(max, matrix)) * n < EXACT_FLOAT:
        assigned = _scipy_assignment(matrix)
    if assigned is None:
        assigned = _hungarian(matrix)
    return [edges[at[row, column]] for row, column in enumerate(assigned) if (row, column) in at]


def _scipy_assignment(matrix: list[list[int]]) -> list[int] | None:
    """scipy's assignment of the matrix (its weights exact in float64), or None without scipy."""
    try:
        import numpy as np
        from scipy.optimize import linear_sum_assignment
    except ImportError:
        return None
    rows, columns = linear_sum_assignment(np.array(matrix, dtype=np.float64), maximize=True)
    assigned = [0] * len(matrix)
    for row, column in zip(rows.tolist(), columns.tolist()):
        assigned[row] = column
    return assigned


def best_assignment(edges: Sequence[Edge]) -> list[Edge]:
    """The assigned edges: the largest sum of (pc + rc) / 2, then of pc (credits positive)."""
    chosen: list[Edge] = []
    for component in _components(edges):
        if len(component) == 1:
            chosen += component
            continue
        smaller = min(len({edge[0] for edge in component}), len({edge[1] for edge in component}))
        chosen += _search(component) if smaller <= SMALL else _by_weight(component)
    return chosen
