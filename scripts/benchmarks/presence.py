"""presence="present": keyword_prf with review texts against a per-keyword naive loop."""

from __future__ import annotations

from .common import Corpus, best_time, is_approx_match, naive_matching, naive_normalize, naive_prepare, same


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
