"""The lexical families at interactive size: one movie's reviews and one model."""

from __future__ import annotations

from .common import Corpus, best_time, naive_keyword_prf, naive_weighted_keyword_prf, same


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
