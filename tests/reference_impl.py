"""Brute-force implementations of SPEC sections 1-4, written straight from SPEC.md and
independent of the library: plain loops over every (prediction, gold) pair, scipy for the
maximum matchings. Slow on purpose; used to check the library's values."""

import functools
import itertools
import math
import re
import unicodedata

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

_PORTER = None


def _porter_stem(token):
    global _PORTER
    if _PORTER is None:
        from nltk.stem.porter import PorterStemmer

        _PORTER = PorterStemmer()
    # Case is the normalization's business (normalize="none" keeps it), not the stemmer's.
    return _PORTER.stem(token, to_lowercase=False)


@functools.lru_cache(maxsize=1 << 16)
def normalize(text, mode="default", stemmer=None):
    """SPEC section 1.1: "default", "ascii", "none" or a callable, then optional Porter stemming."""
    if callable(mode):
        text = mode(text)
    elif mode == "default":
        text = unicodedata.normalize("NFKC", text).casefold()

        def replaced(ch):  # dashes, connectors and "/" separate words; other P*, S* and Cf go
            category = unicodedata.category(ch)
            if category in ("Pd", "Pc") or ch == "/":
                return " "
            return "" if category[0] in "PS" or category == "Cf" else ch

        text = "".join(map(replaced, text))
        text = " ".join(text.split())
    elif mode == "ascii":
        text = re.sub(r"[^a-zA-Z0-9\s]", "", text.lower()).strip()
    elif mode == "none":
        text = text.strip()
    else:
        raise AssertionError(mode)
    if stemmer == "porter":
        text = " ".join(_porter_stem(token) for token in text.split())
    return text


def prepare(keywords, scores=None, normalize_mode="default", stemmer=None):
    """Normalized keywords (and their scores): empty ones dropped, first occurrence kept."""
    kept, kept_scores, seen = [], [], set()
    for position, keyword in enumerate(keywords):
        norm = normalize(keyword, normalize_mode, stemmer)
        if norm and norm not in seen:
            seen.add(norm)
            kept.append(norm)
            if scores is not None:
                kept_scores.append(float(scores[position]))
    return kept, kept_scores


def related(a, b, match="substring"):
    """SPEC section 2."""
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
    """(matched predictions, matched gold keywords) of one example (SPEC section 3)."""
    adjacent = adjacency(predicted, gold, match)
    if one_to_one:
        m = matching_size(adjacent, len(gold))
        return m, m
    matched_gold = sum(1 for j in range(len(gold)) if any(j in js for js in adjacent))
    return sum(1 for js in adjacent if js), matched_gold


def weighted_counts(predicted, scores, gold, match="substring", one_to_one=True):
    """Matched score of one example (SPEC section 4): maximum-weight matching, or every hit."""
    adjacent = adjacency(predicted, gold, match)
    if not one_to_one:
        return math.fsum(s for s, js in zip(scores, adjacent) if js)
    if not predicted or not gold:
        return 0.0
    profit = np.zeros((len(predicted), len(gold)))
    for i, js in enumerate(adjacent):
        profit[i, js] = scores[i]
    rows, cols = linear_sum_assignment(profit, maximize=True)
    return math.fsum(scores[i] for i, j in zip(rows, cols) if j in adjacent[i])


def ndcg_ap(predicted, gold, k=5, graded=True, match="substring"):
    """nDCG@k and AP@k of one example with gold keywords (SPEC section 4's claiming rule)."""
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
    return dcg / idcg, precision_sum / len(gold)


def cut(predicted, gold, top_k):
    """SPEC section 3 cut-offs: (kept predictions, precision denominator)."""
    if top_k is None or top_k == "M":
        return predicted, len(predicted)
    if top_k == "O":
        return predicted[: len(gold)], len(gold)
    return predicted[:top_k], top_k


def _mean(values, zero_division):
    return math.fsum(values) / len(values) if values else zero_division


