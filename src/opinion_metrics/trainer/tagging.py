"""The tagging helper: a token-classification model's BIO (or BIOES) tags joined into
keyphrases, decoded with the tokenizer, and scored by a keyword family."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.validation import check_corpus, check_keyword, check_keyword_list, check_texts, describe
from ..families.registry import FAMILIES
from .batched import FamilyScore, StateMetrics
from .inputs import Evaluated, as_numpy, input_ids, token_ids, window
from .keyphrases import check_tokenizer

HELPER = "keyphrase_tagging_compute_metrics"
OUT, BEGIN, INSIDE, END, SINGLE = range(5)  # tag roles; BILOU's L and U are BIOES's E and S
_ROLES = {"O": OUT, "B": BEGIN, "I": INSIDE, "E": END, "S": SINGLE, "L": END, "U": SINGLE}
_NO_TYPE = -1


def tagging_families() -> tuple[str, ...]:
    """The families that score keyphrases alone: predicted keywords, gold keywords, texts."""
    return tuple(
        name
        for name, family in FAMILIES.items()
        if family.inputs[0].kind == "keywords"
        and all(not item.required or item.name in ("predictions", "references") for item in family.inputs)
    )


def tag_names(label_names: Any) -> tuple[str, ...]:
    """Tag names by id from a list, a mapping id -> name (`model.config.id2label`), or a
    model or config (its `id2label`)."""
    source = label_names
    for holder in (getattr(label_names, "config", None), label_names):
        if holder is not None and isinstance(getattr(holder, "id2label", None), Mapping):
            label_names = holder.id2label
            break
    if isinstance(label_names, Mapping):
        try:
            by_id = {int(key): value for key, value in label_names.items()}
        except (TypeError, ValueError):
            raise ValueError(
                f"label_names: the ids must be integers, got {list(label_names)!r} (that is label2id: pass id2label)"
            ) from None
        if sorted(by_id) != list(range(len(by_id))):
            raise ValueError(f"label_names: the ids must be 0..{len(by_id) - 1}, got {sorted(by_id)}")
        label_names = [by_id[i] for i in range(len(by_id))]
    if isinstance(label_names, str) or not isinstance(label_names, Sequence) or not label_names:
        raise ValueError(
            "label_names must name the tags by id: model.config.id2label, the model itself, or a list such as "
            f"['O', 'B', 'I'], got {describe(source)}"
        )
    if not all(isinstance(name, str) for name in label_names):
        raise ValueError(f"label_names must be strs, got {list(label_names)!r}")
    return tuple(label_names)


def _parse(names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Role and type (an int per distinct entity type; bare tags share one) of each tag id."""
    roles, types, kinds = [], [], {}
    for index, name in enumerate(names):
        prefix, _, kind = name.strip().partition("-")
        role = _ROLES.get(prefix.upper())
        if role is None or (role == OUT and kind):
            raise ValueError(
                f"label_names: tag {index} is {name!r}, not a BIO or BIOES tag (O, B, I, E, S, optionally with a type: "
                "B-KEY); a model built without tag names has LABEL_0, ...: build it with id2label={0: 'O', "
                "1: 'B', 2: 'I'} (and label2id), or pass label_names=['O', 'B', 'I'] in its tag order"
            )
        roles.append(role)
        types.append(_NO_TYPE if role == OUT else kinds.setdefault(kind, len(kinds)))
    return np.asarray(roles, dtype=np.int8), np.asarray(types, dtype=np.int64)


