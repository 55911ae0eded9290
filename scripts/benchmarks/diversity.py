"""keyword_diversity, without and with a model, against keyword_prf for scale."""

from __future__ import annotations

from .common import Corpus, _packaged_model_path, best_time, same


def diversity(corpus: Corpus, repeat: int) -> None:
    from opinion_metrics import keyword_diversity, keyword_prf
    from opinion_metrics.embeddings.encoder import clear_embedding_cache, load_model

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
