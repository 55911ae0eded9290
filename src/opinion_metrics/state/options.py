"""What a state records of its family's options: each in a canonical, comparable form (an
object option, such as a sentiment function or a model, by its name or as an `ObjectOption`
that must be given again when the state is read), and the names of rows in messages.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..core.positions import rename_example

# Options that may hold an object (a function, a model, a numpy Generator): only their
# description travels in the header.
_OBJECT_OPTIONS = frozenset({"normalize", "sentiment", "model", "random_state"})


class ObjectOption:
    """An option that was an object (a callable, a model) in the process that wrote a state:
    only its description travels; a state holding it merges and computes, but cannot update."""

    def __init__(self, description: str) -> None:
        self.description = description

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectOption) and other.description == self.description

    def __hash__(self) -> int:
        return hash(self.description)

    def __repr__(self) -> str:
        return f"<object {self.description}>"


def _describe_object(value: Any) -> str:
    kind = value if callable(value) and hasattr(value, "__qualname__") else type(value)
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', repr(kind))}"


def stable_name(value: Any) -> str | None:
    """The explicit name an object option carries (`PrecomputedEncoder(name=...)`'s
    `canonical_name`, a model's `name_or_path`), or None."""
    for attribute in ("canonical_name", "name_or_path"):
        name = getattr(value, attribute, None)
        if isinstance(name, str) and name:
            return name
    return None


def _canonical_value(value: Any) -> Any:
    """A JSON value standing for an option value; an object by its explicit name, else by its
    type or function name (which does not tell two functions apart: see `check_mergeable`)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return list(value)
    if isinstance(value, (list, tuple)) and all(_strings(item) for item in value):  # e.g. projections
        return [list(item) for item in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return sorted([key, item] for key, item in value.items())  # e.g. a label map, as (key, value) pairs
    if isinstance(value, ObjectOption):
        return {"object": value.description}
    name = stable_name(value)
    if name is not None:  # e.g. PrecomputedEncoder: stands for the model that made its vectors
        return name
    return {"object": _describe_object(value)}


def _strings(item: Any) -> bool:
    return isinstance(item, (list, tuple)) and all(isinstance(part, str) for part in item)


def unnamed_objects(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options whose value is an object without an explicit name (a function, a model
    object): what `from_bytes` needs again to load a state that another process serialized."""
    return {name: value for name, value in options.items() if isinstance(_canonical_value(value), dict)}


def _from_canonical(name: str, value: Any) -> Any:
    """An option value read from a header; an object's description as an `ObjectOption`."""
    if not isinstance(value, dict):
        return value
    if name not in _OBJECT_OPTIONS or set(value) != {"object"} or not isinstance(value["object"], str):
        raise _invalid(f"option {name} {_short(value)}")
    return ObjectOption(value["object"])


@contextmanager
def rows_named(name: Callable[[int], str]) -> Iterator[None]:
    """A `ValueError` raised inside names its example as `name(index)` says (by its key, its
    dataset row, its partition) instead of by its position in the batch at hand (the first
    "example N" of the message, never one inside a quoted keyword)."""
    try:
        yield
    except ValueError as error:
        if error.args and isinstance(error.args[0], str):
            error.args = (rename_example(error.args[0], name), *error.args[1:])
        raise


def row_namer(table: Any, key: str | None, where: str = "", offset: int = 0) -> Callable[[int], str]:
    """How `rows_named` names row `index` of an Arrow table: by its `key` column's value and
    its position (`offset` + index) in `where` (a partition, a block)."""
    place = f" of {where}" if where else " of its block"

    def name(index: int) -> str:
        if key is not None and index < table.num_rows:
            return f"the row with {key}={table.column(key)[index].as_py()!r} (row {offset + index}{place})"
        return f"row {offset + index}{place} (give key= to name rows by their id)"

    return name


def _invalid(reason: str) -> ValueError:
    return ValueError(f"not a valid MetricState: {reason}")


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
