"""The byte format of a `MetricState` (docs/definitions.md section 12), written by `write`
and read by `read`:

    magic b"\\x93OMSTATE" | version (uint16 LE) | header length (uint32 LE) | header (UTF-8
    JSON: family, canonical options, counts, key fingerprint, position-key ranges, array names
    and shapes) |
    the key sketch as little-endian uint64, then the statistics arrays as little-endian
    float64, in header order | SHA-256 of all the above

`read` parses it as untrusted input: every count, shape and option is
checked against the family's declaration, and every statistic against what the family's
statistics can be (`layout`), before anything is allocated or computed.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..families.registry import get_family
from ..stats.poisson import SKETCH_SIZE, counted_twice, distinct_count
from .layout import _layout, _value_names
from .options import ObjectOption, _canonical_value, _from_canonical, _invalid, _short

if TYPE_CHECKING:
    from .metric_state import MetricState

MAGIC = b"\x93OMSTATE"


FORMAT_VERSION = 3  # 2: the header records the ranges of position keys; 3: the key sketch


_PREFIX = struct.Struct("<HI")  # version, header length


_DIGEST_SIZE = 32


_MAX_HEADER_BYTES = 1 << 24


_MAX_HEADER_DEPTH = 8  # the header's JSON nests 4 deep ({"arrays": [{"shape": [...]}]})


_MAX_DIGITS = 20  # an integer of the header fits in 64 bits (positions, counts, seeds)


_HEADER_KEYS = {"family", "options", "n_examples", "fingerprint", "positions", "arrays"}


_DTYPES = {name: np.dtype("<f8") for name in ("rows", "sums", "weighted", "swapped")} | {"sketch": np.dtype("<u8")}


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_DIGITS:
        raise _invalid(f"its header holds an integer of {len(text)} digits")
    return int(text)


def _refuse_constant(text: str) -> None:
    raise _invalid(f"its header holds {text}")


def _depth(value: Any) -> int:
    """How deep a parsed JSON value nests (at most `_MAX_HEADER_DEPTH` + 1 levels are visited)."""
    level, layer = 0, [value]
    while layer and level <= _MAX_HEADER_DEPTH:
        level += 1
        layer = [
            item
            for container in layer
            if isinstance(container, (list, dict))
            for item in (container.values() if isinstance(container, dict) else container)
        ]
    return level + bool(layer)


def _parse_header(raw: bytes) -> Any:
    """The header's JSON: integers of at most `_MAX_DIGITS` digits, no NaN or infinity, at most
    `_MAX_HEADER_DEPTH` levels deep."""
    try:
        header = json.loads(raw.decode("utf-8"), parse_int=_bounded_int, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _invalid(f"unreadable header ({error})") from None
    except RecursionError:
        raise _invalid(f"its header nests more than {_MAX_HEADER_DEPTH} levels") from None
    if _depth(header) > _MAX_HEADER_DEPTH:
        raise _invalid(f"its header nests more than {_MAX_HEADER_DEPTH} levels")
    return header


def _length(value: Any) -> int | None:
    try:
        return len(value)
    except TypeError:  # e.g. a generator: the family function checks it
        return None


def write(state: MetricState) -> bytes:
    """`state` in the layout of this module's docstring."""
    arrays = [("sketch", state.sketch), *state.named_arrays()]
    header = {
        "family": state.family,
        "options": state.canonical_options,
        "n_examples": state.n_examples,
        "fingerprint": list(state.fingerprint),
        "positions": [list(span) for span in state.positions],
        "arrays": [{"name": name, "shape": list(array.shape)} for name, array in arrays],
    }
    encoded = json.dumps(header, sort_keys=True, allow_nan=False).encode("utf-8")
    body = b"".join(
        [MAGIC, _PREFIX.pack(FORMAT_VERSION, len(encoded)), encoded]
        + [np.ascontiguousarray(array, dtype=_DTYPES[name]).tobytes() for name, array in arrays]
    )
    return body + hashlib.sha256(body).digest()


