"""What Trainer passes to `compute_metrics`, as numpy arrays: predictions, label ids and
inputs of the whole evaluation set (an `EvalPrediction` or a tuple) or of one batch
(`batch_eval_metrics=True`: tensors, inputs as the batch's dict), and the slice of a
per-example list (texts, gold keyphrases) that a batch covers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.validation import describe

INPUTS_SETTING = 'include_for_metrics=["inputs"]'
TAGGING_HELPER = "keyphrase_tagging_compute_metrics"


@dataclass(frozen=True)
class Evaluated:
    """One `compute_metrics` call's arrays.

    `start` is the global position of the first example (0 for the whole set); `last` is
    None for the whole set, else whether this batch is the evaluation's last.
    """

    predictions: Any
    labels: Any
    inputs: Any
    start: int = 0
    last: bool | None = None


def as_numpy(value: Any) -> Any:
    """A torch tensor (on any device, in any float precision) as a numpy array; lists of
    tensors element by element; anything else unchanged."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach()
        if str(value.dtype) in ("torch.bfloat16", "torch.float16"):
            value = value.float()
        return value.cpu().numpy()
    if isinstance(value, (list, tuple)) and any(hasattr(item, "detach") for item in value):
        return type(value)(as_numpy(item) for item in value)
    return value


def unpack(eval_prediction: Any, start: int = 0, last: bool | None = None) -> Evaluated:
    """The arrays of an `EvalPrediction` or a `(predictions, label_ids[, inputs])` tuple."""
    if hasattr(eval_prediction, "label_ids"):
        predictions, labels = eval_prediction.predictions, eval_prediction.label_ids
        inputs = getattr(eval_prediction, "inputs", None)
    elif isinstance(eval_prediction, (tuple, list)) and len(eval_prediction) in (2, 3):
        predictions, labels, inputs = (*eval_prediction, None)[:3]
    else:
        raise ValueError(
            "compute_metrics takes what Trainer passes: an EvalPrediction or a (predictions, label_ids) pair, "
            f"got {type(eval_prediction).__name__}"
        )
    predictions = as_numpy(predictions)
    if isinstance(predictions, (tuple, list)) and predictions and getattr(predictions[0], "ndim", 0) >= 2:
        predictions = predictions[0]  # (logits, hidden states, ...) of models that return more than logits
    return Evaluated(predictions, as_numpy(labels), inputs, start, last)


def input_ids(inputs: Any, rows: int, helper: str) -> np.ndarray:
    """The input token ids Trainer passes with `include_for_metrics=["inputs"]`: an array
    for the whole set, the batch's dict (its "input_ids") per batch; a clear error when
    they are missing or do not have one row per example."""
    if inputs is None:
        raise ValueError(
            f"{helper} decodes the input tokens, but Trainer passed none: set "
            f"TrainingArguments({INPUTS_SETTING}) (transformers < 4.46: include_inputs_for_metrics=True)"
        )
    if isinstance(inputs, Mapping):  # batch_eval_metrics=True passes the batch itself
        if "input_ids" not in inputs:
            raise ValueError(f"inputs: the batch has no 'input_ids' to decode, only {sorted(inputs)}")
        inputs = inputs["input_ids"]
    ids = token_ids(as_numpy(inputs), "inputs")
    if len(ids) != rows:
        raise ValueError(
            f"inputs have {len(ids)} rows but there are {rows} examples: with batch_eval_metrics=True on several "
            "processes, Trainer passes each process's inputs ungathered; evaluate without batch_eval_metrics there"
        )
    return ids


def _numeric(values: Any, name: str, shape: str, ndim: int) -> np.ndarray:
    """`values` as a finite float array of `ndim` dimensions, else a ValueError."""
    try:
        array = np.asarray(as_numpy(values), dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array of shape {shape}, got {type(values).__name__}") from None
    if array.ndim != ndim or 0 in array.shape:
        raise ValueError(f"{name} must have shape {shape}, got shape {array.shape}")
    if not np.isfinite(array).all():
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise ValueError(f"{name}: example {index[0]}, aspect {index[1]} is {array[index]}")
    return array


def _padded_rows(rows: Sequence[Any], name: str) -> np.ndarray:
    """Rows of token ids of any lengths (plain lists, 1-d arrays or tensors) as one 2-d array,
    short rows padded with -100 (the padding label ids use)."""
    arrays = []
    for index, row in enumerate(rows):
        try:
            array = np.asarray(as_numpy(row))
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
    ids = as_numpy(ids)
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
            f"passes the ids model.generate returns; for a token-classification model, use {TAGGING_HELPER}"
        )
    if array.ndim != 2 or array.dtype.kind not in "iuf":
        raise ValueError(
            f"{name} must be token ids of shape (examples, length), got shape {array.shape}, {array.dtype}"
        )
    return array.astype(np.int64)


def window(values: Sequence[Any] | None, name: str, evaluated: Evaluated, rows: int) -> list[Any] | None:
    """The entries of a per-example list (`texts=`, `references=`) that this call covers: all
    of them for the whole set, `[start, start + rows)` for a batch; an error naming the
    counts when the list is shorter, or (on the whole set or the last batch) longer."""
    if values is None:
        return None
    stop = evaluated.start + rows
    complete = evaluated.last is not False
    if stop > len(values) or (complete and stop != len(values)):
        raise ValueError(
            f"{name} has {len(values)} entries (one per evaluation example) but the evaluation has "
            f"{stop if complete else f'at least {stop}'} examples"
        )
    return list(values[evaluated.start : stop])
