"""Embedding distinct keywords with a sentence-transformers model at the model's own speed.

A model made of the usual modules (Transformer, Pooling, optionally Normalize) is run without
`model.encode`: the keywords are tokenized at once (a BERT tokenizer tokenizes each distinct
word once and the keywords' tokens are put together from their words'; any other fast
tokenizer is called once for all), keywords are grouped by token count (no padding, so no
attention mask to apply), batches are sized in tokens, and the model's own Transformer and
Pooling modules run under `torch.inference_mode()`. The token ids are gathered into batches
and the embeddings normalized on the model's device; a GPU works through its queue while the
host prepares the next batch, and the embeddings come back once, at the end. In float32 the vectors equal
`model.encode(..., normalize_embeddings=True)` to 1e-6. Any other model (other modules, a
prompt, a processor that is not a fast tokenizer, an object with only `.encode`) is called
through `.encode`, in batches of keywords of one token count.

`precision="float16"` or `"bfloat16"` runs the Transformer in half precision (a copy cast at
its first use; the model itself is not changed); pooling and normalization stay in float32.
"""

from __future__ import annotations

import copy
import json
import operator
import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np

PRECISIONS = ("float32", "float16", "bfloat16")
# A batch of the module path holds at most batch_size x TOKENS_PER_KEYWORD tokens: batch_size
# keywords of 16 tokens, more of shorter ones (keywords are mostly 3-8 tokens with [CLS] and [SEP]).
TOKENS_PER_KEYWORD = 16
_EMBEDDED_AT_ONCE = 1 << 20  # keywords whose tokens and embeddings the device holds at once

# Half-precision copies of Transformer modules: module -> {dtype name: copy}, dropped with the module.
_CAST_COPIES: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def check_precision(precision: Any) -> str:
    """One of PRECISIONS: the floating-point format the model's transformer computes in."""
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {precision!r}")
    return precision


def module_path(model: Any) -> tuple[Any, Any] | None:
    """`(transformer, pooling)` when `model` is a SentenceTransformer whose modules are
    Transformer + Pooling (+ Normalize of the sentence embedding) and whose Transformer
    encodes plain text with a fast tokenizer and no prompt or processing options (what
    `embed_texts` reproduces); None for any other model."""
    try:
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.base.modules import Normalize, Transformer
        from sentence_transformers.sentence_transformer.modules import Pooling
    except ImportError:
        return None
    if not isinstance(model, SentenceTransformer) or len(model) not in (2, 3):
        return None
    transformer, pooling = model[0], model[1]
    if type(transformer) is not Transformer or type(pooling) is not Pooling:
        return None
    if len(model) == 3:
        normalize = model[2]
        if type(normalize) is not Normalize or not (
            normalize.module_input_name == normalize.module_output_name == "sentence_embedding"
        ):
            return None
    modalities = getattr(transformer, "modality_config", None)
    tokenizer = getattr(transformer, "tokenizer", None)
    plain = (
        isinstance(modalities, Mapping)
        and list(modalities) == ["text"]
        and modalities["text"].get("method") == "forward"
        and getattr(transformer, "transformer_task", None) == "feature-extraction"
        and getattr(transformer, "backend", None) == "torch"
        and getattr(transformer, "module_output_name", None) == "token_embeddings"
        and getattr(transformer, "query_expansion", None) is None
        and not getattr(transformer, "processing_kwargs", None)
        and getattr(transformer, "processor", None) is tokenizer
        and getattr(tokenizer, "is_fast", False)
        and getattr(model, "default_prompt_name", None) is None
        and getattr(model, "truncate_dim", None) is None
        and getattr(model, "_distributed_inference", None) is None
    )
    return (transformer, pooling) if plain else None


def _in_precision(transformer: Any, precision: str) -> Any:
    """The Transformer module itself (float32) or its cached copy cast to `precision`."""
    if precision == "float32":
        return transformer
    copies = _CAST_COPIES.setdefault(transformer, {})
    if precision not in copies:
        import torch

        copies[precision] = copy.deepcopy(transformer).to(getattr(torch, precision)).eval()
    return copies[precision]