def _prf(rows, average, zero_division, names):
    """rows: per example (matched_p, precision denominator, matched_g, recall denominator)."""
    per_p = [ratio(mp, dp, zero_division) for mp, dp, _, _ in rows]
    per_r = [ratio(mg, dg, zero_division) for _, _, mg, dg in rows]
    per_f = [f1(p, r) for p, r in zip(per_p, per_r)]
    if average == "macro":
        totals = (_mean(per_p, zero_division), _mean(per_r, zero_division), _mean(per_f, zero_division))
    else:
        p = ratio(math.fsum(r[0] for r in rows), math.fsum(r[1] for r in rows), zero_division)
        r = ratio(math.fsum(r[2] for r in rows), math.fsum(r[3] for r in rows), zero_division)
        totals = (p, r, f1(p, r))
    result = dict(zip(names, totals))
    per_example = dict(zip(names, (per_p, per_r, per_f)))
    return result, per_example


def present(keyword, text_tokens):
    """SPEC section 9: the keyword's tokens are a contiguous run of the text's tokens."""
    tokens = keyword.split()
    n = len(tokens)
    return any(text_tokens[i : i + n] == tokens for i in range(len(text_tokens) - n + 1))


def select(keywords, scores, text, presence, normalize_mode, stemmer):
    """Keep the present (absent) prepared keywords, and their scores."""
    if presence == "all":
        return keywords, scores
    text_tokens = normalize(text, normalize_mode, stemmer).split()
    keep = [present(k, text_tokens) == (presence == "present") for k in keywords]
    return [k for k, kept in zip(keywords, keep) if kept], [s for s, kept in zip(scores, keep) if kept]


def _prepared_examples(predictions, scores, references, texts, presence, normalize_mode, stemmer):
    """Per example: (predicted, scores, gold) after sections 1 and 9, or None when the
    example is left out (no reference of the selected kind)."""
    texts = texts if texts is not None else [None] * len(predictions)
    for predicted, example_scores, gold, text in zip(predictions, scores, references, texts):
        predicted, kept_scores = prepare(predicted, example_scores, normalize_mode, stemmer)
        gold = prepare(gold, None, normalize_mode, stemmer)[0]
        predicted, kept_scores = select(predicted, kept_scores, text, presence, normalize_mode, stemmer)
        gold, _ = select(gold, [], text, presence, normalize_mode, stemmer)
        yield None if presence != "all" and not gold else (predicted, kept_scores, gold)


def _without_left_out(result, per_example, included, zero_division):
    """With no example left, every value is zero_division."""
    if not any(included):
        result = dict.fromkeys(result, zero_division)
    result["per_example"] = per_example
    return result


def keyword_prf(
    predictions,
    references,
    *,
    texts=None,
    presence="all",
    match="substring",
    normalize="default",
    stemmer=None,
    one_to_one=True,
    average="macro",
    top_k=None,
    zero_division=0.0,
):
    """SPEC sections 3 and 9, with `per_example` always returned."""
    rows, included = [], []
    no_scores = [None] * len(predictions)
    for example in _prepared_examples(predictions, no_scores, references, texts, presence, normalize, stemmer):
        included.append(example is not None)
        if example is not None:
            predicted, _, gold = example
            kept, denominator = cut(predicted, gold, top_k)
            matched_p, matched_g = keyword_counts(kept, gold, match, one_to_one)
            rows.append((matched_p, denominator, matched_g, len(gold)))
    result, per_example = _prf(rows, average, zero_division, ("precision", "recall", "f1"))
    per_example = {key: _spread(values, included) for key, values in per_example.items()}
    return _without_left_out(result, per_example, included, zero_division)


def _spread(values, included):
    """Values of the included examples, with None at the left-out ones."""
    values = iter(values)
    return [next(values) if keep else None for keep in included]


