"""`compute_metrics` factories for `transformers.Trainer` and `Seq2SeqTrainer`.

Model outputs become metric inputs here, explicitly (argmax, rounding, decoding), never
silently inside a metric. Nothing here imports transformers: the factories take what
Trainer passes (an `EvalPrediction` or a `(predictions, label_ids)` tuple).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .core.validation import (
    check_aspects,
    check_corpus,
    check_positive_int,
    check_rating_range,
    check_texts,
    check_zero_division,
    describe,
)
from .families.aspect_sentiment_score import DEFAULT_ASPECTS, aspect_sentiment_score
from .families.keyword_prf import keyword_prf
from .families.registry import check_options
from .families.weighted_keyword_prf import map_at_k, ndcg_at_k

ASPECT_OUTPUTS = ("logits", "regression")
KEYPHRASE_METRICS = ("keyword_prf", "ndcg", "map")


def _unpack(eval_prediction: Any) -> tuple[Any, Any]:
    if not hasattr(eval_prediction, "label_ids") and not (
        isinstance(eval_prediction, (tuple, list)) and len(eval_prediction) == 2
    ):
        raise ValueError(
            "compute_metrics takes what Trainer passes: an EvalPrediction or a (predictions, label_ids) pair, "
            f"got {type(eval_prediction).__name__}"
        )
    predictions, labels = (
        (eval_prediction.predictions, eval_prediction.label_ids)
        if hasattr(eval_prediction, "label_ids")
        else eval_prediction
    )
    if isinstance(predictions, (tuple, list)) and predictions and getattr(predictions[0], "ndim", 0) >= 2:
        predictions = predictions[0]  # (logits, hidden states, ...) of models that return more than logits
    return predictions, labels


def _numeric(values: Any, name: str, shape: str, ndim: int) -> np.ndarray:
    """`values` as a finite float array of `ndim` dimensions, else a ValueError."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array of shape {shape}, got {type(values).__name__}") from None
    if array.ndim != ndim or 0 in array.shape:
        raise ValueError(f"{name} must have shape {shape}, got shape {array.shape}")
    if not np.isfinite(array).all():
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise ValueError(f"{name}: example {index[0]}, aspect {index[1]} is {array[index]}")
    return array


def ratings_from_logits(logits: Any) -> np.ndarray:
    """Ratings from classification logits of shape (examples, aspects, classes): the argmax
    class per aspect, class 0 meaning absent and class r the rating r."""
    return _numeric(logits, "logits", "(examples, aspects, classes)", 3).argmax(axis=-1)


def ratings_from_regression(outputs: Any, *, min_rating: int = 1, max_rating: int = 5) -> np.ndarray:
    """Ratings from regression outputs of shape (examples, aspects): rounded to the nearest
    integer, clipped to [0, max_rating]; a value that rounds into (0, min_rating) becomes
    min_rating (present, lowest rating)."""
    min_rating, max_rating = check_rating_range(min_rating, max_rating)
    outputs = _numeric(outputs, "regression outputs", "(examples, aspects)", 2)
    ratings = np.clip(np.rint(outputs), 0, max_rating).astype(np.int64)
    ratings[(ratings > 0) & (ratings < min_rating)] = min_rating
    return ratings