def _token_arrays(tokenizer: Any, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Every text tokenized as the Transformer module tokenizes it (without padding):
    `(flat token ids, offsets, flat token type ids or None)`; by words (`_composed_tokens`)
    where the tokenizer allows it, else in one call."""
    composed = _composed_tokens(tokenizer, texts)
    if composed is not None:
        return composed
    encoding = tokenizer(list(texts), truncation="longest_first", return_attention_mask=False)
    ids = encoding["input_ids"]
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(offsets[-1]))
    types = encoding.get("token_type_ids")
    flat_types = None
    if types is not None:
        flat_types = np.fromiter(chain.from_iterable(types), dtype=np.int64, count=int(offsets[-1]))
    return flat, offsets, flat_types


# Texts a split at single spaces does not cut into the tokenizer's words: other white space,
# two spaces in a row, a space at either end.
_NOT_SPACE_SEPARATED = re.compile(r"[^\S ]| {2}|^ | $")
_CHECKED_TEXTS = 256  # texts tokenized both ways before a composition is used
_WORD_TOKENIZERS: weakref.WeakKeyDictionary[Any, tuple[int, int, Any] | None] = weakref.WeakKeyDictionary()


def _word_tokenizer(tokenizer: Any) -> tuple[int, int, Any] | None:
    """`(id of [CLS], id of [SEP], a copy of the Rust tokenizer without padding or truncation)`
    when `tokenizer` is a BERT WordPiece tokenizer, whose ids of a text are [CLS], the ids of
    each of its space-separated words tokenized alone, [SEP]: a normalizer that reads
    characters one at a time, the BERT pre-tokenizer (words split at white space, then at
    punctuation), "[CLS] $A [SEP]" around one sequence (token type 0), no added token holding
    a space; None for any other."""
    if tokenizer in _WORD_TOKENIZERS:
        return _WORD_TOKENIZERS[tokenizer]
    found = None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    state = json.loads(backend.to_str()) if backend is not None else {}
    processor = state.get("post_processor") or {}
    single = [
        (kind, item.get("id"), item.get("type_id"))
        for part in processor.get("single", [])
        for kind, item in part.items()
    ]
    if (
        (state.get("model") or {}).get("type") == "WordPiece"
        and (state.get("normalizer") or {"type": "BertNormalizer"}).get("type") == "BertNormalizer"
        and (state.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
        and processor.get("type") == "TemplateProcessing"
        and [(kind, type_id) for kind, _, type_id in single]
        == [("SpecialToken", 0), ("Sequence", 0), ("SpecialToken", 0)]
        and not any(any(c.isspace() for c in token["content"]) for token in state.get("added_tokens", []))
    ):
        first, last = (processor["special_tokens"].get(single[i][1], {}).get("ids", []) for i in (0, 2))
        if len(first) == len(last) == 1:
            words = copy.deepcopy(backend)  # the wrapper sets padding and truncation on its own at each call
            words.no_padding()
            words.no_truncation()
            found = (first[0], last[0], words)
    _WORD_TOKENIZERS[tokenizer] = found
    return found


def _composed_tokens(tokenizer: Any, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """The token arrays of `_token_arrays` built from each distinct word tokenized once (a
    keyword corpus has far fewer distinct words than keywords), when `_word_tokenizer` accepts
    the tokenizer and the texts are words separated by single spaces; None otherwise, or when
    a sample of the texts tokenized both ways differs."""
    accepted = _word_tokenizer(tokenizer)
    joined = " ".join(texts)
    if accepted is None or _NOT_SPACE_SEPARATED.search(joined):  # (an empty text: two spaces in a row)
        return None
    first, last, word_tokenizer = accepted
    every_word = joined.split(" ")
    words = list(dict.fromkeys(every_word))
    word_ids = np.fromiter(
        map(dict(zip(words, range(len(words)))).__getitem__, every_word), dtype=np.int64, count=len(every_word)
    )
    counts = np.fromiter(map(operator.methodcaller("count", " "), texts), dtype=np.int64, count=len(texts)) + 1
    pieces = [encoding.ids for encoding in word_tokenizer.encode_batch(words, add_special_tokens=False)]
    piece_lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    piece_starts = np.cumsum(piece_lengths) - piece_lengths
    piece_flat = np.fromiter(chain.from_iterable(pieces), dtype=np.int64, count=int(piece_lengths.sum()))
    # Each text's words' pieces, one after the other, then cut to the model's length.
    sizes = piece_lengths[word_ids]
    owner = np.repeat(np.repeat(np.arange(len(texts)), counts), sizes)
    within_word = np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    content = piece_flat[np.repeat(piece_starts[word_ids], sizes) + within_word]
    content_lengths = np.bincount(owner, minlength=len(texts))
    position = np.arange(len(owner)) - np.repeat(np.cumsum(content_lengths) - content_lengths, content_lengths)
    kept = max(0, min(int(getattr(tokenizer, "model_max_length", 1 << 62)), 1 << 62) - 2)
    lengths = np.minimum(content_lengths, kept) + 2
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.empty(int(offsets[-1]), dtype=np.int64)
    flat[offsets[:-1]] = first
    flat[offsets[1:] - 1] = last
    inside = position < kept
    flat[offsets[owner[inside]] + 1 + position[inside]] = content[inside]
    checked = np.linspace(0, len(texts) - 1, min(len(texts), _CHECKED_TEXTS)).astype(np.int64)
    expected = tokenizer([texts[i] for i in checked], truncation="longest_first", return_attention_mask=False)
    for index, ids in zip(checked.tolist(), expected["input_ids"]):
        if flat[offsets[index] : offsets[index + 1]].tolist() != ids:
            return None
    types = np.zeros(len(flat), dtype=np.int64) if "token_type_ids" in tokenizer.model_input_names else None
    return flat, offsets, types


def length_batches(lengths: np.ndarray, tokens_per_batch: int) -> list[np.ndarray]:
    """Indices of equal-length rows, in batches of at most `tokens_per_batch` tokens (at least
    one row), shortest rows first."""
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[order]
    bounds = np.flatnonzero(np.diff(sorted_lengths)) + 1
    batches = []
    for run in np.split(order, bounds):
        if len(run):
            rows = max(1, tokens_per_batch // max(1, int(lengths[run[0]])))
            batches.extend(run[start : start + rows] for start in range(0, len(run), rows))
    return batches


def embed_with_modules(
    model: Any,
    texts: Sequence[str],
    *,
    batch_size: int,
    precision: str = "float32",
    progress: Callable[[int], Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """`(unit float32 embeddings, norms before normalization)` of `texts` through the modules
    of `model` (`module_path` must accept it), on the model's device."""
    import torch

    transformer, pooling = module_path(model)
    module = _in_precision(transformer, precision)
    device = next(transformer.parameters()).device
    flat, offsets, flat_types = _token_arrays(transformer.tokenizer, texts)
    lengths = np.diff(offsets)
    with torch.inference_mode():
        flat_on_device = torch.from_numpy(flat).to(device)
        types_on_device = None if flat_types is None else torch.from_numpy(flat_types).to(device)
        starts_on_device = torch.from_numpy(offsets[:-1]).to(device)
        vectors = norms = None
        for rows in length_batches(lengths, batch_size * TOKENS_PER_KEYWORD):
            rows_on_device = torch.from_numpy(rows).to(device)
            positions = starts_on_device[rows_on_device, None] + torch.arange(int(lengths[rows[0]]), device=device)
            input_ids = flat_on_device[positions]
            features = {"input_ids": input_ids}  # no padding: no attention mask (pooling takes ones)
            if types_on_device is not None:
                features["token_type_ids"] = types_on_device[positions]
            features = module(features)
            features["token_embeddings"] = features["token_embeddings"].float()
            pooled = pooling(features)["sentence_embedding"].float()
            if vectors is None:
                vectors = torch.empty((len(texts), pooled.shape[1]), dtype=torch.float32, device=device)
                norms = torch.empty(len(texts), dtype=torch.float32, device=device)
            row_norms = torch.linalg.vector_norm(pooled, dim=1)
            vectors[rows_on_device] = pooled / row_norms[:, None]
            norms[rows_on_device] = row_norms
            if progress is not None:
                progress(len(rows))
        if vectors is None:
            return np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.float32)
        return vectors.cpu().numpy(), norms.cpu().numpy()


