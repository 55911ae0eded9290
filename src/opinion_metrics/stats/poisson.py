"""Counter-based Poisson(1) bootstrap weights and swap signs (docs/definitions.md section 12).

Resample `r` gives the example with key `k` the weight `w(r, k) ~ Poisson(1)` and the swap
sign `s(r, k)` (1 with probability 1/2), both read from one 64-bit word
`splitmix64(mix(random_state, k) ^ mix(random_state, r))`: its top 53 bits are a uniform
number turned into a weight by the inverse CDF of Poisson(1), its lowest bit is the swap
sign. Nothing but `(random_state, r, key)` enters, so the same key gets the same weights in
whatever batch, process or machine it is processed, and the sums over examples are
independent of how examples are split and merged.

Keys are 64-bit words: an integer key is used as given (two's complement for negative ones),
so position keys 0..n-1 equal a user id column 0..n-1; a string key is hashed from its UTF-8
bytes (stable across processes, unlike Python's `hash`), vectorized over a whole column.
"""

from __future__ import annotations

import functools
import math
import numbers
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..core.validation import describe

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_MASK = 2**64 - 1
_KEY_SALT = 0x6B65795F73616C74  # separate streams for keys, resamples, string positions, lengths
_RESAMPLE_SALT = 0x726573616D706C65
_POSITION_SALT = 0x706F736974696F6E
_LENGTH_SALT = 0x6C656E6774687321
_KEYLESS_SALT = 0x6B65796C65737321
# Cells of the (resamples x examples) weight matrix drawn at once (2 MiB as uint64: the
# passes over it stay in the CPU cache).
BLOCK_ELEMENTS = 2**18
_LITTLE_ENDIAN = sys.byteorder == "little"


def _poisson_cdf() -> np.ndarray:
    """P(W <= k) for W ~ Poisson(1), k = 0, 1, ... until it reaches 1 in float64."""
    terms, k = [math.exp(-1.0)], 0
    while math.fsum(terms) < 1.0 and k < 40:
        k += 1
        terms.append(terms[-1] / k)
    return np.array([math.fsum(terms[: j + 1]) for j in range(len(terms))])


POISSON_CDF = _poisson_cdf()


def _weight_table(bits: int = 16) -> np.ndarray:
    """The weight of every word by its top `bits` bits, 255 where the CDF crosses the cell
    (those few words are looked up exactly)."""
    cells = np.arange(2**bits, dtype=np.float64)
    low = np.searchsorted(POISSON_CDF, cells * 2.0**-bits, side="right")
    high = np.searchsorted(POISSON_CDF, (cells + 1) * 2.0**-bits - 2.0**-53, side="right")
    return np.where(low == high, low, 255).astype(np.uint8)


_WEIGHT_TABLE = _weight_table()


def _mix_in_place(z: np.ndarray) -> np.ndarray:
    shifted = np.empty_like(z)
    z += _GOLDEN
    for shift, multiplier in ((30, _MIX_1), (27, _MIX_2)):
        np.right_shift(z, np.uint64(shift), out=shifted)
        z ^= shifted
        z *= multiplier
    np.right_shift(z, np.uint64(31), out=shifted)
    z ^= shifted
    return z


def splitmix64(words: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer of each uint64 word (a bijection that mixes every bit)."""
    return _mix_in_place(np.array(words, dtype=np.uint64))


def _word(value: int) -> np.ndarray:
    return np.asarray(value & _MASK, dtype=np.uint64)


def seed_word(random_state: int) -> int:
    """A non-negative integer seed folded into one 64-bit word (seeds >= 2**64 included)."""
    word = 0
    while True:
        word = int(splitmix64(_word(word ^ (random_state & _MASK))))
        random_state >>= 64
        if not random_state:
            return word


def _string_hashes(array: Any) -> np.ndarray:
    """uint64 hashes of an Arrow large_string array (no nulls): `_byte_hashes` of its buffers."""
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    buffer = array.buffers()[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    return _byte_hashes(offsets, data)


def _utf8_hashes(values: list[str], name: str) -> np.ndarray:
    """`_byte_hashes` of Python strings' UTF-8 bytes (the same words as their Arrow column)."""
    try:
        encoded = [str.encode(value, "utf-8") for value in values]  # (a str subclass's own encode is not asked)
    except UnicodeEncodeError:
        index = next(i for i, value in enumerate(values) if str.encode(value, "utf-8", "ignore").decode() != value)
        raise ValueError(
            f"{name}: example {index} is not valid Unicode (a lone surrogate): {values[index]!r}"
        ) from None
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return _byte_hashes(offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8))


