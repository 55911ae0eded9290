"""Sentiment tuples (docs/definitions.md section 13): the elements and their presets, the
checks of the family's options, and each side of a corpus prepared once into integer ids.

A tuple is a sequence in the order of `elements`, or a mapping keyed by element name. Span
elements (aspect, opinion) are text, token positions or implicit (None, "NULL"); label
elements (category, sentiment) are compared after `strip().casefold()` and the label map.
Every distinct string is prepared once per call (`encode_lists` numbers them in C where the
helper is built); each prepared form gets one id shared by both sides, so that equal ids
mean equal elements.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from .._native import helper
from .encoding import _encode_lists_in_python
from .normalization import NormalizeOption, make_normalizer
from .validation import any_lone_surrogate, describe

ELEMENTS = ("aspect", "opinion", "category", "sentiment")
SPAN_ELEMENTS = frozenset({"aspect", "opinion"})
PRESETS: dict[str, tuple[str, ...]] = {
    "aope": ("aspect", "opinion"),
    "aste": ("aspect", "opinion", "sentiment"),
    "tasd": ("aspect", "category", "sentiment"),
    "asqp": ("aspect", "category", "sentiment", "opinion"),
    "acos": ("aspect", "category", "opinion", "sentiment"),
}
DEFAULT_LABEL_MAP = {"pos": "positive", "neg": "negative", "neu": "neutral"}
TUPLE_MATCHES = ("exact", "overlap")
COUNTINGS = ("one_to_one", "membership")
FORMATS = (None, "paraphrase", "tuples")
IMPLICIT = 0  # the id of an implicit span (None or "NULL"), equal only to another implicit span
UNPARSED = "\x00unparsed"  # stands for a segment of generated text that could not be read

Elements = tuple[str, ...]


def check_elements(elements: Any) -> Elements:
    """A preset name ("aope", "aste", "tasd", "asqp", "acos"), element names separated by commas,
    or a sequence of names, each one of `ELEMENTS` once -> the element order."""
    if isinstance(elements, str):
        if elements.strip().casefold() in PRESETS:
            return PRESETS[elements.strip().casefold()]
        names: Any = [name.strip() for name in elements.split(",")]
    elif isinstance(elements, Sequence) and not isinstance(elements, bytes):
        names = list(elements)
    else:
        names = None
    presets = ", ".join(PRESETS)
    if not names or not all(isinstance(name, str) and name in ELEMENTS for name in names):
        raise ValueError(
            f"elements must be a preset ({presets}) or element names from {ELEMENTS} in tuple order, got {elements!r}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"elements names an element twice: {elements!r}")
    return tuple(names)


def default_projections(elements: Elements) -> tuple[Elements, ...]:
    """Each span element alone and, where the tuple has both, (aspect, opinion)."""
    spans = tuple(name for name in ("aspect", "opinion") if name in elements)
    return tuple((name,) for name in spans) + ((spans,) if len(spans) == 2 else ())


def check_projections(projections: Any, elements: Elements) -> tuple[Elements, ...]:
    """None (the default projections), or projections given as sequences of element names, as
    names joined by "_" ("aspect_sentiment") or as such names separated by commas in one str
    ("" or "none": no projections)."""
    if projections is None:
        return default_projections(elements)
    if isinstance(projections, str):
        text = projections.strip()
        projections = [] if text.casefold() in ("", "none") else [part.strip() for part in text.split(",")]
    if not isinstance(projections, Sequence) or isinstance(projections, bytes):
        raise ValueError(f"projections must be None or a list of element lists, got {describe(projections)}")
    found: list[Elements] = []
    for projection in projections:
        names = projection.split("_") if isinstance(projection, str) else projection
        if not isinstance(names, Sequence) or not names or not all(isinstance(name, str) for name in names):
            raise ValueError(f"projections: each is a list of element names, got {describe(projection)}")
        if not set(names) <= set(elements) or len(set(names)) != len(names):
            raise ValueError(
                f"projections: {projection!r} must name distinct elements of the tuple {list(elements)}, each once"
            )
        if tuple(names) in found:
            raise ValueError(f"projections: {projection!r} is given twice")
        found.append(tuple(names))
    return tuple(found)


def check_label_map(label_map: Any) -> dict[str, str]:
    """None (pos, neg, neu as positive, negative, neutral), a mapping label -> label, (label,
    label) pairs, or "label=label" pairs separated by commas; both sides compared stripped and
    casefolded ({} or "": no map)."""
    if label_map is None:
        return dict(DEFAULT_LABEL_MAP)
    pairs: Any = label_map
    if isinstance(label_map, str):
        parts = [part for part in label_map.split(",") if part.strip()]
        if not all(part.count("=") == 1 for part in parts):
            raise ValueError(f"label_map must be label=label pairs separated by commas, got {label_map!r}")
        pairs = [part.split("=") for part in parts]
    elif isinstance(label_map, Mapping):
        pairs = list(label_map.items())
    if not isinstance(pairs, Sequence) or not all(
        isinstance(pair, Sequence) and not isinstance(pair, str) and len(pair) == 2 for pair in pairs
    ):
        raise ValueError(f"label_map must be a mapping of labels (str) to labels (str), got {describe(label_map)}")
    checked = {}
    for key, value in pairs:
        if not isinstance(key, str) or not isinstance(value, str) or not key.strip() or not value.strip():
            raise ValueError(f"label_map maps labels (non-empty str) to labels, got {key!r}: {value!r}")
        checked[key.strip().casefold()] = value.strip().casefold()
    return checked


def _choice(name: str, value: Any, choices: tuple[Any, ...]) -> Any:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_tuple_match(match: Any) -> str:
    return _choice("match", match, TUPLE_MATCHES)


def check_counting(counting: Any) -> str:
    return _choice("counting", counting, COUNTINGS)


def check_format(format: Any) -> str | None:  # noqa: A002 (the option's name)
    return _choice("format", format, FORMATS)


def check_together(options: Mapping[str, Any]) -> None:
    """The options that constrain each other: membership counting is the field's rule (exact
    strings, pooled counts); paraphrases are quads."""
    elements = check_elements(options["elements"])
    check_projections(options["projections"], elements)
    if check_format(options["format"]) == "paraphrase" and set(elements) != set(ELEMENTS):
        raise ValueError(
            f"format='paraphrase' reads quads (category is great because aspect is opinion): give elements='asqp' "
            f"or 'acos', got {options['elements']!r}"
        )
    if check_counting(options["counting"]) == "membership":
        given = {"match": ("exact", options["match"]), "average": ("micro", options["average"])}
        given |= {"label_map": (None, options["label_map"]), "normalize": ("default", options["normalize"])}
        changed = [name for name, (default, value) in given.items() if value is not default and value != default]
        if changed:
            raise ValueError(
                f"counting='membership' counts the field's way (strings compared as given, stripped; pooled counts): "
                f"leave {', '.join(changed)} at the default ({changed[0]}={options[changed[0]]!r} was given)"
            )


# --- one side of a corpus, prepared ---------------------------------------------------------------------------


@dataclass
class Forms:
    """The prepared forms of one call, each with one id (`IMPLICIT` first): spans as token
    tuples or position sets, labels as their mapped form. `kinds[element]`: "text" or
    "positions", whichever that span element was first seen as."""

    ids: dict[Any, int] = field(default_factory=lambda: {("implicit",): IMPLICIT})
    tokens: list[Any] = field(default_factory=lambda: [None])  # per id: a span's tokens (tuple) or positions
    kinds: dict[str, tuple[str, str]] = field(default_factory=dict)  # element: (kind, where first seen)

    def number(self, key: Any, tokens: Any = None) -> int:
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.tokens)
            self.tokens.append(tokens)
        return found


@dataclass
class Side:
    """One side's tuples as ids: `offsets` (examples + 1) bound each example's rows of `ids`
    (tuples x elements); `unparsed` counts each example's unreadable segments; `originals`
    holds each tuple as given (explanations) and `segments` each example's unreadable text."""

    offsets: np.ndarray
    ids: np.ndarray
    unparsed: np.ndarray
    originals: list[Any] | None = None
    segments: list[list[str]] | None = None

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def where(side: str, example: int, position: int, element: str | None = None) -> str:
    place = f"{side}: example {example}, tuple {position}"
    return place if element is None else f"{place}, {element}"