def read(cls: type[MetricState], data: bytes | bytearray | memoryview, objects: Mapping[str, Any]) -> MetricState:
    """A state from `to_bytes` output. The bytes are untrusted input: anything else
    (corrupted, truncated, foreign, another version, forged with a valid checksum: a
    header that does not fit the family's declaration or its arrays, statistics no
    examples could give) is a `ValueError` ("not a valid MetricState: ..."), raised
    before anything is allocated or computed. Object options (functions, models) can be
    given again by name in `objects`."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"MetricState.from_bytes takes bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < len(MAGIC) + _PREFIX.size + _DIGEST_SIZE or not data.startswith(MAGIC):
        raise ValueError("not a MetricState: the bytes do not start with the MetricState magic header")
    version, header_size = _PREFIX.unpack_from(data, len(MAGIC))
    if version != FORMAT_VERSION:
        raise ValueError(
            f"MetricState format version {version} is not supported (this library reads version {FORMAT_VERSION})"
        )
    body, digest = data[:-_DIGEST_SIZE], data[-_DIGEST_SIZE:]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError("corrupted or truncated MetricState: its checksum does not match its contents")
    start = len(MAGIC) + _PREFIX.size
    if header_size > min(_MAX_HEADER_BYTES, len(body) - start):
        raise _invalid(f"its header claims {header_size} bytes")
    header = _parse_header(body[start : start + header_size])
    state = _from_header(cls, header, objects)
    payload = memoryview(body)[start + header_size :]
    _load_arrays(state, header["arrays"], payload)
    return state


def _from_header(cls: type[MetricState], header: Any, objects: Mapping[str, Any]) -> MetricState:
    if not isinstance(header, dict) or set(header) != _HEADER_KEYS:
        raise _invalid(f"the header must have exactly the keys {sorted(_HEADER_KEYS)}")
    family = header["family"]
    if not isinstance(family, str):
        raise _invalid(f"family {family!r}")
    try:
        spec = get_family(family)
    except ValueError as error:
        raise _invalid(str(error)) from None
    options = header["options"]
    names = _value_names(spec)
    if not isinstance(options, dict) or sorted(options) != sorted(names):
        raise _invalid(f"the options of {family} are {', '.join(names)}")
    decoded = {name: _from_canonical(name, value) for name, value in options.items()}
    for name, value in objects.items():
        if name not in decoded:
            raise ValueError(f"{family} has no option {name!r}")
        if _canonical_value(value) != options[name]:
            raise ValueError(f"{name}: the given object is {_canonical_value(value)}, the state's {options[name]}")
        decoded[name] = value
    try:
        state = cls(family, **{k: v for k, v in decoded.items() if not isinstance(v, ObjectOption)})
    except (TypeError, ValueError) as error:
        raise _invalid(str(error)) from None
    state.options.update(decoded)
    canonical = state.canonical_options
    differing = [
        name for name in names if canonical[name] != options[name] or type(canonical[name]) is not type(options[name])
    ]
    if state.poisson and not isinstance(state.options["random_state"], int):
        differing.insert(0, "random_state")  # a Poisson state's seed is an int
    if differing:  # e.g. 5.0 for an int option, or a list where a str is
        raise _invalid(f"option {differing[0]} {_short(options[differing[0]])} is not in its canonical form")
    count, fingerprint = header["n_examples"], header["fingerprint"]
    if not _is_count(count):
        raise _invalid(f"n_examples {count!r}")
    if (
        not isinstance(fingerprint, list)
        or len(fingerprint) != 2
        or not all(_is_count(value) for value in fingerprint)
        or fingerprint[1] >= 2**64
        or fingerprint[0] != (count if state.poisson else 0)
        or (fingerprint[0] == 0 and fingerprint[1] != 0)
    ):
        raise _invalid(f"fingerprint {fingerprint!r} for {count} examples")
    positions = header["positions"]
    if (
        not isinstance(positions, list)
        or not all(isinstance(span, list) and len(span) == 2 and all(map(_is_count, span)) for span in positions)
        or not all(start < stop for start, stop in positions)
        or any(positions[i][1] >= positions[i + 1][0] for i in range(len(positions) - 1))
        or (positions and not state.poisson)
        or sum(stop - start for start, stop in positions) > count
    ):
        raise _invalid(f"positions {_short(positions)} for {count} examples")
    state.n_examples, state.fingerprint = count, (fingerprint[0], fingerprint[1])
    state.positions = [(start, stop) for start, stop in positions]
    return state


def _load_arrays(state: MetricState, declared: Any, payload: memoryview) -> None:
    n_resamples = state.options["n_resamples"]
    statistics_names = ["rows"] if state.keeps_rows else ["sums", "weighted", "swapped"] if state.poisson else ["sums"]
    expected = ["sketch", *([] if state.n_examples == 0 else statistics_names)]
    if not isinstance(declared, list) or not all(
        isinstance(entry, dict)
        and set(entry) == {"name", "shape"}
        and isinstance(entry["shape"], list)
        and all(_is_count(size) for size in entry["shape"])
        for entry in declared
    ):
        raise _invalid("the arrays must be declared as {name, shape} entries")
    names = [entry["name"] for entry in declared]
    if names != expected:
        raise _invalid(f"arrays {names}, expected {expected} for {state.n_examples} examples and these options")
    layout = _layout(state.family, state.canonical_options)
    width = layout.width
    wanted = {
        "sketch": (min(SKETCH_SIZE, state.n_examples),),
        "rows": (state.n_examples, width),
        "sums": (width,),
        "weighted": (n_resamples, width),
        "swapped": (n_resamples, width),
    }
    shapes = [tuple(entry["shape"]) for entry in declared]
    for name, shape in zip(names, shapes):
        if name == "sketch" and len(shape) == 1 and shape[0] <= wanted["sketch"][0]:
            continue  # fewer distinct keys than examples: refused below, naming the counts
        if shape != wanted[name]:
            raise _invalid(
                f"array {name} has shape {list(shape)}; {state.family} with these options has "
                f"{list(wanted[name])} for {state.n_examples} examples"
            )
    sizes = [math.prod(shape) for shape in shapes]
    if 8 * sum(sizes) != len(payload):
        raise _invalid(f"the header declares {8 * sum(sizes)} bytes of arrays, there are {len(payload)}")
    arrays, offset = {}, 0
    for name, shape, size in zip(names, shapes, sizes):
        array = np.frombuffer(payload, dtype=_DTYPES[name], count=size, offset=offset).reshape(shape)
        arrays[name] = array.astype(_DTYPES[name].newbyteorder("="))
        offset += 8 * size
    sketch = arrays.pop("sketch")
    if len(sketch) > 1 and not (sketch[1:] > sketch[:-1]).all():
        raise _invalid("its key sketch is not sorted")
    if counted_twice(sketch, state.n_examples):
        raise _invalid(f"its {state.n_examples} examples have {_distinct_keys(sketch)} distinct keys")
    for name, array in arrays.items():
        if not np.isfinite(array).all():
            raise _invalid(f"array {name} has non-finite values")
        examples = 1 if name == "rows" else state.n_examples if name == "sums" else None
        problem = layout.problem(array, examples, summed=1 if name == "rows" else state.n_examples)
        if problem is not None:
            raise _invalid(f"array {name} cannot hold {state.family} statistics: {problem}")
    if state.poisson and arrays:  # the sums less each swap-sign sum are sums over examples too
        sums, swapped = arrays["sums"], arrays["swapped"]
        problem = layout.problem(sums - swapped, None, state.n_examples, np.abs(sums) + np.abs(swapped))
        if problem is not None:
            raise _invalid(f"arrays sums and swapped disagree: {problem}")
    state.sketch = sketch
    if "rows" in arrays:
        state.rows = [arrays["rows"]]
        state.sums = arrays["rows"].sum(axis=0)
    else:
        for name, array in arrays.items():
            setattr(state, name, array)


def _distinct_keys(sketch: np.ndarray) -> str:
    """The number of distinct keys behind a sketch, in words ("5", "about 1,200")."""
    distinct, exact = distinct_count(sketch)
    return f"{distinct:.0f}" if exact else f"about {distinct:,.0f}"


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