def _byte_hashes(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """uint64 hashes of the byte strings `data[offsets[i]:offsets[i + 1]]`, vectorized over
    their bytes: the sum of (byte + 1) x mix(position), then mixed with the length."""
    first, last = int(offsets[0]), int(offsets[-1])
    data = data[first:last]
    lengths = np.diff(offsets)
    starts = offsets[:-1] - first
    positions = np.arange(last - first, dtype=np.int64) - np.repeat(starts, lengths)
    with np.errstate(over="ignore"):
        multipliers = splitmix64(positions.astype(np.uint64) ^ _word(_POSITION_SALT))
        terms = (data.astype(np.uint64) + np.uint64(1)) * multipliers
        sums = np.zeros(len(lengths), dtype=np.uint64)
        filled = lengths > 0
        if filled.any():
            sums[filled] = np.add.reduceat(terms, starts[filled])
    return splitmix64(sums ^ splitmix64(lengths.astype(np.uint64) ^ _word(_LENGTH_SALT)))


def _first_not(values: list[Any], kind: type | tuple[type, ...], name: str) -> None:
    for index, value in enumerate(values):
        if value is None or isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"{name}: example {index} must be an int or a str like the others, got {describe(value)}")


def key_hashes(keys: Any, name: str = "keys") -> np.ndarray:
    """One uint64 word per key: integers as given, strings hashed from their UTF-8 bytes.

    `keys` is a sequence of ints or of strs (not mixed), a numpy array, or an Arrow array.
    """
    if type(keys).__module__.split(".")[0] == "pyarrow":  # pyarrow is not a core dependency
        return _arrow_key_hashes(keys, name)
    if isinstance(keys, range) and -(2**63) <= min(keys, default=0) <= max(keys, default=0) < 2**63:  # --workers
        return np.arange(keys.start, keys.stop, keys.step, dtype=np.int64).view(np.uint64)
    if not isinstance(keys, (list, tuple)) and hasattr(keys, "__array__"):  # numpy, pandas
        keys = np.asarray(keys)
    if isinstance(keys, np.ndarray):
        if keys.dtype.kind in "iu":
            return keys.astype(np.int64 if keys.dtype.kind == "i" else np.uint64).reshape(-1).view(np.uint64)
        keys = keys.tolist()
    values = list(keys)
    if not values:
        return np.zeros(0, dtype=np.uint64)
    if isinstance(values[0], str):
        _first_not(values, str, name)
        return _utf8_hashes(values, name)
    try:
        array = np.array(values)
    except OverflowError:  # beyond int64
        array = np.array(values, dtype=object)
    if array.dtype.kind in "iu":
        return array.astype(np.int64 if array.dtype.kind == "i" else np.uint64).view(np.uint64)
    _first_not(values, numbers.Integral, name)
    try:
        return np.array(
            [int(value) & _MASK if -(2**63) <= value < 2**64 else None for value in values], dtype=np.uint64
        )
    except TypeError:
        raise ValueError(f"{name}: integer keys must fit in 64 bits") from None


