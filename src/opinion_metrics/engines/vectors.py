"""The semantic family on the engines: the distinct normalized keywords of a dataset embedded
once (`embed_keywords`), and the lookups that give each worker their vectors (in float32 for
the pairs near the threshold in half precision).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ..core.normalization import make_normalizer
from ..io.rows import python_values
from .support import Request, block_columns


def distinct_keywords(table: Any, request: Request) -> Any:
    """The distinct normalized keywords (what the semantic family embeds) of an Arrow batch,
    the gold table's lists of its rows included."""
    import pyarrow as pa

    keyword_columns = {name: request.columns[name] for name in ("predictions", "references") if name in request.columns}
    columns = block_columns(table, replace(request, columns=keyword_columns))
    lists = [columns[name] for name in ("predictions", "references") if name in columns]
    return pa.table({"keyword": pa.array(_normalized(lists, request.options), pa.string())})


def _normalized(lists: list[list[Any]], options: Mapping[str, Any]) -> list[str]:
    normalizer = make_normalizer(options.get("normalize", "default"), options.get("stemmer"))
    seen: dict[str, None] = {}
    for column in lists:
        for keywords in {id(keywords): keywords for keywords in column}.values():  # a shared gold list once
            for keyword in keywords or ():
                if isinstance(keyword, str):
                    seen[normalizer(keyword)] = None
    seen.pop("", None)
    return list(seen)


def embed_keywords(table: Any, model: Any, device: str | None, batch_size: int, precision: str = "float32") -> Any:
    """(keyword, vector) rows: the table's keywords embedded by `model` (a name, path or model
    object) as the semantic family embeds them (`embedding.embed_vectors`: unit vectors; a
    zero embedding's row is zeros and a non-finite one's NaN, which the family names when it
    looks them up)."""
    import pyarrow as pa

    from ..embeddings.encoder import load_model
    from ..embeddings.forward import embed_vectors

    keywords = python_values(table.column("keyword"))
    if isinstance(model, str):
        model = load_model(model, device)
    vectors, norms = embed_vectors(model, keywords, batch_size=batch_size, precision=precision)
    if not len(keywords):
        vectors = np.zeros((0, 1), np.float32)
    vectors[norms == 0] = 0.0
    vectors[~np.isfinite(norms)] = np.nan
    flat = pa.array(np.ascontiguousarray(vectors).reshape(-1))
    width = vectors.shape[1]
    return pa.table({"keyword": table.column("keyword"), "vector": pa.FixedSizeListArray.from_arrays(flat, width)})


class VectorLookup:
    """A model object (for `model=`) that looks the keywords' vectors up in one Arrow table of
    (keyword, vector) rows (`embed_keywords`' output, concatenated): the vectors are read in
    place (zero-copy from Ray's object store, or from a broadcast buffer), only a keyword ->
    row index is built, once per process. Named as states name `model`, so that every
    worker's states merge with each other and with states made with `model` itself.

    A keyword the table lacks is embedded here by `fallback` ((model, device, batch size and
    optionally precision), as `embed_keywords` takes them): a dataset whose rows differ from
    one pass to the next (`limit`, sampling) gives the statistics keywords the vocabulary pass
    never saw. Under half precision, `in_float32()` gives the lookup that embeds keywords with
    the fallback's model in float32 (the semantic family's pairs near the threshold)."""

    def __init__(self, table: Any, name: str, fallback: tuple[Any, ...] | None = None) -> None:
        self.table, self.canonical_name, self.fallback = table, name, fallback
        self._rows: dict[str, int] | None = None
        self._matrix: np.ndarray | None = None
        self._extra: dict[str, np.ndarray] = {}  # keywords embedded here
        self._float32: VectorLookup | None = None

    def in_float32(self) -> VectorLookup | None:
        """The lookup of this model's float32 embeddings (each keyword embedded once, when asked
        for), if this table holds half precision's; None if it holds float32's or has no model."""
        if self.fallback is None or len(self.fallback) < 4 or self.fallback[3] == "float32":
            return None
        if self._float32 is None:
            self._float32 = VectorLookup(vector_table([]), self.canonical_name, (*self.fallback[:3], "float32"))
        return self._float32

    def _build(self) -> None:
        table = self.table.combine_chunks() if self.table.num_rows else self.table
        width = table.schema.field("vector").type.list_size
        self._matrix = (
            table.column("vector").chunk(0).flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
            if table.num_rows
            else np.zeros((0, width), np.float32)
        )
        self._rows = {keyword: row for row, keyword in enumerate(python_values(table.column("keyword")))}

    def encode(self, texts: Any, **_: Any) -> np.ndarray:
        import pyarrow as pa

        if self._rows is None:
            self._build()
        rows, extra = self._rows, self._extra
        missing = list(dict.fromkeys(text for text in texts if text not in rows and text not in extra))
        if missing:
            if self.fallback is None:
                raise ValueError(f"no precomputed embedding for the keyword {missing[0]!r} ({len(missing)} missing)")
            embedded = embed_keywords(pa.table({"keyword": pa.array(missing, pa.string())}), *self.fallback)
            width = embedded.schema.field("vector").type.list_size
            vectors = embedded.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, width)
            extra.update(zip(missing, vectors.astype(np.float32)))
        if not len(texts):
            return np.zeros((0, self._matrix.shape[1]), dtype=np.float32)
        if not extra:
            return self._matrix[[rows[text] for text in texts]]
        return np.stack([self._matrix[rows[text]] if text in rows else extra[text] for text in texts])


class ProcessVectorLookup:
    """A model object (for `model=`) that pickles cheaply to the engines' workers: each worker
    process builds its `VectorLookup` once, from the table `_table()` fetches (Ray's object
    store, Spark's broadcast), and keeps it for the next blocks."""

    _lookups: dict[str, VectorLookup]  # per process: the lookup of the latest table, by `_key()`

    def __init__(self, name: str, fallback: tuple[Any, str | None, int, str]) -> None:
        self.canonical_name, self.fallback = name, fallback

    def _key(self) -> str:
        raise NotImplementedError

    def _table(self) -> Any:
        raise NotImplementedError

    def lookup(self) -> VectorLookup:
        key = self._key()
        lookup = self._lookups.get(key)
        if lookup is None:
            self._lookups.clear()  # another evaluation's vectors: let them go
            lookup = self._lookups[key] = VectorLookup(self._table(), self.canonical_name, self.fallback)
        return lookup

    def encode(self, texts: Any, **arguments: Any) -> Any:
        return self.lookup().encode(texts, **arguments)

    def in_float32(self) -> VectorLookup | None:
        return self.lookup().in_float32()


def vector_table(tables: Iterable[Any]) -> Any:
    """One (keyword, vector float32 x width) Arrow table of `embed_keywords`' tables."""
    import pyarrow as pa

    found = [table for table in tables if table.num_rows]
    if not found:
        return pa.table({"keyword": pa.array([], pa.string()), "vector": pa.array([], pa.list_(pa.float32(), 1))})
    width = found[0].schema.field("vector").type.list_size
    kind = pa.schema([("keyword", pa.string()), ("vector", pa.list_(pa.float32(), width))])
    return pa.concat_tables([table.select(["keyword", "vector"]).cast(kind) for table in found]).combine_chunks()


def model_name(model: Any) -> str:
    """How a `MetricState` names a model option: its name, else `canonical_name` or its type."""
    if isinstance(model, str):
        return model
    name = getattr(model, "canonical_name", None)
    if isinstance(name, str):
        return name
    return f"{type(model).__module__}.{type(model).__qualname__}"
