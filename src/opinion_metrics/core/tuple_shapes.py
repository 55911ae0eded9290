"""The shapes sentiment tuples take where their elements are not known yet (the evaluate
modules' rows, before `compute` names the elements): each tuple's kind, the Arrow features a
batch needs (Arrow holds one type per column), and the keys of mapping tuples."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from .tuples import ELEMENTS, check_elements, check_tuple_row, where
from .validation import describe


def check_tuple_item(item: Any, side: str, example: int, position: int) -> str:
    """The shape of one tuple before its elements are known (the evaluate modules' rows): a
    sequence or a mapping of text spans, token positions, None and labels. Returns its kind:
    "text" or "positions" (a span given as token positions), and "mapping" or "sequence":
    "text mapping", "positions sequence", ..."""
    place = where(side, example, position)
    if isinstance(item, Mapping):
        bad = next((key for key in item if key not in ELEMENTS), None)
        if bad is not None:
            raise ValueError(f"{place} has key {bad!r}, not an element of {list(ELEMENTS)}")
        values = list(item.values())
    elif isinstance(item, (list, tuple)):
        values = list(item)
    else:
        raise ValueError(f"{place} must be a tuple (a list or a mapping of elements), got {describe(item)}")
    kind = "text"
    for number, value in enumerate(values):
        if value is None or isinstance(value, str):
            continue
        if isinstance(value, (list, tuple)) and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 0 for v in value
        ):
            kind = "positions"
            continue
        element = list(item)[number] if isinstance(item, Mapping) else f"element {number}"
        raise ValueError(
            f"{place}, {element} must be a text span or label (str), token positions (a list of int) or None, "
            f"got {describe(value)}"
        )
    return f"{kind} {'mapping' if isinstance(item, Mapping) else 'sequence'}"


# The features of a tuple module, by the kind of tuple they hold (Arrow holds one type per column).
TUPLE_FEATURES = {"text sequence": "text", "text mapping": "mappings", "positions mapping": "positions"}


def tuple_features(batch: dict[str, Any]) -> str:
    """Which of a tuple module's features a batch needs: "generated" (predictions are text and
    references text tuples), "text" (text tuples as lists), "mappings" (text tuples keyed by
    element) or "positions" (tuples keyed by element, spans as token positions); a batch whose
    rows would need two is refused, naming the first tuple of the second kind."""
    kinds: dict[str, tuple[str, str]] = {}  # column: (kind, where first seen)
    for name in ("predictions", "references"):
        for index, row in enumerate(batch.get(name) or []):
            if name == "predictions":  # generated text or tuples, one or the other
                first = kinds.setdefault("rows", ("text" if isinstance(row, str) else "tuples", f"example {index}"))
                if first[0] != ("text" if isinstance(row, str) else "tuples"):
                    raise ValueError(
                        f"predictions: example {index} is {'generated text' if first[0] == 'tuples' else 'not text'}, "
                        f"but {first[1]} {'holds tuples' if first[0] == 'tuples' else 'generated text'}: give every "
                        "example's tuples, or every example's text (read with format=)"
                    )
            if isinstance(row, str) and name == "predictions":
                found = [("generated", f"predictions: example {index}")]
            else:
                items = check_tuple_row(row, name, index)
                found = [(check_tuple_item(item, name, index, position), f"{name}: example {index}, tuple {position}")
                         for position, item in enumerate(items)]  # fmt: skip
            for kind, place in found:
                if kind == "positions sequence":
                    raise ValueError(
                        f"{place}: through evaluate a tuple with token positions is a mapping, such as "
                        "{'aspect': [1], 'opinion': [3, 4], 'sentiment': 'POS'} (Arrow holds one type per column)"
                    )
                first = kinds.setdefault(name, (kind, place))
                if first[0] != kind:
                    raise ValueError(
                        f"{place} is a {kind} tuple, but {first[1]} a {first[0]} one: through evaluate every tuple of "
                        "a column has one shape"
                    )
    predicted, gold = kinds.get("predictions", (None, ""))[0], kinds.get("references", (None, ""))[0]
    if predicted == "generated":
        if gold not in (None, "text sequence"):
            raise ValueError(
                "with generated text, give the gold tuples as lists of text, such as [['pizza', 'bad', 'NEG']]"
            )
        return "generated"
    if predicted is not None and gold is not None and predicted != gold:
        raise ValueError(
            f"predictions are {predicted} tuples but references {gold} ones: through evaluate both sides have one shape"
        )
    return TUPLE_FEATURES[predicted or gold or "text sequence"]


class MappingKeys:
    """The keys of the mapping tuples added to a module: an Arrow struct row reads a key left out
    as None (an implicit span), so `check` refuses, at compute, an element some mapping lacked."""

    def __init__(self) -> None:
        self.seen: dict[frozenset[Any], Any] = {}  # each set of keys, with a mapping that has it

    def add(self, *columns: Any) -> None:
        for column in columns:
            for row in column if isinstance(column, (list, tuple)) else ():
                for item in row if isinstance(row, (list, tuple)) else ():
                    if isinstance(item, dict):
                        self.seen.setdefault(frozenset(item), item)

    def check(self, elements: Any) -> None:
        for keys, item in self.seen.items():
            missing = [name for name in check_elements(elements) if name not in keys]
            if missing:
                raise ValueError(f"a tuple added has no {missing[0]!r} ({describe(item)}): give every element's key")