def _arrow_key_hashes(keys: Any, name: str) -> np.ndarray:
    """`key_hashes` of an Arrow array or chunked array of integers or strings, dictionary-encoded
    or not (a Parquet column read with `read_dictionary`, polars' Categorical)."""
    import pyarrow as pa

    if isinstance(keys, (pa.Array, pa.ChunkedArray)) and pa.types.is_dictionary(keys.type):
        keys = keys.cast(keys.type.value_type)  # per chunk: chunks may hold different dictionaries
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if not isinstance(keys, pa.Array):
        raise ValueError(f"{name} must be integers or strings, got {type(keys).__name__}")
    if keys.null_count:
        index = int(np.flatnonzero(np.asarray(keys.is_null()))[0])
        raise ValueError(f"{name}: example {index} has no key (null)")
    if pa.types.is_integer(keys.type):
        return np.asarray(keys.cast(pa.int64() if pa.types.is_signed_integer(keys.type) else pa.uint64())).view(
            np.uint64
        )
    if pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type) or pa.types.is_string_view(keys.type):
        return _string_hashes(keys.cast(pa.large_string()))
    raise ValueError(f"{name} must be integers or strings, got an Arrow column of {keys.type}")


def key_words(hashes: np.ndarray) -> np.ndarray:
    """Each key hash mixed into a uniform 64-bit word: what identifies an example with that
    key (in `key_fingerprint` and the distinct-key sketch)."""
    return splitmix64(np.asarray(hashes, dtype=np.uint64) ^ _word(_KEY_SALT))


def keyless_words(origin: int, start: int, count: int) -> np.ndarray:
    """Words identifying `count` examples without a key of their own, numbered from `start`
    within a state whose random `origin` no other state shares."""
    positions = splitmix64(np.arange(start, start + count, dtype=np.uint64) ^ _word(_KEYLESS_SALT))
    return splitmix64(positions ^ _word(origin))


def key_fingerprint(words: np.ndarray) -> tuple[int, int]:
    """(count, sum of `key_words` mod 2**64): equal for equal multisets of keys; adds on merge."""
    with np.errstate(over="ignore"):
        total = int(words.sum(dtype=np.uint64)) if len(words) else 0
    return len(words), total


# The distinct-key sketch: the SKETCH_SIZE smallest distinct words of a state's examples
# (k minimum values). Below SKETCH_SIZE distinct words it holds them all, so the count is
# exact; from there on, (SKETCH_SIZE - 1) / (largest word / 2**64) estimates it. A count of
# examples above the distinct words (exact), or above the estimate / (1 - SKETCH_MARGIN),
# means an example counted twice. Over n distinct words, n * (largest word / 2**64) tends to
# a Gamma(SKETCH_SIZE, 1) variable, so a false alarm on valid data has probability
# P(Gamma(512, 1) > 511 / 0.7) < 1e-17 per check (scipy.stats.gamma.sf(511 / 0.7, 512):
# 6.4e-18), to which 64-bit collisions between distinct string keys add at most
# 511**2 / 2**65 < 1e-14 while the count is exact (integer keys never collide).
SKETCH_SIZE = 512
SKETCH_MARGIN = 0.3


def sketch_of(words: np.ndarray) -> np.ndarray:
    """The sketch of `words`: its SKETCH_SIZE smallest distinct values, sorted (uint64)."""
    words = np.asarray(words, dtype=np.uint64)
    if len(words) > SKETCH_SIZE:
        smallest = np.unique(np.partition(words, SKETCH_SIZE - 1)[:SKETCH_SIZE])
        if len(smallest) == SKETCH_SIZE:
            return smallest
    return np.unique(words)[:SKETCH_SIZE]


