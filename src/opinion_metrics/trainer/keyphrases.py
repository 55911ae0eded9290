"""The generation helper: generated ids and label ids decoded into keyphrase lists, scored
by `keyword_prf` and, on request, the ranking metrics of `weighted_keyword_prf`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.validation import check_corpus, check_positive_int, check_texts
from ..families.options import INTERVAL_OPTIONS
from ..families.registry import check_options
from .batched import FamilyScore, StateMetrics
from .inputs import TAGGING_HELPER, Evaluated, input_ids, token_ids, window

KEYPHRASE_METRICS = ("keyword_prf", "ndcg", "map")
RANKING_OPTIONS = ("match", "normalize", "stemmer", "presence", *sorted(INTERVAL_OPTIONS))
_UNUSED = re.compile(r"\[unused\d+\]|<unused\d+>")


def split_keyphrases(text: str, separator: str = ";") -> list[str]:
    """Keyphrases of a generated string: split on `separator`, stripped, empty ones dropped."""
    return [phrase.strip() for phrase in text.split(separator) if phrase.strip()]


def check_tokenizer(tokenizer: Any) -> int:
    """The tokenizer's pad token id; a clear error for what cannot decode."""
    pad_token_id = getattr(tokenizer, "pad_token_id", None)
    if pad_token_id is None:
        raise ValueError("the tokenizer has no pad_token_id: set tokenizer.pad_token before evaluating")
    if not callable(getattr(tokenizer, "batch_decode", None)):
        raise ValueError(f"tokenizer must have batch_decode (a Hugging Face tokenizer), got {type(tokenizer).__name__}")
    return int(pad_token_id)


def _special_share(ids: np.ndarray, tokenizer: Any, pad_token_id: int) -> float:
    """The share of special or unused tokens (`[unused0]`, `<pad>`, `<unk>`) among the ids
    between each row's framing (its leading and trailing padding, -100 and start / end
    tokens: [CLS], [SEP], <s>, </s> do not count): near 0 for generated text, even empty,
    near 1 for tag ids decoded as tokens."""
    special = {int(i) for i in getattr(tokenizer, "all_special_ids", ()) or ()} | {pad_token_id}
    framing = [pad_token_id] + [
        value
        for value in (getattr(tokenizer, f"{name}_token_id", None) for name in ("bos", "eos", "cls", "sep"))
        if isinstance(value, int)
    ]
    inner = (ids >= 0) & ~np.isin(ids, framing)
    if not inner.any():
        return 0.0
    columns = np.arange(ids.shape[1])
    first = np.where(inner.any(axis=1), inner.argmax(axis=1), ids.shape[1])
    last = ids.shape[1] - 1 - inner[:, ::-1].argmax(axis=1)
    between = (columns >= first[:, None]) & (columns <= last[:, None])
    counted = ids[between & (ids >= 0)]
    distinct = np.unique(counted)
    flagged = {int(i) for i in distinct if int(i) in special}
    convert = getattr(tokenizer, "convert_ids_to_tokens", None)
    if callable(convert):
        others = [int(i) for i in distinct if int(i) not in flagged]
        names = convert(others) if others else []
        flagged |= {i for i, name in zip(others, names) if isinstance(name, str) and _UNUSED.fullmatch(name)}
    return float(np.isin(counted, list(flagged)).mean()) if flagged else 0.0


def refuse_tag_ids(ids: np.ndarray, tokenizer: Any, pad_token_id: int) -> None:
    """A ValueError when generated "ids" are mostly special or unused tokens: tag ids of a
    token-classification model (an argmax in preprocess_logits_for_metrics), not text."""
    share = _special_share(ids, tokenizer, pad_token_id)
    if share > 0.5:
        raise ValueError(
            f"predictions decode to {share:.0%} special or unused tokens ([unused0], <pad>, ...): they look like "
            "the tag ids of a token-classification model, not generated text; use "
            f"{TAGGING_HELPER}(tokenizer, label_names=model.config.id2label) for tagging models, or "
            "Seq2SeqTrainer with predict_with_generate=True for generation"
        )