def weighted_keyword_prf(
    predictions,
    scores,
    references,
    *,
    texts=None,
    presence="all",
    match="substring",
    normalize="default",
    stemmer=None,
    one_to_one=True,
    average="macro",
    top_k=None,
    k=5,
    relevance="graded",
    zero_division=0.0,
):
    """SPEC sections 4 and 9, with `per_example` always returned. `top_k` cuts the weighted
    P/R/F1 only; nDCG@k and MAP@k rank the first k of all (selected) predictions."""
    rows, ndcgs, aps, included = [], [], [], []
    for example in _prepared_examples(predictions, scores, references, texts, presence, normalize, stemmer):
        included.append(example is not None)
        if example is None:
            continue
        predicted, kept_scores, gold = example
        kept, _ = cut(predicted, gold, top_k)
        kept_scores = kept_scores[: len(kept)]
        matched = weighted_counts(kept, kept_scores, gold, match, one_to_one)
        rows.append((matched, math.fsum(kept_scores), matched, len(gold)))
        if gold:
            ndcg, ap = ndcg_ap(predicted, gold, k, relevance == "graded", match)
        else:
            ndcg = ap = None
        ndcgs.append(ndcg)
        aps.append(ap)
    names = ("weighted_precision", "weighted_recall", "weighted_f1")
    result, per_example = _prf(rows, average, zero_division, names)
    result[f"ndcg@{k}"] = _mean([v for v in ndcgs if v is not None], zero_division)
    result[f"map@{k}"] = _mean([v for v in aps if v is not None], zero_division)
    per_example[f"ndcg@{k}"] = ndcgs
    per_example[f"map@{k}"] = aps
    per_example = {key: _spread(values, included) for key, values in per_example.items()}
    return _without_left_out(result, per_example, included, zero_division)


def cosine(a, b):
    """Cosine similarity, in [-1, 1] (as it is without rounding)."""
    return min(1.0, max(-1.0, float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))))


def semantic_keyword_prf(
    predictions,
    references,
    *,
    embed,
    texts=None,
    presence="all",
    threshold=0.75,
    one_to_one=False,
    average="macro",
    top_k=None,
    normalize="default",
    stemmer=None,
    zero_division=0.0,
):
    """SPEC section 5 (and 3, 9) with `embed(text) -> vector` for the prepared keywords;
    `per_example` always returned."""
    rows, soft_rows, included = [], [], []
    no_scores = [None] * len(predictions)
    for example in _prepared_examples(predictions, no_scores, references, texts, presence, normalize, stemmer):
        included.append(example is not None)
        if example is None:
            continue
        predicted, _, gold = example
        kept, denominator = cut(predicted, gold, top_k)
        similarity = [[1.0 if p == g else cosine(embed(p), embed(g)) for g in gold] for p in kept]
        best_p = [max(row) for row in similarity] if gold else [None] * len(kept)
        best_g = [max(row[j] for row in similarity) for j in range(len(gold))] if kept else [None] * len(gold)
        if one_to_one:
            adjacent = [[j for j, s in enumerate(row) if s >= threshold] for row in similarity]
            matched_p = matched_g = matching_size(adjacent, len(gold))
        else:
            matched_p = sum(1 for b in best_p if b is not None and b >= threshold)
            matched_g = sum(1 for b in best_g if b is not None and b >= threshold)
        rows.append((matched_p, denominator, matched_g, len(gold)))
        soft_p = math.fsum(max(0.0, b) for b in best_p if b is not None)
        soft_g = math.fsum(max(0.0, b) for b in best_g if b is not None)
        soft_rows.append((soft_p, denominator, soft_g, len(gold)))
    result, per_example = _prf(rows, average, zero_division, ("semantic_precision", "semantic_recall", "semantic_f1"))
    soft, soft_per_example = _prf(soft_rows, average, zero_division, ("soft_precision", "soft_recall", "soft_f1"))
    result.update(soft)
    per_example.update(soft_per_example)
    per_example = {key: _spread(values, included) for key, values in per_example.items()}
    return _without_left_out(result, per_example, included, zero_division)


