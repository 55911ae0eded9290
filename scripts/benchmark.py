"""Speed of opinion-metrics against a naive per-review, per-pair loop, measured in one run.

The data is ../shared/data/movie_reviews: every review of 5 movies, the keywords of 4
models (33,384 examples), each review scored against its movie's gold list (272-449
keywords). The naive baseline is written the way the source notebooks evaluate: per
review, normalize both lists, then test every (prediction, gold) pair; it computes the
same SPEC values (asserted), so the ratios compare equal work.

    python scripts/benchmark.py                 # everything, best of 3 for the fast paths
    python scripts/benchmark.py --sample 5      # every 5th review: a quick look
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import sys
import time
import unicodedata
from pathlib import Path

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
MODELS = ("base", "reranker", "sentiment", "metadata")


def load_movie_reviews(directory: Path, sample: int) -> tuple[list, list, list]:
    """Predictions, scores and references, model by model; one gold list object per movie."""
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
    predictions = [review[f"keywords_{model}"] or [] for model in MODELS for review in reviews]
    scores = [
        [min(max(s, 0.0), 1.0) for s in review[f"scores_{model}"] or []] for model in MODELS for review in reviews
    ]
    references = [gold[review["movie"]] for _ in MODELS for review in reviews]
    return predictions, scores, references


# --- the naive baseline: per review, per pair, as in the notebooks ---------------------


def naive_normalize(keyword):
    keyword = unicodedata.normalize("NFKC", keyword).casefold()
    keyword = "".join(ch for ch in keyword if unicodedata.category(ch)[0] not in "PS")
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
            depth = min(k, len(gold))
            idcg = sum((1 / math.log2(j + 2)) / math.log2(j + 2) for j in range(depth))
            row[3], row[4] = dcg / idcg, precision_sum / depth
        rows.append(row)
    names = ["weighted_precision", "weighted_recall", "weighted_f1", f"ndcg@{k}", f"map@{k}"]
    result = {}
    for column, name in enumerate(names):
        values = [row[column] for row in rows if row[column] is not None]
        result[name] = sum(values) / len(values)
    return result


# --- measurement --------------------------------------------------------------------


def best_time(function, repeat):
    best, result = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def same(a, b):
    return a.keys() == b.keys() and all(math.isclose(a[key], b[key], abs_tol=1e-9) for key in a)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "movie_reviews")
    parser.add_argument("--sample", type=int, default=1, help="keep every n-th review (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="best of n for the fast paths (default 3)")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"movie reviews not found at {args.data}; pass --data", file=sys.stderr)
        return 2

    import evaluate

    from opinion_metrics import keyword_prf, weighted_keyword_prf

    predictions, scores, references = load_movie_reviews(args.data, args.sample)
    print(f"{len(predictions)} examples (5 movies x 4 models), gold lists of 272-449 keywords\n")
    keyword_module = evaluate.load(str(REPO / "metrics" / "keyword_prf"))
    weighted_module = evaluate.load(str(REPO / "metrics" / "weighted_keyword_prf"))

    def stream(module, **columns):
        for start in range(0, len(predictions), 1000):
            module.add_batch(**{name: column[start : start + 1000] for name, column in columns.items()})
        return module.compute()

    rows = []
    families = [
        (
            "keyword_prf",
            lambda: naive_keyword_prf(predictions, references),
            lambda: keyword_prf(predictions, references),
            lambda: keyword_module.compute(predictions=predictions, references=references),
            lambda: stream(keyword_module, predictions=predictions, references=references),
        ),
        (
            "weighted P/R/F1 + nDCG@5 + MAP@5",
            lambda: naive_weighted_keyword_prf(predictions, scores, references),
            lambda: weighted_keyword_prf(predictions, scores, references),
            lambda: weighted_module.compute(predictions=predictions, scores=scores, references=references),
            lambda: stream(weighted_module, predictions=predictions, scores=scores, references=references),
        ),
    ]
    for name, naive, library, module, streamed in families:
        naive_time, naive_result = best_time(naive, 1)
        library_time, library_result = best_time(library, args.repeat)
        module_time, module_result = best_time(module, args.repeat)
        stream_time, stream_result = best_time(streamed, 1)
        if not (same(naive_result, library_result) and same(library_result, module_result)):
            raise SystemExit(f"{name}: results differ\n{naive_result}\n{library_result}\n{module_result}")
        if not same(library_result, stream_result):
            raise SystemExit(f"{name}: add_batch results differ\n{library_result}\n{stream_result}")
        rows.append((name, naive_time, library_time, module_time, stream_time))

    header = f"{'family':<34}{'naive s':>9}{'library s':>11}{'module s':>10}{'naive/lib':>11}{'module/lib':>12}"
    print(header + f"{'add_batch/lib':>15}")
    for name, naive_time, library_time, module_time, stream_time in rows:
        print(
            f"{name:<34}{naive_time:>9.2f}{library_time:>11.3f}{module_time:>10.3f}"
            f"{naive_time / library_time:>10.0f}x{module_time / library_time:>11.2f}x"
            f"{stream_time / library_time:>14.2f}x"
        )
    print(
        "\nnaive/lib: how many times faster the library is (target >= 50x); module/lib: "
        "evaluate.compute over the library (target <= 1.5x); add_batch/lib: the same data "
        "through add_batch in batches of 1000, then compute() (evaluate's Arrow cache)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
