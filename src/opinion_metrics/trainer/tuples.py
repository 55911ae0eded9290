"""The tuple helper: generated ids and label ids decoded into text, read as sentiment tuples
(`format=`: ABSA-QUAD's paraphrases or generative ABSA's tuples), scored by `sentiment_tuple_prf`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.tuple_text import read_text
from ..core.tuples import check_elements
from ..families.registry import check_options
from .batched import FamilyScore, StateMetrics
from .inputs import Evaluated, token_ids
from .keyphrases import check_tokenizer, refuse_tag_ids


def tuple_compute_metrics(
    tokenizer: Any,
    *,
    elements: Any = "aste",
    format: str = "tuples",  # noqa: A002 (the family's option)
    **options: Any,
) -> StateMetrics:
    """A Seq2SeqTrainer `compute_metrics` (with `predict_with_generate=True`) for models that
    generate sentiment tuples as text.

    Generated ids and label ids are decoded with `tokenizer` (-100 replaced by the pad token
    first, special tokens skipped). The generated text is read as `sentiment_tuple_prf(format=...)`
    reads it (an unreadable segment is a predicted tuple that matches nothing, counted in
    `unparsed`); the target text is read alike and must be readable whole. Predictions that
    decode mostly to special or unused tokens (tag ids, not text) are refused.

    Args:
        tokenizer: the model's tokenizer (anything with `batch_decode` and `pad_token_id`).
        elements: the tuple's elements in order: a preset ("aope", "aste", "tasd", "asqp",
            "acos") or names.
        format: "tuples" (generative ABSA: `(a, b, c); (d, e, f)`, the parts in the order of
            `elements`) or "paraphrase" (ABSA-QUAD: `category is great because aspect is
            opinion [SSEP] ...`; quads: elements "asqp" or "acos").
        **options: passed to `sentiment_tuple_prf` (match, average, counting, projections,
            label_map, normalize, zero_division, confidence_level, ...; checked now).

    Returns:
        A function of Trainer's `EvalPrediction` (and `compute_result`, for
        `batch_eval_metrics=True`: see `StateMetrics`) returning the family's values and `unparsed`.
    """
    if format not in ("paraphrase", "tuples"):
        raise ValueError(f"format must be 'paraphrase' or 'tuples' (how the model writes tuples), got {format!r}")
    options = {"elements": elements, "format": format, **options}
    check_options("sentiment_tuple_prf", options)  # a bad option fails now, not after training
    order = check_elements(elements)
    pad_token_id = check_tokenizer(tokenizer)

    def decode(ids: Any, name: str) -> list[str]:
        ids = token_ids(ids, name)
        if name == "predictions":
            refuse_tag_ids(ids, tokenizer, pad_token_id)
        return tokenizer.batch_decode(np.where(ids < 0, pad_token_id, ids), skip_special_tokens=True)

    def gold(text: str, example: int) -> list[tuple[str, ...]]:
        read = read_text(text, format, order)
        if read.unparsed:
            raise ValueError(
                f"label_ids: example {example}: the target text {read.unparsed[0]!r} cannot be read with "
                f"format={format!r} and elements {list(order)} (a target truncated by max_length?)"
            )
        return read.tuples

    def convert(evaluated: Evaluated) -> dict[str, Any]:
        predictions = decode(evaluated.predictions, "predictions")
        targets = decode(evaluated.labels, "label_ids")
        return {
            "predictions": predictions,
            "references": [gold(text, evaluated.start + i) for i, text in enumerate(targets)],
        }

    return StateMetrics(convert, [FamilyScore("sentiment_tuple_prf", options)])
