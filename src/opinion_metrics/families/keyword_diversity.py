"""Keyword diversity: a reference-free measurement of one system's predictions (docs/definitions.md section 10).

Keywords are prepared as in section 1 except that duplicates are kept (they are what the
ratios count). Each distinct normalized keyword is embedded once, through the semantic
family's encoder and its (model, text) cache; per example, the mean cosine over pairs of its
distinct keywords comes from the sum of their unit vectors (no Gram matrix).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.normalization import NormalizeOption, make_normalizer, plain_keywords
from ..core.preparation import Vocabulary
from ..core.validation import (
    check_corpus,
    check_device,
    check_flag,
    check_interval_options,
    check_keyword,
    check_keyword_list,
    check_positive_int,
    check_same_length,
    check_zero_division,
)
from ..embeddings.encoder import DEFAULT_BLOCK_ELEMENTS, KeywordEncoder, name_keyword
from ..embeddings.forward import EmbeddingError, check_precision
from ..stats.resampling import RandomState
from .averaging import Values, optional_mean_statistics, optional_mean_values, summarize

DIVERSITY_NAMES = ("unique_keyword_ratio", "unique_token_ratio", "self_similarity")  # the returned keys


def _prepare_keeping_duplicates(predictions: Sequence[Any], vocabulary: Vocabulary) -> list[list[int]]:
    """Per example, the ids of its non-empty normalized keywords, duplicates kept, in order."""
    known, intern = vocabulary.known_id, vocabulary.intern
    prepared = []
    for index, raw_list in enumerate(predictions):  # iteration: positional for a pandas Series
        if type(raw_list) is not list:
            raw_list = check_keyword_list(raw_list, "predictions", index)
        raw_list, all_str = plain_keywords(raw_list)  # a str subclass by its value, before any lookup
        ids = [known(raw) for raw in raw_list] if all_str else [None]
        if None in ids:  # new keywords, or not strings
            ids = []
            for position, raw in enumerate(raw_list):
                check_keyword(raw, "predictions", index, position)
                ids.append(intern(raw))
        prepared.append([i for i in ids if i >= 0])
    return prepared


def _embeddings(strings: list[str], used: list[int], encoder: KeywordEncoder) -> np.ndarray:
    """Unit-length float32 embeddings of `strings[i]` for i in `used` (row i; others zero).

    The encoder names a keyword whose embedding is zero or not finite (a ValueError).
    """
    vectors = encoder.encode([strings[i] for i in used])
    embeddings = np.zeros((len(strings), vectors.shape[1]), dtype=np.float32)
    embeddings[used] = vectors
    return embeddings


def _self_similarities(
    distinct: list[list[int]], embeddings: np.ndarray, block_elements: int = DEFAULT_BLOCK_ELEMENTS
) -> list[float | None]:
    """Per example, the mean cosine over pairs i < j of its distinct keywords (None if < 2).

    No Gram matrix: with s the sum of an example's n unit vectors, the pairs' cosines sum to
    (||s||^2 - sum of ||u_i||^2) / 2, so memory is linear in the number of keywords. Distinct
    keywords are distinct strings, so no pair is equal strings (S = 1 in docs/definitions.md section 5). In
    float64, the embeddings made unit length again there (the model's float32 or half
    precision ones are off by their rounding), the mean kept in [-1, 1] as every cosine is
    (as the semantic family keeps its similarities), in blocks of examples whose stacked
    embeddings hold at most `block_elements` values (an example larger than that is one block).
    """
    values: list[float | None] = [None] * len(distinct)
    members = [index for index, ids in enumerate(distinct) if len(ids) >= 2]
    slots_per_block = max(1, block_elements // max(1, embeddings.shape[1]))
    start = 0
    while start < len(members):
        block, slots = [], 0
        while start < len(members) and (not block or slots + len(distinct[members[start]]) <= slots_per_block):
            block.append(members[start])
            slots += len(distinct[members[start]])
            start += 1
        sizes = np.asarray([len(distinct[index]) for index in block], dtype=np.float64)
        offsets = np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.int64)
        vectors = embeddings[np.concatenate([distinct[index] for index in block])].astype(np.float64)
        vectors /= np.sqrt(np.einsum("ij,ij->i", vectors, vectors))[:, None]  # (never zero: the encoder checks)
        sums = np.add.reduceat(vectors, offsets, axis=0)  # (examples, dim)
        squared_norms = np.add.reduceat(np.einsum("ij,ij->i", vectors, vectors), offsets)
        means = (np.einsum("ij,ij->i", sums, sums) - squared_norms) / (sizes * (sizes - 1))
        np.clip(means, -1.0, 1.0, out=means)
        for index, value in zip(block, means.tolist()):
            values[index] = value
    return values


def diversity_reducer(options: Mapping[str, Any]) -> Values:
    """Column sums of `diversity_statistics` -> its means under `options` (zero_division;
    `self_similarity` only with a model)."""
    names = list(DIVERSITY_NAMES if options.get("model") is not None else DIVERSITY_NAMES[:2])
    return optional_mean_values(names, check_zero_division(options["zero_division"]))


def diversity_statistics(
    predictions: Sequence[Sequence[str]],
    *,
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    model: Any = None,
    device: str | None = None,
    batch_size: int = 256,
    precision: str = "float32",
    zero_division: float = 0.0,
) -> tuple[np.ndarray, Values, dict[str, list[float | None]]]:
    """Per-example statistics of `keyword_diversity` (docs/definitions.md section 11): `(statistics,
    values, per_example)`, the statistics as `optional_mean_statistics` builds them."""
    zero_division = check_zero_division(zero_division)
    batch_size = check_positive_int(batch_size, "batch_size")
    device = check_device(device)  # also without a model: a wrong value is a mistake worth naming
    precision = check_precision(precision)
    encoder = (
        None if model is None else KeywordEncoder(model, device=device, batch_size=batch_size, precision=precision)
    )
    predictions = check_corpus(predictions, "predictions")
    check_same_length(predictions=predictions)
    vocabulary = Vocabulary(make_normalizer(normalize, stemmer))
    prepared = _prepare_keeping_duplicates(predictions, vocabulary)
    tokens_of = [string.split() for string in vocabulary.strings]

    keyword_ratio: list[float | None] = []
    token_ratio: list[float | None] = []
    distinct: list[list[int]] = []
    for ids in prepared:
        unique = list(dict.fromkeys(ids))
        distinct.append(unique)
        tokens = [token for i in ids for token in tokens_of[i]]
        keyword_ratio.append(len(unique) / len(ids) if ids else None)
        # A custom normalizer can return white space only: a keyword without tokens.
        token_ratio.append(len(set(tokens)) / len(tokens) if tokens else None)
    per_example: dict[str, list[float | None]] = dict(zip(DIVERSITY_NAMES, (keyword_ratio, token_ratio)))
    if encoder is not None:
        used = sorted({i for ids in distinct if len(ids) >= 2 for i in ids})
        try:
            embeddings = _embeddings(vocabulary.strings, used, encoder) if used else np.zeros((0, 0))
        except EmbeddingError as error:
            raise name_keyword(error, make_normalizer(normalize, stemmer), predictions=predictions) from None
        per_example[DIVERSITY_NAMES[2]] = _self_similarities(distinct, embeddings)
    values = diversity_reducer({"model": encoder, "zero_division": zero_division})
    return optional_mean_statistics(per_example), values, per_example


def keyword_diversity(
    predictions: Sequence[Sequence[str]],
    *,
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    model: Any = None,
    device: str | None = None,
    batch_size: int = 256,
    precision: str = "float32",
    zero_division: float = 0.0,
    confidence_level: float | None = None,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
    bootstrap: str = "multinomial",
    return_per_example: bool = False,
) -> dict[str, Any]:
    """How diverse each example's predicted keywords are (no references needed).

    Args:
        predictions: per example, the predicted keywords.
        normalize, stemmer: keyword preparation as in `keyword_prf`; empty keywords are
            dropped, duplicates are kept.
        model: None (no `self_similarity`), a sentence-transformers model name or path,
            or a model object with `.encode` (as in `semantic_keyword_prf`; same cache).
        device, batch_size, precision: for the model, as in `semantic_keyword_prf`.
        zero_division: the value when no example has a keyword (for `self_similarity`:
            none has two distinct keywords), in [0, 1].
        confidence_level, n_resamples, random_state, bootstrap: bootstrap intervals over examples,
            as in `keyword_prf` (docs/definitions.md section 11).
        return_per_example: also return `per_example`, a dict of per-example lists (None
            for an example left out of a mean).

    Returns:
        `unique_keyword_ratio` (distinct keywords / keywords), `unique_token_ratio`
        (distinct white-space tokens / tokens) and, with a model, `self_similarity` (mean
        cosine over pairs of distinct keywords; lower is more diverse), each the mean over
        examples with at least one keyword (two distinct keywords for `self_similarity`).

    Example:
        >>> keyword_diversity([["Star Wars", "star wars!", "space opera", "space"], []])
        {'unique_keyword_ratio': 0.75, 'unique_token_ratio': 0.5714285714285714}
    """
    intervals = check_interval_options(confidence_level, n_resamples, random_state, bootstrap)
    return_per_example = check_flag(return_per_example, "return_per_example")
    statistics, values, per_example = diversity_statistics(
        predictions,
        normalize=normalize,
        stemmer=stemmer,
        model=model,
        device=device,
        batch_size=batch_size,
        precision=precision,
        zero_division=zero_division,
    )
    result: dict[str, Any] = summarize(statistics, values, **intervals)
    if return_per_example:
        result["per_example"] = per_example
    return result
