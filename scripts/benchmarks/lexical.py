"""The lexical families on the movie data: the library against the naive loops, evaluate's
compute and add_batch."""

from __future__ import annotations

from .common import REPO, Corpus, best_time, naive_keyword_prf, naive_weighted_keyword_prf, same


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