def aspect_compute_metrics(
    *,
    outputs: str = "logits",
    aspects: Sequence[str] = DEFAULT_ASPECTS,
    min_rating: int = 1,
    max_rating: int = 5,
    zero_division: float = 1.0,
) -> Callable[[Any], dict[str, float]]:
    """A Trainer `compute_metrics` for aspect rating models.

    Args:
        outputs: "logits" (shape (n, aspects, classes), argmax; class 0 = absent) or
            "regression" (shape (n, aspects), rounded and clipped).
        aspects, min_rating, max_rating, zero_division: as in `aspect_sentiment_score`.

    Returns:
        A function of Trainer's `EvalPrediction` returning the flat dict Trainer logs:
        `score`, `f1_<aspect>`, `r2_<aspect>`, `score_<aspect>`.

    Example:
        >>> compute_metrics = aspect_compute_metrics(outputs="regression", aspects=["food", "hotel"])
        >>> compute_metrics((np.array([[0.2, 3.6], [4.9, 0.4]]), np.array([[0, 4], [5, 0]])))["score"]
        1.0
    """
    if outputs not in ASPECT_OUTPUTS:
        raise ValueError(f"outputs must be one of {ASPECT_OUTPUTS}, got {outputs!r}")
    aspects = check_aspects(aspects)
    min_rating, max_rating = check_rating_range(min_rating, max_rating)
    zero_division = check_zero_division(zero_division)

    def compute_metrics(eval_prediction: Any) -> dict[str, float]:
        predictions, labels = _unpack(eval_prediction)
        if outputs == "logits":
            ratings = ratings_from_logits(predictions)
        else:
            ratings = ratings_from_regression(predictions, min_rating=min_rating, max_rating=max_rating)
        return aspect_sentiment_score(
            ratings,
            labels,
            aspects=aspects,
            min_rating=min_rating,
            max_rating=max_rating,
            zero_division=zero_division,
        )

    return compute_metrics


def _padded_rows(rows: Sequence[Any], name: str) -> np.ndarray:
    """Rows of token ids of any lengths (plain lists, 1-d arrays or tensors) as one 2-d array,
    short rows padded with -100 (the padding label ids use)."""
    arrays = []
    for index, row in enumerate(rows):
        try:
            array = np.asarray(row)
        except (TypeError, ValueError):
            array = np.asarray(None)
        if array.ndim != 1 or (array.size and array.dtype.kind not in "iuf"):
            raise ValueError(f"{name}: example {index} must be a list of token ids (integers), got {describe(row)}")
        arrays.append(array)
    width = max(map(len, arrays), default=0)
    padded = np.full((len(arrays), width), -100, dtype=np.result_type(*arrays, np.int64) if arrays else np.int64)
    for index, array in enumerate(arrays):
        padded[index, : len(array)] = array
    return padded


def token_ids(ids: Any, name: str) -> np.ndarray:
    """`ids` as a 2-d integer array of token ids (examples x length): an array, a tensor or
    plain lists of any lengths (padded); logits (a float array, or one with a vocabulary
    axis) are refused with what to set instead."""
    if isinstance(ids, (list, tuple)) and all(getattr(row, "ndim", 1) == 1 for row in ids):
        ids = _padded_rows(ids, name)
    array = np.asarray(ids)
    if (
        array.ndim == 3
        or (array.dtype.kind == "f" and not np.isfinite(array).all())
        or (array.dtype.kind == "f" and not (array == np.round(array)).all())
    ):
        raise ValueError(
            f"{name} look like logits (shape {array.shape}, dtype {array.dtype}), not generated token ids: set "
            "predict_with_generate=True in Seq2SeqTrainingArguments (and use Seq2SeqTrainer), so that Trainer "
            "passes the ids model.generate returns"
        )
    if array.ndim != 2 or array.dtype.kind not in "iuf":
        raise ValueError(
            f"{name} must be token ids of shape (examples, length), got shape {array.shape}, {array.dtype}"
        )
    return array.astype(np.int64)


def split_keyphrases(text: str, separator: str = ";") -> list[str]:
    """Keyphrases of a generated string: split on `separator`, stripped, empty ones dropped."""
    return [phrase.strip() for phrase in text.split(separator) if phrase.strip()]