def _autocast(model: Any, precision: str) -> Any:
    """A context in which a torch model's `.encode` computes in `precision` (nothing for
    float32, or for an object that is not a torch module)."""
    import contextlib

    if precision == "float32":
        return contextlib.nullcontext()
    try:
        import torch
    except ImportError:
        return contextlib.nullcontext()
    if not isinstance(model, torch.nn.Module):
        return contextlib.nullcontext()
    device = next(model.parameters(), torch.empty(0)).device
    return torch.autocast(device_type=device.type, dtype=getattr(torch, precision))


class EmbeddingError(ValueError):
    """A prepared keyword (`text`) cannot be embedded, or the model returned a zero or
    non-finite embedding for it; `reason` says which."""

    def __init__(self, text: str, reason: str) -> None:
        self.text, self.reason = text, reason
        super().__init__(f"the keyword {text!r}: {reason}")


def padding_free_batches(model: Any, texts: Sequence[str], batch_size: int) -> list[list[int]]:
    """Indices of `texts` in batches of at most `batch_size` whose texts have the same token count.

    For models called through `.encode`: it pads every batch to its longest text (it sorts
    by characters, not tokens), and keywords are a few tokens long, so batches of equal token
    count waste none of the compute. Models that do not expose a Hugging Face tokenizer get
    plain batches.
    """
    groups = [list(range(len(texts)))]
    tokenizer = getattr(model, "tokenizer", None)
    if callable(tokenizer):
        max_length = getattr(model, "max_seq_length", None)
        encoding = tokenizer(
            list(texts),
            truncation=max_length is not None,
            max_length=max_length,
            return_attention_mask=False,  # only the token counts are needed
            return_token_type_ids=False,
        )
        if isinstance(encoding, Mapping) and "input_ids" in encoding:
            by_length: dict[int, list[int]] = {}
            for index, token_ids in enumerate(encoding["input_ids"]):
                by_length.setdefault(len(token_ids), []).append(index)
            groups = list(by_length.values())
    return [group[start : start + batch_size] for group in groups for start in range(0, len(group), batch_size)]