def _originals(keywords, normalize_mode, stemmer):
    """Positions and stripped originals of the keywords kept by section 1 (first occurrences)."""
    kept, seen = [], set()
    for position, keyword in enumerate(keywords):
        norm = normalize(keyword, normalize_mode, stemmer)
        if norm and norm not in seen:
            seen.add(norm)
            kept.append((position, keyword.strip()))
    return kept


def sentiment_appropriateness(
    predictions,
    references=None,
    *,
    sentiment,
    texts=None,
    prediction_sentiments=None,
    normalize="default",
    stemmer=None,
):
    """SPEC section 6 with a `sentiment(str) -> [0, 1]` function; `per_example` always
    returned (None for every example left out, or every example when that input is absent)."""
    from_keywords, from_text = [], []
    for i, predicted in enumerate(predictions):
        kept = _originals(predicted, normalize, stemmer)
        if not kept:
            from_keywords.append(None)
            from_text.append(None)
            continue
        if prediction_sentiments is not None:
            s_pred = _mean([float(prediction_sentiments[i][position]) for position, _ in kept], None)
        else:
            s_pred = _mean([sentiment(original) for _, original in kept], None)
        gold = _originals(references[i], normalize, stemmer) if references is not None else []
        s_gold = _mean([sentiment(original) for _, original in gold], None)
        from_keywords.append(None if s_gold is None else 1 - abs(s_pred - s_gold))
        text = texts[i] if texts is not None else None
        from_text.append(None if text is None or not text.strip() else 1 - abs(s_pred - sentiment(text)))
    per_example = {"sas_from_keywords": from_keywords, "sas_from_text": from_text}
    result = {key: _mean([v for v in values if v is not None], None) for key, values in per_example.items()}
    result = {key: value for key, value in result.items() if value is not None}  # absent: not computable
    result["per_example"] = per_example
    return result


def _non_empty(keywords, normalize_mode, stemmer):
    """Section 1 without removing duplicates: normalized, empty ones dropped."""
    return [k for k in (normalize(raw, normalize_mode, stemmer) for raw in keywords) if k]


def keyword_diversity(predictions, *, normalize="default", stemmer=None, embed=None, zero_division=0.0):
    """SPEC section 10 (`embed(text) -> vector` for self_similarity); `per_example` always returned."""
    keyword_ratios, token_ratios, self_similarities = [], [], []
    for predicted in predictions:
        keywords = _non_empty(predicted, normalize, stemmer)
        tokens = [token for keyword in keywords for token in keyword.split()]
        keyword_ratios.append(len(set(keywords)) / len(keywords) if keywords else None)
        token_ratios.append(len(set(tokens)) / len(tokens) if tokens else None)
        distinct = list(dict.fromkeys(keywords))
        pairs = [(a, b) for i, a in enumerate(distinct) for b in distinct[i + 1 :]]
        if embed is not None:
            self_similarities.append(_mean([cosine(embed(a), embed(b)) for a, b in pairs], None) if pairs else None)
    per_example = {"unique_keyword_ratio": keyword_ratios, "unique_token_ratio": token_ratios}
    if embed is not None:
        per_example["self_similarity"] = self_similarities
    result = {key: _mean([v for v in values if v is not None], zero_division) for key, values in per_example.items()}
    result["per_example"] = per_example
    return result