class Preparer:
    """Prepares the values of both sides of one call into `Forms` ids (text once per distinct string)."""

    def __init__(self, elements: Elements, normalize: NormalizeOption, label_map: Mapping[str, str]) -> None:
        self.elements, self.label_map = elements, dict(label_map)
        self.spans = [name in SPAN_ELEMENTS for name in elements]
        self.normalizer = make_normalizer(normalize)
        self.forms = Forms()
        self._text: dict[str, int] = {}  # span text -> id (-1: empty once normalized)
        self._labels: dict[str, int] = {}  # label -> id (-1: empty)

    def text_ids(self, strings: list[str]) -> np.ndarray:
        """The id of each string as a span (-1 where it normalizes to nothing), in one batch."""
        new = [text for text in dict.fromkeys(strings) if text not in self._text]
        implicit = [text.strip().casefold() == "null" for text in new]
        forms = self.normalizer.many([text for text, null in zip(new, implicit) if not null])
        forms = iter(forms if forms is not None else [self.normalizer(t) for t, n in zip(new, implicit) if not n])
        for text, null in zip(new, implicit):
            if null:
                self._text[text] = IMPLICIT
                continue
            tokens = tuple(next(forms).split())
            self._text[text] = self.forms.number(("text", tokens), tokens) if tokens else -1
        return np.fromiter(map(self._text.__getitem__, strings), dtype=np.int64, count=len(strings))

    def label_ids(self, strings: list[str]) -> np.ndarray:
        """The id of each string as a label (-1 where it is empty once stripped)."""
        for text in dict.fromkeys(strings):
            if text not in self._labels:
                folded = text.strip().casefold()
                label = self.label_map.get(folded, folded)
                self._labels[text] = self.forms.number(("label", label)) if label else -1
        return np.fromiter(map(self._labels.__getitem__, strings), dtype=np.int64, count=len(strings))

    def seen_kind(self, element: str, kind: str, place: str) -> None:
        first = self.forms.kinds.setdefault(element, (kind, place))
        if first[0] != kind:
            raise ValueError(
                f"{place} is given as {kind}, but as {first[0]} at {first[1]}: an element is text spans or "
                "token positions throughout a corpus"
            )

    def element_id(self, value: Any, column: int, place: str) -> int:
        """One element's id (the per-tuple path: mappings, positions, None, str subclasses)."""
        element = self.elements[column]
        if not self.spans[column]:
            if not isinstance(value, str):
                raise ValueError(f"{place} must be a label (str), got {describe(value)}")
            found = int(self.label_ids([str.__str__(value)])[0])
            if found < 0:
                raise ValueError(f"{place} is an empty label: {value!r}")
            return found
        if value is None:
            return IMPLICIT
        if isinstance(value, str):
            found = int(self.text_ids([str.__str__(value)])[0])
            if found < 0:
                raise ValueError(
                    f"{place} is empty once normalized ({value!r}); write None or 'NULL' for an implicit span"
                )
            if found != IMPLICIT:
                self.seen_kind(element, "text", place)
            return found
        if isinstance(value, np.ndarray) and value.ndim == 1:
            value = value.tolist()
        if not isinstance(value, (list, tuple)):
            raise ValueError(
                f"{place} must be a text span (str), token positions (a list of int) or None (implicit), got "
                f"{describe(value)}"
            )
        if not value:
            raise ValueError(f"{place} has no token positions; write None or 'NULL' for an implicit span")
        bad = next((item for item in value if isinstance(item, bool) or not isinstance(item, numbers.Integral)), None)
        if bad is not None or min(value) < 0:
            shown = bad if bad is not None else min(value)
            raise ValueError(f"{place}: token positions are integers >= 0, got {describe(shown)} in {value!r}")
        self.seen_kind(element, "positions", place)
        positions = frozenset(int(item) for item in value)
        return self.forms.number(("positions", positions), positions)

    def side(self, rows: Sequence[Any], name: str, keep: bool = False, unparsed: Sequence[int] | None = None) -> Side:
        """One side prepared: in bulk when every tuple is a list or tuple of exact str, else tuple by tuple."""
        counts = np.zeros(len(rows), dtype=np.int64) if unparsed is None else np.asarray(unparsed, dtype=np.int64)
        encoded = tuple_codes(rows, len(self.elements))
        prepared = None if encoded is None else self._bulk(rows, name, *encoded)
        if prepared is None:
            prepared = self._one_by_one(rows, name)
        originals = list(chain.from_iterable(rows)) if keep else None
        return Side(*prepared, counts, originals)

    def sides(self, predictions: Sequence[Any], references: Sequence[Any], unparsed: Any = None) -> tuple[Side, Side]:
        """Both sides prepared, their strings numbered together where both are in bulk shape."""
        encoded = tuple_codes(predictions, len(self.elements), references)
        if encoded is None:
            return self.side(predictions, "predictions", unparsed=unparsed), self.side(references, "references")
        pred_sizes, pred_codes, gold_sizes, gold_codes, distinct = encoded
        counts = np.zeros(len(predictions), np.int64) if unparsed is None else np.asarray(unparsed, dtype=np.int64)
        pred = Side(*self._bulk(predictions, "predictions", pred_sizes, pred_codes, distinct), counts)
        gold = self._bulk(references, "references", gold_sizes, gold_codes, distinct)
        return pred, Side(*gold, np.zeros(len(references), dtype=np.int64))

    def _bulk(
        self, rows: Sequence[Any], name: str, sizes: np.ndarray, codes: np.ndarray, distinct: list[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        width = len(self.elements)
        roles = {True: self.text_ids(distinct) if any(self.spans) else None}
        roles[False] = self.label_ids(distinct) if not all(self.spans) else None
        lookup = np.stack([roles[span] for span in self.spans], axis=1)  # (distinct strings x columns): ids
        ids = lookup[codes, np.arange(width)]  # each string's id in its column's role, in one pass
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        if len(ids) and ids.min() < 0:  # an empty span or label: the per-tuple path names it
            self._one_by_one(rows, name)
        for column, element in enumerate(self.elements):
            first = int(np.argmax(ids[:, column] != IMPLICIT)) if self.spans[column] and len(ids) else 0
            if self.spans[column] and len(ids) and ids[first, column] != IMPLICIT:
                example = int(np.searchsorted(offsets, first, side="right")) - 1
                self.seen_kind(element, "text", where(name, example, first - int(offsets[example]), element))
        return offsets, ids

    def _one_by_one(self, rows: Sequence[Any], name: str) -> tuple[np.ndarray, np.ndarray]:
        width = len(self.elements)
        ids: list[int] = []
        sizes = []
        for example, row in enumerate(rows):
            row = check_tuple_row(row, name, example)
            for position, item in enumerate(row):
                place = where(name, example, position)
                values = tuple_values(item, self.elements, place)
                ids += [self.element_id(value, column, f"{place}, {self.elements[column]}")
                        for column, value in enumerate(values)]  # fmt: skip
            sizes.append(len(row))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return offsets, np.asarray(ids, dtype=np.int64).reshape(-1, width)


def tuple_codes(rows: Sequence[Any], width: int, others: Sequence[Any] | None = None) -> tuple[Any, ...] | None:
    """`(sizes, codes, distinct)`: each row's number of tuples, each tuple's strings numbered by
    their position in `distinct` (the distinct strings in order of first appearance; a (tuples x
    width) array); None unless every row is a list or tuple of lists or tuples of `width` exact
    str (none holding a lone surrogate: UTF-8 cannot hold it). With `others` (the other side's
    rows, one per row), `(sizes, codes, other_sizes, other_codes, distinct)`, example by example
    the other row first. In C when the helper is built (`_native/tuples.c`: no Python list of
    the tuples; a string that repeats one of the other row's takes its code at once), else
    `_tuple_codes_in_python`."""
    speedups = helper()
    if speedups is None:
        return _tuple_codes_in_python(rows, width, others)
    found = speedups.tuple_codes(rows, width, others)
    if found is None:
        return None
    arrays = [np.frombuffer(data, dtype=np.int64 if k % 2 == 0 else np.uint32) for k, data in enumerate(found[:-1])]
    arrays = [array.reshape(-1, width) if k % 2 else array for k, array in enumerate(arrays)]
    return (*arrays, found[-1])


def _tuple_codes_in_python(rows: Sequence[Any], width: int, others: Sequence[Any] | None) -> tuple[Any, ...] | None:
    sides = [rows] if others is None else [others, rows]
    if any(type(side) not in (list, tuple) or not set(map(type, side)) <= {list, tuple} for side in sides):
        return None
    if others is not None and len(others) != len(rows):
        return None
    sizes = [np.fromiter(map(len, side), dtype=np.int64, count=len(side)) for side in sides]
    interleaved = chain.from_iterable(chain.from_iterable(zip(*sides)))  # each example: its other row first
    encoded = _encode_lists_in_python(list(interleaved))
    if encoded is None or (encoded[0] != width).any() or any_lone_surrogate(encoded[2]):
        return None
    codes = encoded[1].reshape(-1, width)
    if others is None:
        return sizes[0], codes, encoded[2]
    other = np.repeat(np.tile([True, False], len(rows)), np.stack(sizes, axis=1).ravel())
    return sizes[1], codes[~other], sizes[0], codes[other], encoded[2]


def tuple_values(item: Any, elements: Elements, place: str) -> list[Any]:
    """A tuple's values in element order, from a sequence or a mapping (a key that is not an
    element may be there with None: an Arrow struct row carries every field)."""
    width = len(elements)
    if isinstance(item, Mapping):
        unknown = [key for key, value in item.items() if key not in elements and value is not None]
        if unknown:
            raise ValueError(f"{place} has key {unknown[0]!r}, not an element of {list(elements)}")
        missing = [name for name in elements if name not in item]
        if missing:
            raise ValueError(f"{place} has no {missing[0]!r}; its keys are the elements {list(elements)}")
        return [item[name] for name in elements]
    if isinstance(item, (list, tuple)):
        if len(item) != width:
            raise ValueError(f"{place} has {len(item)} elements, expected {width} ({', '.join(elements)}): {item!r}")
        return list(item)
    raise ValueError(f"{place} must be a tuple (a list or a mapping of {list(elements)}), got {describe(item)}")


def check_lengths(predictions: Sequence[Any], references: Sequence[Any]) -> int:
    """One entry per example on both sides, at least one example: their number."""
    lengths = {"predictions": len(predictions), "references": len(references)}
    if lengths["predictions"] != lengths["references"]:
        shorter = min(lengths, key=lengths.__getitem__)
        raise ValueError(
            f"inputs must have one entry per example, but predictions has {lengths['predictions']}, references has "
            f"{lengths['references']} (example {lengths[shorter]} has no {shorter})"
        )
    if not lengths["predictions"]:
        raise ValueError("cannot evaluate an empty corpus (0 examples)")
    return lengths["predictions"]


def check_tuple_row(row: Any, side: str, example: int) -> Sequence[Any]:
    """One example's entry: a list of tuples (a numpy array or an Arrow list read by position)."""
    if isinstance(row, (list, tuple)):
        return row
    if isinstance(row, str):
        hint = "; generated text needs format='paraphrase' or 'tuples'" if side == "predictions" else ""
        raise ValueError(f"{side}: example {example} must be a list of tuples, got {describe(row)}{hint}")
    if isinstance(row, np.ndarray) and row.ndim >= 1:
        return list(row)
    to_list = getattr(row, "to_pylist", None) or getattr(row, "tolist", None)
    if callable(to_list) and not isinstance(row, Mapping):
        listed = to_list()
        if isinstance(listed, list):
            return listed
    raise ValueError(f"{side}: example {example} must be a list of tuples, got {describe(row)}")