def keyphrase_compute_metrics(
    tokenizer: Any,
    *,
    separator: str = ";",
    metrics: Sequence[str] = ("keyword_prf",),
    k: int = 5,
    texts: Sequence[str] | None = None,
    **options: Any,
) -> StateMetrics:
    """A Seq2SeqTrainer `compute_metrics` (with `predict_with_generate=True`) for models that
    generate keyphrases as one string joined by `separator` ("war; empire; jedi").

    Generated ids and label ids are decoded with `tokenizer` (-100 replaced by the pad
    token first), split into keyphrases, and scored. Predictions that decode mostly to
    special or unused tokens (tag ids of a token-classification model) are refused: use
    `keyphrase_tagging_compute_metrics` for those models.

    Args:
        tokenizer: the model's tokenizer (anything with `batch_decode` and `pad_token_id`).
        separator: the string between keyphrases in the target text.
        metrics: any of "keyword_prf" (precision / recall / f1), "ndcg" (`ndcg@{k}`) and
            "map" (`map@{k}`; both from `weighted_keyword_prf` with every score 1);
            generated order is the ranking.
        k: the rank cut-off of nDCG and MAP.
        texts: the eval set's source documents, in order, for `presence="present"` or
            `"absent"`; without them, the inputs Trainer passes with
            `include_for_metrics=["inputs"]` are decoded instead.
        **options: passed to `keyword_prf` (match, normalize, stemmer, average, presence,
            confidence_level, ...; checked now); nDCG and MAP take match, normalize,
            stemmer, presence and the interval options.

    Returns:
        A function of Trainer's `EvalPrediction` (and `compute_result`, for
        `batch_eval_metrics=True`: see `StateMetrics`).
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
    pad_token_id = check_tokenizer(tokenizer)
    needs_texts = options.get("presence", "all") != "all"

    def decode(ids: Any, name: str) -> list[list[str]]:
        ids = token_ids(ids, name)
        if name == "predictions":
            refuse_tag_ids(ids, tokenizer, pad_token_id)
        ids = np.where(ids < 0, pad_token_id, ids)
        return [split_keyphrases(text, separator) for text in tokenizer.batch_decode(ids, skip_special_tokens=True)]

    def source_texts(evaluated: Evaluated, rows: int) -> list[str] | None:
        if not needs_texts or texts is not None:
            return window(texts, "texts", evaluated, rows)
        if evaluated.inputs is None:
            raise ValueError(
                "presence needs the source documents: pass texts=eval_dataset['text'] to "
                "keyphrase_compute_metrics, or set include_for_metrics=['inputs'] in the training arguments"
            )
        ids = input_ids(evaluated.inputs, rows, "keyphrase_compute_metrics")
        return tokenizer.batch_decode(np.where(ids < 0, pad_token_id, ids), skip_special_tokens=True)

    def convert(evaluated: Evaluated) -> dict[str, Any]:
        predictions = decode(evaluated.predictions, "predictions")
        references = decode(evaluated.labels, "label_ids")
        return {
            "predictions": predictions,
            "references": references,
            "texts": source_texts(evaluated, len(predictions)),
        }

    scores = []
    if "keyword_prf" in metrics:
        scores.append(FamilyScore("keyword_prf", options))
    ranking = [f"{name}@{k}" for name in ("ndcg", "map") if name in metrics]
    if ranking:
        ranking_options = {key: options[key] for key in RANKING_OPTIONS if key in options}
        scores.append(
            FamilyScore(
                "weighted_keyword_prf",
                {**ranking_options, "k": k},
                inputs=_unit_scores,
                keys=lambda key: key.split("_ci_")[0] in ranking,
            )
        )
    return StateMetrics(convert, scores)


def _unit_scores(columns: Any) -> dict[str, Any]:
    """`weighted_keyword_prf`'s inputs with every prediction scored 1 (only its ranking is used)."""
    return {
        "predictions": columns["predictions"],
        "scores": [[1.0] * len(keyphrases) for keyphrases in columns["predictions"]],
        "references": columns["references"],
        **({"texts": columns["texts"]} if columns.get("texts") is not None else {}),
    }