def merge_sketches(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The sketch of the union of two sketches' words."""
    return np.union1d(first, second)[:SKETCH_SIZE]


def distinct_count(sketch: np.ndarray) -> tuple[float, bool]:
    """(the number of distinct words behind `sketch`, whether it is exact): exact below
    SKETCH_SIZE words, else the k-minimum-values estimate."""
    if len(sketch) < SKETCH_SIZE:
        return float(len(sketch)), True
    return (SKETCH_SIZE - 1) / ((float(sketch[-1]) + 1.0) * 2.0**-64), False


def counted_twice(sketch: np.ndarray, n_examples: int) -> bool:
    """Whether `n_examples` examples with these words must hold a repeated one: more examples
    than distinct words (exact count), or clearly more than the estimate (see SKETCH_MARGIN)."""
    distinct, exact = distinct_count(sketch)
    return n_examples > distinct if exact else distinct < (1.0 - SKETCH_MARGIN) * n_examples


def _streams(hashes: np.ndarray, seed: int, n_resamples: int) -> tuple[np.ndarray, np.ndarray]:
    seed_mix = splitmix64(_word(seed_word(seed)))
    key_words = splitmix64(np.asarray(hashes, dtype=np.uint64) ^ seed_mix ^ _word(_KEY_SALT))
    resample_words = splitmix64(np.arange(n_resamples, dtype=np.uint64) + splitmix64(seed_mix ^ _word(_RESAMPLE_SALT)))
    return key_words, resample_words


def draws(hashes: np.ndarray, seed: int, n_resamples: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Per block of resamples: (first resample, Poisson(1) weights, 0/1 swap signs), each a
    (block x examples) uint8 matrix."""
    key_words, resample_words = _streams(hashes, seed, n_resamples)
    block = max(1, min(n_resamples, BLOCK_ELEMENTS // max(len(hashes), 1)))
    for start in range(0, n_resamples, block):
        words = _mix_in_place(resample_words[start : start + block, None] ^ key_words[None, :])
        # Inverse CDF of the uniform (top 53 bits) / 2**53: by table, exactly where it is ambiguous.
        top = words.view(np.uint16)[:, 3::4] if _LITTLE_ENDIAN else (words >> np.uint64(48)).astype(np.uint16)
        weights = _WEIGHT_TABLE[top]
        crossing = weights == 255
        if crossing.any():
            uniform = (words[crossing] >> np.uint64(11)).astype(np.float64) * 2.0**-53
            weights[crossing] = np.searchsorted(POISSON_CDF, uniform, side="right")
        low = words.view(np.uint8)[:, 0::8] if _LITTLE_ENDIAN else (words & np.uint64(255)).astype(np.uint8)
        yield start, weights, low & np.uint8(1)


def poisson_weights(keys: Any, n_resamples: int, random_state: int) -> tuple[np.ndarray, np.ndarray]:
    """(weights, swap signs) of the given keys, each (n_resamples x examples): the draws the
    Poisson bootstrap uses (for inspection and tests)."""
    hashes = key_hashes(keys)
    weights = np.empty((n_resamples, len(hashes)), dtype=np.uint8)
    signs = np.empty_like(weights)
    for start, block_weights, block_signs in draws(hashes, random_state, n_resamples):
        weights[start : start + len(block_weights)] = block_weights
        signs[start : start + len(block_signs)] = block_signs
    return weights, signs


def resample_sums(
    statistics: np.ndarray, hashes: np.ndarray, seed: int, n_resamples: int, *, signs: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per resample, the Poisson-weighted and the swap-sign-weighted column sums of the
    (examples x statistics) matrix: two (n_resamples x statistics) float64 arrays (the
    second None with `signs=False`, for intervals alone: half the products)."""
    weighted = np.zeros((n_resamples, statistics.shape[1]))
    swapped = np.zeros_like(weighted) if signs else None
    with _blas_controller().limit(limits=1, user_api="blas"):
        for start, block_weights, block_signs in draws(hashes, seed, n_resamples):
            stop = start + len(block_weights)
            weighted[start:stop] = block_weights.astype(np.float64) @ statistics
            if swapped is not None:
                swapped[start:stop] = block_signs.astype(np.float64) @ statistics
    return weighted, swapped


@functools.cache
def _blas_controller() -> Any:
    """The process's BLAS thread pools. The products above (a few statistics columns) run on
    one BLAS thread: more threads gained nothing and spun on the cores that other processes
    (`--workers`, an engine's workers) were using (2M rows, 1,000 resamples, 2 workers on 2
    cores: 64 s with 2 BLAS threads each, 19 s with one)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()
