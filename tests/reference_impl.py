"""Straightforward per-example, per-pair implementations of the SPEC, written independently
of the library (plain loops, scipy for matchings) to check its values on real data."""

import math
import unicodedata

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching


def normalize(text):
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PS")
    return " ".join(text.split())


def prepare(keywords, scores=None):
    """Normalized keywords (and scores): empty ones dropped, first occurrence kept."""
    kept, kept_scores, seen = [], [], set()
    for position, keyword in enumerate(keywords):
        norm = normalize(keyword)
        if norm and norm not in seen:
            seen.add(norm)
            kept.append(norm)
            if scores is not None:
                kept_scores.append(scores[position])
    return kept, kept_scores


def related(a, b, match="substring"):
    if match == "exact":
        return a == b
    if match == "substring":
        return a == b or a in b or b in a
    ta, tb = a.split(), b.split()
    short, long = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


def adjacency(predicted, gold, match):
    return [[j for j, g in enumerate(gold) if related(p, g, match)] for p in predicted]


def matching_size(adjacent, n_gold):
    if not adjacent or not n_gold:
        return 0
    rows = [i for i, js in enumerate(adjacent) for _ in js]
    cols = [j for js in adjacent for j in js]
    graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(adjacent), n_gold))
    return int((maximum_bipartite_matching(graph, perm_type="column") >= 0).sum())


def ratio(a, b, zero_division=0.0):
    return a / b if b else zero_division


def f1(p, r):
    return 2 * p * r / (p + r) if p + r else 0.0


def keyword_counts(predicted, gold, match="substring", one_to_one=True):
    adjacent = adjacency(predicted, gold, match)
    if one_to_one:
        m = matching_size(adjacent, len(gold))
        return m, m
    matched_gold = sum(1 for j in range(len(gold)) if any(j in js for js in adjacent))
    return sum(1 for js in adjacent if js), matched_gold


def weighted_counts(predicted, scores, gold, match="substring", one_to_one=True):
    adjacent = adjacency(predicted, gold, match)
    if not one_to_one:
        return sum(s for s, js in zip(scores, adjacent) if js)
    if not predicted or not gold:
        return 0.0
    profit = np.zeros((len(predicted), len(gold)))
    for i, js in enumerate(adjacent):
        profit[i, js] = scores[i]
    rows, cols = linear_sum_assignment(profit, maximize=True)
    return float(profit[rows, cols].sum())


def ndcg_ap(predicted, gold, k=5, graded=True, match="substring"):
    claimed, gains, hits = set(), [], []
    for p in predicted[:k]:
        gain, hit = 0.0, False
        for j, g in enumerate(gold):
            if j not in claimed and related(p, g, match):
                claimed.add(j)
                gain = 1 / math.log2(j + 2) if graded else 1.0
                hit = True
                break
        gains.append(gain)
        hits.append(hit)
    dcg = sum(gain / math.log2(i + 2) for i, gain in enumerate(gains))
    depth = min(k, len(gold))
    idcg = sum((1 / math.log2(j + 2) if graded else 1.0) / math.log2(j + 2) for j in range(depth))
    precision_sum = sum(sum(hits[: i + 1]) / (i + 1) for i, hit in enumerate(hits) if hit)
    return dcg / idcg, precision_sum / depth
