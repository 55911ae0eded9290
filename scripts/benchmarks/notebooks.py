"""The notebooks' per-review loops (their normalization and matching) against the evaluate modules."""

from __future__ import annotations

import math
import re

from .common import REPO, Corpus, best_time


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