def keyphrase_compute_metrics(
    tokenizer: Any,
    *,
    separator: str = ";",
    metrics: Sequence[str] = ("keyword_prf",),
    k: int = 5,
    texts: Sequence[str] | None = None,
    **options: Any,
) -> Callable[[Any], dict[str, float]]:
    """A Seq2SeqTrainer `compute_metrics` (with `predict_with_generate=True`) for models that
    generate keyphrases as one string joined by `separator` ("war; empire; jedi").

    Generated ids and label ids are decoded with `tokenizer` (-100 replaced by the pad
    token first), split into keyphrases, and scored.

    Args:
        tokenizer: the model's tokenizer (anything with `batch_decode` and `pad_token_id`).
        separator: the string between keyphrases in the target text.
        metrics: any of "keyword_prf" (precision / recall / f1), "ndcg" (`ndcg@{k}`) and
            "map" (`map@{k}`); generated order is the ranking.
        k: the rank cut-off of nDCG and MAP.
        texts: the eval set's source documents, in order, for `presence="present"` or
            `"absent"`; without them, the inputs Trainer passes with
            `include_for_metrics=["inputs"]` are decoded instead.
        **options: passed to the metrics (match, normalize, stemmer, average, presence,
            confidence_level, ...).
    """
    if isinstance(metrics, str) or not isinstance(metrics, Sequence):
        raise ValueError(f"metrics must be a non-empty subset of {KEYPHRASE_METRICS}, got {metrics!r}")
    unknown = [name for name in metrics if name not in KEYPHRASE_METRICS]
    if unknown or not metrics:
        raise ValueError(f"metrics must be a non-empty subset of {KEYPHRASE_METRICS}, got {list(metrics)!r}")
    if not isinstance(separator, str) or not separator.strip():
        raise ValueError(f"separator must be a non-blank str such as ';', got {separator!r}")
    k = check_positive_int(k, "k")
    if texts is not None:
        texts = check_corpus(texts, "texts")
        texts = check_texts(texts, len(texts), allow_none=False)
    check_options("keyword_prf", options)  # a bad option fails now, not after training
    pad_token_id = getattr(tokenizer, "pad_token_id", None)
    if pad_token_id is None:
        raise ValueError("the tokenizer has no pad_token_id: set tokenizer.pad_token before evaluating")
    if not callable(getattr(tokenizer, "batch_decode", None)):
        raise ValueError(f"tokenizer must have batch_decode (a Hugging Face tokenizer), got {type(tokenizer).__name__}")
    ranking_options = {key: options[key] for key in ("match", "normalize", "stemmer", "presence") if key in options}
    needs_texts = options.get("presence", "all") != "all"

    def decode(ids: np.ndarray, name: str) -> list[list[str]]:
        ids = token_ids(ids, name)
        ids = np.where(ids < 0, pad_token_id, ids)
        return [split_keyphrases(text, separator) for text in tokenizer.batch_decode(ids, skip_special_tokens=True)]

    def source_texts(eval_prediction: Any) -> Sequence[str] | None:
        if not needs_texts or texts is not None:
            return texts
        inputs = getattr(eval_prediction, "inputs", None)
        if inputs is None:
            raise ValueError(
                "presence needs the source documents: pass texts=eval_dataset['text'] to "
                "keyphrase_compute_metrics, or set include_for_metrics=['inputs'] in the training arguments"
            )
        ids = token_ids(inputs, "inputs")
        return tokenizer.batch_decode(np.where(ids < 0, pad_token_id, ids), skip_special_tokens=True)

    def compute_metrics(eval_prediction: Any) -> dict[str, float]:
        generated, labels = _unpack(eval_prediction)
        predictions, references = decode(generated, "predictions"), decode(labels, "label_ids")
        documents = source_texts(eval_prediction)
        results: dict[str, float] = {}
        if "keyword_prf" in metrics:
            results.update(keyword_prf(predictions, references, texts=documents, **options))
        if "ndcg" in metrics:
            results[f"ndcg@{k}"] = ndcg_at_k(predictions, references, k=k, texts=documents, **ranking_options)
        if "map" in metrics:
            results[f"map@{k}"] = map_at_k(predictions, references, k=k, texts=documents, **ranking_options)
        return results

    return compute_metrics