def pool_by_group(predictions, references, groups, *, scores=None, normalize="default", stemmer=None):
    """SPEC section 3, corpus level: per group (in order of first appearance), its examples'
    predictions prepared by section 1 and merged in first-occurrence order, each keeping
    its maximum score, and the union of its references; the first occurrence's stripped
    original is kept. Returns (groups, predictions, references, scores or None)."""
    order, pooled_predictions, pooled_references, pooled_scores = [], {}, {}, {}
    for i, group in enumerate(groups):
        if group not in pooled_predictions:
            order.append(group)
            pooled_predictions[group], pooled_references[group], pooled_scores[group] = {}, {}, {}
        kept, kept_scores = prepare(predictions[i], None if scores is None else scores[i], normalize, stemmer)
        for (position, original), norm in zip(_originals(predictions[i], normalize, stemmer), kept):
            pooled_predictions[group].setdefault(norm, original)
            if scores is not None:
                score = float(scores[i][position])
                pooled_scores[group][norm] = max(score, pooled_scores[group].get(norm, score))
        gold = prepare(references[i], None, normalize, stemmer)[0]
        for (_, original), norm in zip(_originals(references[i], normalize, stemmer), gold):
            pooled_references[group].setdefault(norm, original)
    return (
        order,
        [list(pooled_predictions[g].values()) for g in order],
        [list(pooled_references[g].values()) for g in order],
        None if scores is None else [list(pooled_scores[g].values()) for g in order],
    )


def merge_references(annotations, mode="union", *, normalize="default", stemmer=None):
    """SPEC section 8: per example, the union (first occurrence over annotators) or the
    intersection (in the first annotator's order) of the annotators' keywords."""
    merged = []
    for example in annotations:
        lists = [_originals(keywords, normalize, stemmer) for keywords in example]
        forms = [prepare(keywords, None, normalize, stemmer)[0] for keywords in example]
        if mode == "union":
            union = {}
            for kept, normalized in zip(lists, forms):
                for (_, original), norm in zip(kept, normalized):
                    union.setdefault(norm, original)
            merged.append(list(union.values()))
        else:
            everywhere = set.intersection(*map(set, forms)) if forms else set()
            merged.append([original for (_, original), norm in zip(lists[0], forms[0]) if norm in everywhere])
    return merged


def agreement(annotations, *, average="micro", normalize="default", stemmer=None, zero_division=0.0):
    """SPEC section 8: pairwise Dice 2|A & B| / (|A| + |B|) of normalized keyword sets;
    micro pools the counts over examples, macro averages per-example coefficients."""
    n = len(annotations[0])
    sets = [[set(prepare(keywords, None, normalize, stemmer)[0]) for keywords in example] for example in annotations]
    matrix = [[1.0] * n for _ in range(n)]
    for a, b in itertools.combinations(range(n), 2):
        pairs = [(2 * len(example[a] & example[b]), len(example[a]) + len(example[b])) for example in sets]
        if average == "micro":
            value = ratio(sum(p[0] for p in pairs), sum(p[1] for p in pairs), zero_division)
        else:
            value = _mean([ratio(num, den, zero_division) for num, den in pairs], zero_division)
        matrix[a][b] = matrix[b][a] = value
    return matrix


ASPECTS = ("entertainment", "accommodation", "restaurant", "food_and_beverage", "transportation", "shopping")


def aspect_sentiment_score(predictions, references, *, aspects=ASPECTS, min_rating=1, max_rating=5, zero_division=1.0):
    """SPEC section 7: per aspect presence F1 times rating R2, and their mean."""
    result = {}
    products = []
    for j, aspect in enumerate(aspects):
        pairs = [(float(p[j]), float(r[j])) for p, r in zip(predictions, references)]
        tp = sum(1 for p, r in pairs if p != 0 and r != 0)
        fp = sum(1 for p, r in pairs if p != 0 and r == 0)
        fn = sum(1 for p, r in pairs if p == 0 and r != 0)
        f1_j = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else zero_division
        both = [(p - r) ** 2 for p, r in pairs if p != 0 and r != 0]
        r2_j = 1 - math.fsum(both) / (len(both) * (max_rating - min_rating) ** 2) if both else 1.0
        result[f"f1_{aspect}"], result[f"r2_{aspect}"], result[f"score_{aspect}"] = f1_j, r2_j, f1_j * r2_j
        products.append(f1_j * r2_j)
    return {"score": math.fsum(products) / len(aspects), **result}