def _encode_in_batches(
    model: Any, texts: Sequence[str], batch_size: int, precision: str, progress: Callable[[int], Any]
) -> np.ndarray:
    """`model.encode` of `texts` (float32, one row each) in `padding_free_batches`."""
    vectors = None
    with _autocast(model, precision):
        for batch in padding_free_batches(model, texts, batch_size):
            encoded = model.encode(
                [texts[i] for i in batch],
                batch_size=len(batch),
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            encoded = np.asarray(encoded, dtype=np.float32)
            if encoded.ndim != 2 or len(encoded) != len(batch):
                raise ValueError(f"the model returned embeddings of shape {encoded.shape} for {len(batch)} texts")
            if vectors is None:
                vectors = np.empty((len(texts), encoded.shape[1]), dtype=np.float32)
            vectors[batch] = encoded
            progress(len(batch))
    return vectors


_NORMALIZED_ROWS = 1 << 12  # rows normalized at once through float64 by `unit_rows`


_UNIT = 1e-6  # a row whose norm is this close to 1 is unit length already (float32 rounding)


def unit_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(vectors scaled to unit length in float32, their float64 norms)`, through float64 in
    blocks (a float32 norm can overflow; the whole matrix in float64 would double the memory).
    Rows of unit length already are kept as they are, so that vectors made by this module
    and looked up again (an engine's precomputed embeddings) do not change."""
    norms = np.empty(len(vectors), dtype=np.float64)
    unit = np.empty_like(vectors, dtype=np.float32)
    for start in range(0, len(vectors), _NORMALIZED_ROWS):
        block = vectors[start : start + _NORMALIZED_ROWS].astype(np.float64)
        block_norms = np.linalg.norm(block, axis=1)
        norms[start : start + len(block)] = block_norms
        scale = np.where(np.abs(block_norms - 1.0) <= _UNIT, 1.0, block_norms)
        with np.errstate(divide="ignore", invalid="ignore"):
            unit[start : start + len(block)] = block / scale[:, None]
    return unit, norms


def embed_vectors(
    model: Any,
    texts: Sequence[str],
    *,
    batch_size: int = 256,
    precision: str = "float32",
    show_progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """`(unit-length float32 embeddings, their norms before normalization)` of `texts`
    (distinct, non-empty), one row each: through the model's own modules where `module_path`
    accepts the model, else through `.encode`. A zero or non-finite embedding's row is not a
    unit vector: its norm says why."""
    from tqdm.auto import tqdm

    precision = check_precision(precision)
    if not texts:
        return np.zeros((0, 0), dtype=np.float32), np.zeros(0)
    with tqdm(total=len(texts), desc="encoding keywords", unit="keyword", disable=not show_progress) as bar:
        if module_path(model) is None:
            return unit_rows(_encode_in_batches(model, texts, batch_size, precision, bar.update))
        parts = [  # in parts, so that the device holds one part's tokens and embeddings
            embed_with_modules(
                model,
                texts[start : start + _EMBEDDED_AT_ONCE],
                batch_size=batch_size,
                precision=precision,
                progress=bar.update,
            )
            for start in range(0, len(texts), _EMBEDDED_AT_ONCE)
        ]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([vectors for vectors, _ in parts]), np.concatenate([norms for _, norms in parts])


def embed_texts(
    model: Any,
    texts: Sequence[str],
    *,
    batch_size: int = 256,
    precision: str = "float32",
    show_progress: bool = False,
) -> np.ndarray:
    """The unit-length float32 embeddings of `embed_vectors`; `EmbeddingError` for the first
    text whose embedding is zero or not finite."""
    vectors, norms = embed_vectors(
        model, texts, batch_size=batch_size, precision=precision, show_progress=show_progress
    )
    bad = ~np.isfinite(norms) | (norms == 0)
    if bad.any():
        first = int(np.argmax(bad))
        kind = "a zero" if norms[first] == 0 else "a non-finite"
        raise EmbeddingError(
            texts[first], f"the model returned {kind} embedding; cosine similarity needs a finite, non-zero vector"
        )
    return vectors
