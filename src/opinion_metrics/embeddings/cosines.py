"""The cosine similarities of each example's own (prediction, gold keyword) pairs, and what
the semantic family reads from them: per prediction and per gold keyword the best
similarity, and the pairs at or above the threshold (one-to-one's candidate edges).

Examples are handled in blocks, never one by one: a block gathers the embeddings of its
examples' keywords into padded arrays (examples sorted by their numbers of gold keywords and
predictions, so padding stays small) and multiplies them, one small matrix product per
example in one call. A gold list shared by several examples (a movie's list, broadcast to its
reviews) is gathered once for all its examples instead. Blocks hold at most about
`block_elements` values (similarities and gathered embedding values; on the CPU fewer, to
stay in its caches) besides a shared list's own embeddings, whatever the input.

On the CPU the products are float64 (from the float32 embeddings), so a similarity does not
depend on the block it is computed in (to 1e-16). On a GPU (`device`, a torch device) they are
float32 on the device, and only the maxima and the edges come back. Either way, every
similarity within `near` (`NEAR` by default) of the threshold is recomputed by `exact` (by
default `exact_cosines`: float64, one pair at a time) before it is compared, so every decision
is the same on every path. (For embeddings made in half precision, the semantic family passes
a wider band and the cosines of the model's float32 embeddings, so that its decisions are
float32's.)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from ..core.matching import edge_counts
from ..core.preparation import PreparedCorpus, PreparedSide
from ..core.relations import Edges

NEAR = 1e-5  # similarities this close to the threshold are recomputed exactly
# (first string ids, second string ids) -> the pairs' float64 cosines
ExactCosines = Callable[[np.ndarray, np.ndarray], np.ndarray]
_SHARED_GAIN = 64  # gold vectors a shared list's block must save to be gathered once
_CPU_BLOCK_ELEMENTS = 1 << 19  # values of a block on the CPU (4 MiB of float64)


class PairCounts(NamedTuple):
    """Per example: matched predictions, matched gold keywords, soft precision and soft recall sums."""

    matched_predictions: np.ndarray
    matched_gold: np.ndarray
    soft_predictions: np.ndarray
    soft_gold: np.ndarray


def exact_cosines(matrix: np.ndarray, rows_of: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The similarities of the string pairs (`first[i]`, `second[i]`) (string ids; `matrix[rows_of[id]]`
    is string id's unit embedding): float64 cosines of one pair at a time (the dot product over
    both norms), in [-1, 1], and exactly 1 for equal strings or equal embeddings (two strings the
    model cannot tell apart, such as "café" and "cafe"; docs/definitions.md section 5)."""
    left = matrix[rows_of[first]].astype(np.float64)
    right = matrix[rows_of[second]].astype(np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", left, left) * np.einsum("ij,ij->i", right, right))
    similarity = np.einsum("ij,ij->i", left, right)
    np.divide(similarity, norms, out=similarity, where=norms > 0)
    np.clip(similarity, -1.0, 1.0, out=similarity)
    similarity[(first == second) | (left == right).all(axis=1)] = 1.0
    return similarity


def used_strings(corpus: PreparedCorpus) -> np.ndarray:
    """Per string of `corpus`: whether some example uses it (on either side)."""
    used = np.zeros(len(corpus.strings), dtype=bool)
    for side in (corpus.predictions, corpus.references):
        flat, offsets, groups = side.flat
        if groups is not None:  # only the lists some example has
            lists = np.unique(groups)
            sizes = offsets[lists + 1] - offsets[lists]
            starts = np.repeat(offsets[lists] - (np.cumsum(sizes) - sizes), sizes)
            flat = flat[starts + np.arange(len(starts))]
        used[flat] = True
    return used


def _size_class(sizes: np.ndarray) -> np.ndarray:
    """Sizes below 32 as they are, larger ones rounded up to a multiple of 1/16 of their power
    of two: a block padded to its class wastes at most 1/16."""
    shift = np.maximum(np.floor(np.log2(np.maximum(sizes, 1))).astype(np.int64) - 4, 0)
    return ((sizes + (1 << shift) - 1) >> shift) << shift


def _padded(flat: np.ndarray, offsets: np.ndarray, lists: np.ndarray, width: int) -> np.ndarray:
    """Lists `lists` of the ragged array (flat, offsets) as rows of `width` ids, -1 after their end."""
    starts, sizes = offsets[lists], offsets[lists + 1] - offsets[lists]
    positions = np.arange(width)
    taken = positions < sizes[:, None]
    rows = np.full((len(lists), width), -1, dtype=np.int64)
    rows[taken] = flat[(starts[:, None] + positions)[taken]]
    return rows


def _list_groups(flat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per list of the ragged array (flat, offsets): the number of the first list equal to it
    (the same ids in the same order), found among the lists of its size."""
    sizes = np.diff(offsets)
    groups = np.arange(len(sizes))
    for size in np.unique(sizes).tolist():
        lists = np.flatnonzero(sizes == size)
        if size and len(lists) > 1:
            rows = flat[offsets[lists][:, None] + np.arange(size)]
            _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
            groups[lists] = lists[first[inverse.reshape(-1)]]
    return groups


class _Similarities:
    """Padded similarity blocks on the CPU (numpy, float64) or on a torch `device` (float32);
    those within `near` of the threshold recomputed by `exact`."""

    def __init__(
        self,
        matrix: np.ndarray,
        rows_of: np.ndarray,
        threshold: float,
        device: Any = None,
        near: float = NEAR,
        exact: ExactCosines | None = None,
    ) -> None:
        self.matrix, self.rows_of, self.threshold, self.device, self.near = matrix, rows_of, threshold, device, near
        self.exact = exact or partial(exact_cosines, matrix, rows_of)
        self._buffers: dict[str, np.ndarray] = {}
        if device is not None:
            import torch

            # Only the embeddings of the strings used go to the device.
            used = np.flatnonzero(rows_of >= 0)
            compact = np.zeros(len(rows_of), dtype=np.int64)
            compact[used] = np.arange(len(used))
            self.compact_rows = torch.from_numpy(compact).to(device)
            self.vectors = torch.from_numpy(np.ascontiguousarray(matrix[rows_of[used]])).to(device)

    def shared(self, gold: np.ndarray) -> Any:
        """The embeddings of a gold list shared by the examples of several blocks, gathered once."""
        if self.device is None:
            return self.matrix[self.rows_of[gold]].astype(np.float64)
        return self.vectors[self.compact_rows[self._on_device(gold)]]

    def maxima(
        self, predicted: np.ndarray, gold: np.ndarray, edges: bool, shared: Any = None
    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...] | None]:
        """For a block of examples with prediction ids `predicted` (rows, -1 padded) and gold ids
        `gold` (rows, or one row shared by all, whose embeddings `shared` are): per prediction
        its best similarity, per gold keyword (and example) its best similarity (float64; -inf at
        padding), and, if `edges`, the (example, prediction, gold) positions of the pairs at or
        above the threshold."""
        if self.device is None:
            return self._maxima_numpy(predicted, gold, edges, shared)
        return self._maxima_torch(predicted, gold, edges, shared)

    def _on_device(self, array: np.ndarray) -> Any:
        import torch

        return torch.from_numpy(array).to(self.device)

    def _exact(self, predicted: np.ndarray, gold: np.ndarray, near: tuple[np.ndarray, ...]) -> np.ndarray:
        """`exact` of the pairs at positions `near` (example, prediction, gold)."""
        first = predicted[near[0], near[1]]
        second = gold[near[2]] if gold.ndim == 1 else gold[near[0], near[2]]
        return self.exact(first, second)

    def _buffer(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A reused array of `shape` (blocks reuse memory: a fresh array each block costs page faults)."""
        size = int(np.prod(shape))
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size:
            buffer = self._buffers[name] = np.empty(size, dtype=dtype)
        return buffer[:size].reshape(shape)

    def _gathered(self, name: str, ids: np.ndarray, filler: int) -> np.ndarray:
        """The float64 embeddings of string ids `ids` (`filler`'s at the padding, -1)."""
        rows = self.rows_of[np.where(ids >= 0, ids, filler)]
        single = self._buffer(name + "32", (*ids.shape, self.matrix.shape[1]), np.float32)
        np.take(self.matrix, rows, axis=0, out=single)
        double = self._buffer(name + "64", single.shape, np.float64)
        np.copyto(double, single)
        return double

    def _maxima_numpy(self, predicted, gold, edges, shared):
        gold_rows = gold[None, None, :] if gold.ndim == 1 else gold[:, None, :]
        valid = (predicted >= 0)[:, :, None] & (gold_rows >= 0)
        filler = int(predicted.max())  # any string of the block stands in for the padding
        vectors = self._gathered("predicted", predicted, filler)
        similarity = self._buffer("similarity", valid.shape, np.float64)
        if gold.ndim == 1:
            rows, width, dimension = vectors.shape
            np.matmul(vectors.reshape(-1, dimension), shared.T, out=similarity.reshape(rows * width, -1))
        else:
            gold_vectors = self._gathered("gold", gold, filler)
            np.matmul(vectors, gold_vectors.transpose(0, 2, 1), out=similarity)
        np.clip(similarity, -1.0, 1.0, out=similarity)
        similarity[valid & (predicted[:, :, None] == gold_rows)] = 1.0
        near = np.nonzero(valid & (np.abs(similarity - self.threshold) <= self.near))
        if len(near[0]):
            similarity[near] = self._exact(predicted, gold, near)
        similarity[~valid] = -np.inf
        above = np.nonzero(similarity >= self.threshold) if edges else None
        return similarity.max(axis=2), similarity.max(axis=1), above

    def _maxima_torch(self, predicted, gold, edges, shared):
        import torch

        predicted_ids, gold_ids = self._on_device(predicted), self._on_device(gold)
        gold_rows = gold_ids[None, None, :] if gold.ndim == 1 else gold_ids[:, None, :]
        valid = (predicted_ids >= 0)[:, :, None] & (gold_rows >= 0)
        filler = int(predicted.max())
        vectors = self.vectors[self.compact_rows[predicted_ids.where(predicted_ids >= 0, filler)]]
        if gold.ndim == 1:
            rows, width, dimension = vectors.shape
            products = (vectors.reshape(-1, dimension) @ shared.T).reshape(rows, width, len(gold))
        else:
            gold_vectors = self.vectors[self.compact_rows[gold_ids.where(gold_ids >= 0, filler)]]
            products = torch.bmm(vectors, gold_vectors.transpose(1, 2))
        similarity = products.double().clamp_(-1.0, 1.0)  # float32 products, compared in float64
        similarity[valid & (predicted_ids[:, :, None] == gold_rows)] = 1.0
        near = tuple(
            index.cpu().numpy()
            for index in torch.nonzero(valid & ((similarity - self.threshold).abs() <= self.near), as_tuple=True)
        )
        if len(near[0]):
            exact = torch.from_numpy(self._exact(predicted, gold, near)).to(self.device)
            similarity[tuple(torch.from_numpy(index).to(self.device) for index in near)] = exact
        similarity[~valid] = -torch.inf
        above = None
        if edges:
            above = tuple(index.cpu().numpy() for index in torch.nonzero(similarity >= self.threshold, as_tuple=True))
        return similarity.amax(dim=2).cpu().numpy(), similarity.amax(dim=1).cpu().numpy(), above


def pair_counts(
    corpus: PreparedCorpus,
    matrix: np.ndarray,
    rows_of: np.ndarray,
    threshold: float,
    one_to_one: bool,
    block_elements: int,
    device: Any = None,
    near: float = NEAR,
    exact: ExactCosines | None = None,
) -> PairCounts:
    """Per example of `corpus`: the counts and soft sums of docs/definitions.md section 5.

    `matrix[rows_of[i]]` is the unit embedding of `corpus.strings[i]` (every string the
    examples use). `device`: None for numpy on the CPU, else the torch device of the products.
    With `one_to_one`, both counts are the size of a maximum matching on the pairs at or above
    the threshold (`edge_counts`). A similarity within `near` of the threshold is replaced by
    `exact`'s value for its pair (default: `exact_cosines` of `matrix`).
    """
    n = len(corpus)
    counts = PairCounts(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n), np.zeros(n))
    predicted_flat, predicted_offsets, predicted_groups = corpus.predictions.flat
    if predicted_groups is not None:  # one list per example
        predicted_flat, predicted_offsets, _ = PreparedSide(corpus.predictions.ids).flat
    gold_flat, gold_offsets, gold_groups = corpus.references.flat
    if gold_groups is None:
        gold_groups = _list_groups(gold_flat, gold_offsets)
    prediction_sizes = np.diff(predicted_offsets)
    gold_sizes = np.diff(gold_offsets)[gold_groups]
    active = np.flatnonzero((prediction_sizes > 0) & (gold_sizes > 0))
    if not len(active):
        return counts
    similarities = _Similarities(matrix, rows_of, threshold, device, near, exact)
    dimension = matrix.shape[1]

    def add(examples: np.ndarray, predicted: np.ndarray, gold: np.ndarray, shared: Any = None) -> None:
        best_predictions, best_gold, above = similarities.maxima(predicted, gold, one_to_one, shared)
        counts.soft_predictions[examples] = np.maximum(best_predictions, 0.0).sum(axis=1)
        counts.soft_gold[examples] = np.maximum(best_gold, 0.0).sum(axis=1)
        if one_to_one:
            size, _ = edge_counts(Edges(*above), len(examples), True)
            counts.matched_predictions[examples] = counts.matched_gold[examples] = size
        else:
            counts.matched_predictions[examples] = (best_predictions >= threshold).sum(axis=1)
            counts.matched_gold[examples] = (best_gold >= threshold).sum(axis=1)

    # Gold lists shared by examples enough to pay for a block of their own.
    lists = gold_groups[active]
    members = np.bincount(lists, minlength=len(gold_offsets) - 1)
    list_sizes = np.diff(gold_offsets)
    shared = (members[lists] - 1) * list_sizes[lists] >= _SHARED_GAIN
    by_list = active[shared][np.lexsort((prediction_sizes[active[shared]], lists[shared]))]
    bounds = np.flatnonzero(np.diff(gold_groups[by_list])) + 1
    for examples in np.split(by_list, bounds) if len(by_list) else ():
        gold_list = int(gold_groups[examples[0]])
        gold = gold_flat[gold_offsets[gold_list] : gold_offsets[gold_list + 1]]
        shared_vectors = similarities.shared(gold)
        rows = block_rows(int(prediction_sizes[examples[-1]]), len(gold), False, dimension, block_elements)
        for start in range(0, len(examples), rows):
            block = examples[start : start + rows]
            width = int(prediction_sizes[block[-1]])  # sorted by it
            add(block, _padded(predicted_flat, predicted_offsets, block, width), gold, shared_vectors)

    # Every other example: padded by the classes of its list sizes.
    rest = active[~shared]
    width_classes = _size_class(prediction_sizes[rest])
    gold_classes = _size_class(gold_sizes[rest])
    order = np.lexsort((width_classes, gold_classes))
    rest, width_classes, gold_classes = rest[order], width_classes[order], gold_classes[order]
    change = (np.diff(width_classes) != 0) | (np.diff(gold_classes) != 0)
    if device is None:  # blocks of gathered embeddings that stay in the CPU's caches are faster
        block_elements = min(block_elements, _CPU_BLOCK_ELEMENTS)
    for run in np.split(np.arange(len(rest)), np.flatnonzero(change) + 1) if len(rest) else ():
        examples = rest[run]
        width, gold_width = int(prediction_sizes[examples].max()), int(gold_sizes[examples].max())
        rows = block_rows(width, gold_width, True, dimension, block_elements)
        for start in range(0, len(examples), rows):
            block = examples[start : start + rows]
            width, gold_width = int(prediction_sizes[block].max()), int(gold_sizes[block].max())
            predicted = _padded(predicted_flat, predicted_offsets, block, width)
            add(block, predicted, _padded(gold_flat, gold_offsets, gold_groups[block], gold_width))
    return counts


def near_pair_strings(
    corpus: PreparedCorpus,
    matrix: np.ndarray,
    rows_of: np.ndarray,
    threshold: float,
    block_elements: int,
    device: Any,
    near: float,
) -> np.ndarray:
    """The string ids of the pairs whose similarity is within `near` of the threshold: one pass
    of `pair_counts`, so that a costlier `exact` can prepare for all of them at once."""
    found = [np.zeros(0, dtype=np.int64)]

    def record(first: np.ndarray, second: np.ndarray) -> np.ndarray:
        found.extend((first, second))
        return exact_cosines(matrix, rows_of, first, second)

    pair_counts(corpus, matrix, rows_of, threshold, False, block_elements, device, near, record)
    return np.unique(np.concatenate(found))


def block_rows(width: int, gold_width: int, gold_gathered: bool, dimension: int, block_elements: int) -> int:
    """How many examples of `width` predictions and `gold_width` gold keywords a block holds
    within `block_elements` values (at least one): their similarities and their gathered
    prediction embeddings, and gold embeddings unless their list is shared (gathered once)."""
    per_example = width * gold_width + (width + (gold_width if gold_gathered else 0)) * dimension
    return max(1, block_elements // max(1, per_example))