def chunks(role: np.ndarray, kind: np.ndarray, first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, stops) of the chunks of a flat sequence of tags (roles and types), `first` and
    `last` marking each example's first and last position; a chunk is [start, stop).

    seqeval's rules (its default, non-strict mode): a chunk starts at B or S, at I or E after
    O, E or S (a stray I starts a phrase), and where the type changes; it ends after E or S,
    before B, S or O, and where the type changes.
    """
    prev_role = np.roll(role, 1)
    prev_kind = np.roll(kind, 1)
    prev_role[first] = OUT
    prev_kind[first] = _NO_TYPE
    tagged = role != OUT
    starts = (
        (role == BEGIN)
        | (role == SINGLE)
        | (np.isin(prev_role, (END, SINGLE, OUT)) & np.isin(role, (END, INSIDE)))
        | (tagged & (prev_kind != kind))
    )
    ends_before = (
        np.isin(prev_role, (END, SINGLE))
        | (np.isin(prev_role, (BEGIN, INSIDE)) & np.isin(role, (BEGIN, SINGLE, OUT)))
        | ((prev_role != OUT) & (prev_kind != kind))
    )
    ends_at = np.roll(ends_before, -1)  # a chunk ends at p when one ends before p + 1
    ends_at[last] = tagged[last]  # each example closed by an O
    start_positions, stop_positions = np.flatnonzero(starts), np.flatnonzero(ends_at) + 1
    assert len(start_positions) == len(stop_positions)
    return start_positions, stop_positions


def tag_spans(tags: Sequence[str]) -> list[tuple[int, int]]:
    """The [start, stop) spans of the keyphrases in one sequence of tag names (the rules of
    `chunks`).

    Example:
        >>> tag_spans(["B", "I", "O", "I", "B", "B-X", "I-Y"])
        [(0, 2), (3, 4), (4, 5), (5, 6), (6, 7)]
    """
    if not tags:
        return []
    names = sorted(set(tags))
    role, kind = _parse(names)
    ids = np.asarray([names.index(tag) for tag in tags], dtype=np.int64)
    first, last = np.zeros(len(ids), dtype=bool), np.zeros(len(ids), dtype=bool)
    first[0] = last[-1] = True
    starts, stops = chunks(role[ids], kind[ids], first, last)
    return list(zip(starts.tolist(), stops.tolist()))


def _check_references(references: Any) -> list[list[str]] | None:
    if references is None:
        return None
    references = check_corpus(references, "references")
    checked = []
    for index, row in enumerate(references):
        row = check_keyword_list(row, "references", index)
        for position, keyword in enumerate(row):
            check_keyword(keyword, "references", index, position)
        checked.append(list(row))
    return checked


def keyphrase_tagging_compute_metrics(
    tokenizer: Any,
    *,
    label_names: Any = None,
    references: Sequence[Sequence[str]] | None = None,
    family: str = "keyword_prf",
    texts: Sequence[str] | None = None,
    **options: Any,
) -> StateMetrics:
    """A Trainer `compute_metrics` for token-classification keyphrase models (BIO tags, or
    BIOES / BILOU where the tag names have E and S / L and U; typed tags such as B-KEY too).

    Each word is tagged at its first token (the positions whose label is not -100, as
    `DataCollatorForTokenClassification` and the usual label alignment give): the predicted
    tag is the argmax of the logits there, or the tag id itself when
    `preprocess_logits_for_metrics` returns `logits.argmax(-1)`. Tags are joined into
    keyphrases by seqeval's rules (a stray I, after O, starts a phrase; a change of type
    starts one), and each phrase's tokens (its words' first tokens and the unlabelled tokens
    after them) are decoded with `tokenizer`, so "##" pieces and "▁" words join as the
    tokenizer writes them. This needs the input ids:
    `TrainingArguments(include_for_metrics=["inputs"])`.

    Args:
        tokenizer: the model's tokenizer (`batch_decode`, `pad_token_id`).
        label_names: the tag names by id: `model.config.id2label`, the model (or its config)
            itself, or a list in id order (["O", "B", "I"]). Required: Trainer does not pass
            the model to compute_metrics.
        references: one gold keyphrase list per evaluation example, in order (gold
            keyphrases absent from the text count too); by default the gold phrases are the
            label tags' spans, decoded as the predictions are.
        family: the family scoring the phrases: keyword_prf (default), semantic_keyword_prf,
            sentiment_appropriateness or keyword_diversity.
        texts: the documents, in order, for `presence` (default: the decoded inputs).
        **options: the family's options (match, presence, confidence_level, ...), checked
            now against the registry.

    Returns:
        A function of Trainer's `EvalPrediction` (and `compute_result`, for
        `batch_eval_metrics=True`: see `StateMetrics`) returning the family's values.

    Example (the common setup):
        model = AutoModelForTokenClassification.from_pretrained(name, id2label={0: "O", 1: "B", 2: "I"},
                                                                label2id={"O": 0, "B": 1, "I": 2})
        args = TrainingArguments(..., include_for_metrics=["inputs"])
        compute_metrics = keyphrase_tagging_compute_metrics(tokenizer, label_names=model.config.id2label)
    """
    if label_names is None:
        raise ValueError(
            f"{HELPER} needs the tag names by id: label_names=model.config.id2label (or the model, or a list such as "
            "['O', 'B', 'I']); Trainer does not pass the model to compute_metrics"
        )
    names = tag_names(label_names)
    role_of, kind_of = _parse(names)
    if not np.isin(role_of, (BEGIN, SINGLE)).any():
        raise ValueError(f"label_names {list(names)!r} have no B (or S) tag: nothing would start a keyphrase")
    if family not in tagging_families():
        raise ValueError(f"family must be one of {tagging_families()} (families of keyphrases alone), got {family!r}")
    gold_lists = _check_references(references)
    if texts is not None:
        texts = check_corpus(texts, "texts")  # a generator: read once
        texts = check_texts(texts, len(texts), allow_none=True)
    pad_token_id = check_tokenizer(tokenizer)
    needs_texts = options.get("presence", "all") != "all"
    n_tags = len(names)

    def tags(values: Any, labelled: np.ndarray, name: str, start: int) -> np.ndarray:
        """The tag id at each labelled position (row-major), checked."""
        array = np.asarray(as_numpy(values))
        if array.ndim == 3:  # logits
            if array.shape[2] != n_tags:
                raise ValueError(f"{name} have {array.shape[2]} classes, label_names names {n_tags} tags")
            array = array[:, : labelled.shape[1]]
            if array.shape[:2] != labelled.shape:
                raise ValueError(f"{name} have shape {array.shape}, the labels {labelled.shape}")
            return array[labelled].argmax(axis=-1)
        integral = array.dtype.kind in "iu" or (array.dtype.kind == "f" and np.array_equal(array, np.round(array)))
        if array.ndim != 2 or not integral or array.shape[0] != labelled.shape[0] or array.shape[1] < labelled.shape[1]:
            raise ValueError(
                f"{name} must be logits (examples, tokens, tags) or tag ids (examples, tokens) matching the labels' "
                f"shape {labelled.shape}, got shape {array.shape}, dtype {array.dtype}"
            )
        found = array[:, : labelled.shape[1]][labelled].astype(np.int64)
        bad = (found < 0) | (found >= n_tags)
        if bad.any():
            row, column = (int(i) for i in np.argwhere(labelled)[np.argmax(bad)])
            raise ValueError(
                f"{name}: example {start + row}, token {column}: tag id {int(found[np.argmax(bad)])} is not one of the "
                f"{n_tags} tags of label_names {list(names)}"
            )
        return found

    def phrases(tag_ids: np.ndarray, labelled: np.ndarray, ids: np.ndarray) -> list[list[str]]:
        """Per example, the decoded keyphrases of its tags (one per labelled position)."""
        rows, columns = np.nonzero(labelled)
        n = len(labelled)
        first = np.ones(len(rows), dtype=bool)
        first[1:] = rows[1:] != rows[:-1]
        last = np.roll(first, -1)
        if len(last):
            last[-1] = True
        starts, stops = chunks(role_of[tag_ids], kind_of[tag_ids], first, last)
        next_column = np.where(last, ids.shape[1], np.roll(columns, -1))  # where each word's tokens end
        spans = [
            ids[rows[a], columns[a] : next_column[b - 1]].tolist() for a, b in zip(starts.tolist(), stops.tolist())
        ]
        decoded = tokenizer.batch_decode(spans, skip_special_tokens=True) if spans else []
        result: list[list[str]] = [[] for _ in range(n)]
        for row, text in zip(rows[starts].tolist(), decoded):
            if text.strip():
                result[row].append(text.strip())
        return result

    def convert(evaluated: Evaluated) -> dict[str, Any]:
        labels = token_ids(evaluated.labels, "label_ids")
        labelled = labels != -100
        ids = input_ids(evaluated.inputs, len(labels), HELPER)
        if ids.shape[1] < labels.shape[1]:
            raise ValueError(f"inputs have {ids.shape[1]} tokens per row, the labels {labels.shape[1]}")
        ids = np.where(ids < 0, pad_token_id, ids)
        predicted = phrases(tags(evaluated.predictions, labelled, "predictions", evaluated.start), labelled, ids)
        if gold_lists is not None:
            gold = window(gold_lists, "references", evaluated, len(labels))
        else:
            gold = phrases(tags(labels, labelled, "label_ids", evaluated.start), labelled, ids)
        documents = window(texts, "texts", evaluated, len(labels))
        if documents is None and needs_texts:
            documents = tokenizer.batch_decode(ids, skip_special_tokens=True)
        return {"predictions": predicted, "references": gold, "texts": documents}

    return StateMetrics(convert, [FamilyScore(family, options)])
