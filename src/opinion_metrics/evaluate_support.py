"""Glue for the `evaluate` modules under `metrics/` (imports neither evaluate nor datasets).

`evaluate` type-checks only the first row of a batch, silently casts later rows
(`[1, 2]` becomes `['1', '2']`) and moves every keyword through Python objects twice. The
modules mix `CheckedArrowInputs` in front of `evaluate.Metric` instead: every row is
validated (errors name the example), Arrow columns are built directly (a gold list
repeated for every review is converted once), and `_compute` reads Arrow columns back
(format "arrow"), rebuilding a repeated gold list once.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .core.tuple_shapes import check_tuple_item
from .core.tuples import check_tuple_row
from .core.validation import (
    as_number,
    check_corpus,
    check_device,
    check_keyword,
    check_keyword_list,
    check_same_length,
    check_score,
    check_text,
    rating_problem,
    short_number,
)
from .io.rows import repeated_rows, string_buffers

KEYWORDS = "keywords"  # list of str per example


SCORES = "scores"  # list of finite numbers per example (range checked at compute)


SENTIMENTS = "sentiments"  # like SCORES


RATINGS = "ratings"  # list of integer-valued numbers per example


TEXTS = "texts"  # a str or None per example


TUPLES = "tuples"  # a list of sentiment tuples per example (predictions: or a model's generated text)


def _check_keyword_rows(rows: Sequence[Any], name: str, offset: int) -> list[Any]:
    """Check every row of a keyword column; a list object given many times is checked once."""
    checked: list[Any] = []
    seen: set[int] = set()
    for index, row in enumerate(rows):
        if id(row) not in seen:
            row = check_keyword_list(row, name, offset + index)
            for position, keyword in enumerate(row):
                check_keyword(keyword, name, offset + index, position)
            seen.add(id(rows[index]))
        checked.append(row)
    return checked


def _check_score_rows(rows: Sequence[Any], name: str, offset: int) -> list[Any]:
    """Check that every row of a score column holds finite numbers, with the library's
    messages (the range depends on `clip_scores`, a compute option, and is checked there)."""
    checked = []
    for index, row in enumerate(rows):
        row = [as_number(score) for score in check_keyword_list(row, name, offset + index, "scores (numbers)")]
        for position, score in enumerate(row):
            check_score(score, name, offset + index, position, None, clip=True)
        checked.append(row)
    return checked


_INT32 = 2**31  # ratings are stored as Arrow int32


def _check_rating_rows(rows: Sequence[Any], name: str, offset: int) -> list[Any]:
    """Check that every row of a rating column holds integer-valued numbers that fit the
    stored int32 (the rating range and the row length depend on compute options and are
    checked there)."""
    checked = []
    for index, row in enumerate(rows):
        row = check_keyword_list(row, name, offset + index, "ratings (one integer per aspect)")
        for position, value in enumerate(row):
            value = as_number(value)
            problem = rating_problem(value)  # the range depends on compute options: checked there
            if problem:
                raise ValueError(f"{name}: example {offset + index}, aspect {position}: {problem}")
            if not -_INT32 <= value < _INT32:
                shown = short_number(int(value))  # a 301-digit rating by its size
                raise ValueError(f"{name}: example {offset + index}, aspect {position}: rating {shown} is out of range")
        checked.append([int(value) for value in row])
    return checked


def _check_text_rows(rows: Sequence[Any], name: str, offset: int) -> list[Any]:
    for index, row in enumerate(rows):
        check_text(row, name, offset + index, allow_none=True)
    return list(rows)


def _check_tuple_rows(rows: Sequence[Any], name: str, offset: int) -> list[Any]:
    checked = []
    for index, row in enumerate(rows):
        if not (isinstance(row, str) and name == "predictions"):  # generated text: read at compute
            row = check_tuple_row(row, name, offset + index)
            for position, item in enumerate(row):
                check_tuple_item(item, name, offset + index, position)
        checked.append(row)
    return checked


_CHECKS = {
    KEYWORDS: _check_keyword_rows,
    SCORES: _check_score_rows,
    SENTIMENTS: _check_score_rows,
    RATINGS: _check_rating_rows,
    TEXTS: _check_text_rows,
    TUPLES: _check_tuple_rows,
}


def _keyword_array(rows: list[Any], arrow_type: Any) -> Any:
    """Arrow list<string> array; repeated rows (`repeated_rows`) are converted once and
    their buffers repeated with numpy."""
    import pyarrow as pa

    first, group = repeated_rows(rows)
    indices = np.asarray(group, dtype=np.int64)
    if len(first) * 2 > len(rows):
        return pa.array(rows, type=arrow_type)
    distinct = pa.array([rows[i] for i in first], type=arrow_type)
    row_offsets = np.asarray(distinct.offsets, dtype=np.int64)
    value_offsets, data = string_buffers(distinct.values)
    string_lengths = np.diff(value_offsets)
    lengths_of = [string_lengths[row_offsets[g] : row_offsets[g + 1]] for g in range(len(distinct))]
    bytes_of = [
        np.frombuffer(data[value_offsets[row_offsets[g]] : value_offsets[row_offsets[g + 1]]], dtype=np.uint8)
        for g in range(len(distinct))
    ]
    total_bytes = sum(len(bytes_of[g]) for g in indices.tolist())
    if total_bytes >= 2**31:  # beyond 32-bit offsets: let Arrow chunk it
        return pa.array(rows, type=arrow_type)
    new_lengths = np.concatenate([lengths_of[g] for g in indices.tolist()] or [np.zeros(0, np.int32)])
    new_value_offsets = np.zeros(len(new_lengths) + 1, dtype=np.int32)
    np.cumsum(new_lengths, out=new_value_offsets[1:])
    new_data = np.concatenate([bytes_of[g] for g in indices.tolist()] or [np.zeros(0, np.uint8)])
    strings = pa.StringArray.from_buffers(len(new_lengths), pa.py_buffer(new_value_offsets), pa.py_buffer(new_data))
    new_row_offsets = np.zeros(len(rows) + 1, dtype=np.int32)
    np.cumsum(np.diff(row_offsets)[indices], out=new_row_offsets[1:])
    return pa.ListArray.from_arrays(pa.array(new_row_offsets), strings, type=arrow_type)


@functools.cache
def _compute_parameters(module_class: type) -> tuple[str, ...]:
    """The parameters of a module class's `_compute` (after `self`), read once per class."""
    return tuple(inspect.signature(module_class._compute).parameters)[1:]


class CheckedArrowInputs:
    """Mixin for `evaluate.Metric` subclasses whose inputs are keyword lists and scores.

    Subclasses set `input_kinds`: feature name -> one of the kinds below; a scores or
    sentiments column is checked row by row against the "predictions" column's lengths.
    Inputs named in `optional_inputs` may be left out: they reach `_compute` as None
    (directly) or as a column of nulls (through `add_batch`; see `optional_column`). An
    optional list column is given for every batch or for none.
    """

    input_kinds: dict[str, str] = {}
    optional_inputs: frozenset[str] = frozenset()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # `_compute` reads Arrow columns. MetricInfo(format=...) only accepts flat Value
        # features, so the format is set after construction.
        self.info.format = "arrow"

    def compute(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> dict | None:
        """Compute the metric; see the module's description for inputs and options.

        Options are checked before anything added with `add` / `add_batch` is consumed, so a
        call with a misspelt option or a bad value can be corrected and repeated.

        In a single process, inputs given directly with nothing added before go straight to
        `_compute`: evaluate's Arrow cache exists to accumulate `add` / `add_batch` calls and
        to gather processes, and writing a gold list repeated for every review to it and
        reading it back costs several times the metric itself.
        """
        combination = _combination(sys._getframe(1))
        if combination is not None:
            references, kwargs = self._combined_arguments(combination, references, kwargs)
        names = list(self._feature_names())
        options = {name: value for name, value in kwargs.items() if name not in names}
        self._check_options(options)
        if predictions is None and references is None:
            missing = getattr(self, "_texts_missing", [])
            if options.get("presence", "all") != "all" and missing:  # before evaluate consumes the added rows
                message = f"presence={options['presence']!r} needs texts: add them with add_batch(..., texts=...)"
                if missing != [(0, self._examples_added)]:  # some batches had them: name the examples without
                    spans = ", ".join(f"{a}" if b - a == 1 else f"{a}-{b - 1}" for a, b in missing)
                    message += f"; examples {spans} were added without texts (their batches gave none)"
                raise ValueError(message)
            return self._compute_added(options)
        columns = {name: value for name, value in kwargs.items() if name in names}
        inputs = self._inputs({"predictions": predictions, "references": references, **columns})
        if self.num_process == 1 and self.writer is None:
            return self._compute(**inputs, **options)
        before = 0 if self.writer is None else self._examples_added
        self.add_batch(**inputs)
        return self._compute_added(options, kept=before)

    def _combined_arguments(
        self, modules: list[Any], references: Any, kwargs: dict[str, Any]
    ) -> tuple[Any, dict[str, Any]]:
        """Under `evaluate.combine(...).compute`, which passes every argument to every module:
        the references, inputs and options this module takes. An argument no combined module
        takes is an error naming the closest; the first of this project's modules checks every
        module's options, before any of them consumes its added rows."""
        takes = {id(module): _arguments_of(module) for module in modules}
        known = set().union(*takes.values())
        for name in kwargs:
            if name not in known:
                options = sorted(known - {"predictions", "references"})
                close = difflib.get_close_matches(name, options, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(
                    f"no module of this combination ({', '.join(module.name for module in modules)}) takes "
                    f"{name!r}{hint}; their inputs and options are {options}"
                )
        ours = [module for module in modules if isinstance(module, CheckedArrowInputs)]
        if ours and ours[0] is self:
            for module in ours[1:]:
                inputs = set(module._feature_names())
                module._check_options(
                    {name: value for name, value in kwargs.items() if name in takes[id(module)] - inputs}
                )
        mine = takes[id(self)]
        return (references if "references" in mine else None), {
            name: value for name, value in kwargs.items() if name in mine
        }

    def _compute_added(self, options: dict[str, Any], kept: int | None = None) -> dict | None:
        """evaluate's `compute` over the added rows; if `_compute` fails (a model that loads
        but fails on a keyword, a sentiment function that fails on a text), the first `kept`
        rows (all by default) are added back, so the same call with a corrected option works."""
        if self.num_process > 1 or self.writer is None:  # other processes hold rows too: nothing to restore
            return super().compute(**options)
        saved = (
            self.selected_feature_format,
            self._examples_added,
            dict(self._optional_given),
            list(self._texts_missing),
        )
        compute = self._compute
        failed: dict[str, Any] = {}

        def guarded(**inputs: Any) -> Any:
            try:
                return compute(**inputs)
            except Exception:
                failed["rows"] = _in_memory_table({name: inputs[name] for name in self.input_kinds})
                raise

        self._compute = guarded  # an instance attribute, for this call only
        try:
            return super().compute(**options)
        except Exception:
            if "rows" in failed:
                self._restore_rows(failed["rows"], saved, saved[1] if kept is None else kept)
            raise
        finally:
            del self._compute

    def _restore_rows(self, rows: Any, saved: tuple[Any, ...], kept: int) -> None:
        """Release evaluate's cache files as its `compute` would, then add `rows[:kept]` again."""
        import os

        self.data = self.writer = None
        if not self.keep_in_memory:
            for filelock, file_path in reversed(list(zip(self.filelocks, self.file_paths))):
                if os.path.exists(file_path):
                    os.remove(file_path)
                filelock.release()
        self.selected_feature_format, _, self._optional_given, missing = saved
        self._texts_missing = [(a, min(b, kept)) for a, b in missing if a < kept]
        self._init_writer()
        self.writer.write_table(rows.slice(0, kept))
        self._examples_added = kept

    def _check_options(self, options: dict[str, Any]) -> None:
        """Raise ValueError for an option `_compute` does not take or a bad option value."""
        from .families.registry import check_options

        names = set(self._feature_names())
        accepted = [name for name in _compute_parameters(type(self)) if name not in names]
        for name in options:
            if name not in accepted:
                close = difflib.get_close_matches(name, accepted, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"{self.name}: unknown option {name!r}{hint}; the options are {accepted}")
        check_options(self.name, options)  # the module's name is its family's
        if isinstance(options.get("model"), str):  # an unknown name or path fails before the rows are consumed
            from .embeddings.encoder import load_model

            load_model(options["model"], check_device(options.get("device")))  # loaded once: compute reuses it

    def _feature_names(self) -> list[str]:
        """The declared inputs. `evaluate.combine(...).add_batch / add` looks every declared
        input up in what it was given: there, an optional input left out is left out."""
        names = list(super()._feature_names())
        caller = sys._getframe(1)
        batch = caller.f_locals.get("batch") if caller.f_code.co_name in ("add", "add_batch") else None
        if not isinstance(batch, dict) or type(caller.f_locals.get("self")).__name__ != "CombinedEvaluations":
            return names
        missing = [name for name in names if name not in batch and name not in self.optional_inputs]
        if missing:
            raise ValueError(
                f"{self.name} needs {', '.join(missing)}: pass {missing[0]}=... to {caller.f_code.co_name}"
            )
        return [name for name in names if name in batch or name not in self.optional_inputs]

    def _inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The feature columns of `batch`; optional ones absent are None, others an error."""
        names = list(self._feature_names())
        unknown = [name for name in batch if name not in names and batch[name] is not None]
        if unknown:
            raise ValueError(f"Bad inputs for evaluation module: {unknown}. All required inputs are {names}")
        missing = [name for name in names if batch.get(name) is None and name not in self.optional_inputs]
        if missing:
            raise ValueError(f"missing inputs {missing}; this module needs {names}")
        return {name: batch.get(name) for name in names}

    def add_batch(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> None:
        """Add a batch of examples (every row validated; errors name the example)."""
        inputs = self._inputs({"predictions": predictions, "references": references, **kwargs})
        for name, kind in self.input_kinds.items():  # a table of ratings (a pandas DataFrame): its rows
            if (
                kind == RATINGS
                and hasattr(inputs[name], "columns")
                and callable(getattr(inputs[name], "to_numpy", None))
            ):
                inputs[name] = inputs[name].to_numpy()
        predictions = inputs["predictions"]
        n = len(check_corpus(predictions, "predictions"))
        columns = {
            name: [None] * n if column is None else check_corpus(column, name) for name, column in inputs.items()
        }
        if n or any(len(column) != n for column in columns.values()):
            keyword_sides = [name for name, kind in self.input_kinds.items() if kind == KEYWORDS]
            check_same_length(keyword_sides, **columns)  # a flat list (one example's), or an example without a partner
        if self.writer is None:
            self.selected_feature_format = self._infer_feature_from_batch(columns)
            self._init_writer()
            self._examples_added = 0
            self._optional_given = {}
            self._texts_missing: list[tuple[int, int]] = []  # [start, stop) of the batches added without texts
        offset = self._examples_added
        self._check_optional_consistency(inputs, offset, n)
        for name, kind in self.input_kinds.items():
            if inputs[name] is None:  # an optional input left out: a column of nulls
                continue
            columns[name] = _CHECKS[kind](columns[name], name, offset)
            if kind in (SCORES, SENTIMENTS):
                for index, (keywords, scores) in enumerate(zip(columns["predictions"], columns[name])):
                    if len(keywords) != len(scores):
                        raise ValueError(
                            f"{name}: example {offset + index} has {len(keywords)} predictions but {len(scores)} {name}"
                        )
        import pyarrow as pa

        schema = self.selected_feature_format.arrow_schema
        arrays = [
            pa.nulls(n, type=field.type)
            if inputs[field.name] is None
            else _keyword_array(columns[field.name], field.type)
            if self.input_kinds[field.name] == KEYWORDS
            else pa.array(columns[field.name], type=field.type)
            for field in schema
        ]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
        if "texts" in self.optional_inputs and inputs["texts"] is None and n:
            if self._texts_missing and self._texts_missing[-1][1] == offset:
                self._texts_missing[-1] = (self._texts_missing[-1][0], offset + n)
            else:
                self._texts_missing.append((offset, offset + n))
        self._examples_added = offset + n
        self._optional_given.update({name: inputs[name] is not None for name in self.optional_inputs})

    def _check_optional_consistency(self, inputs: dict[str, Any], offset: int, n: int) -> None:
        """An optional list column (such as `prediction_sentiments`) is given for every batch
        or for none: `compute` cannot mix examples with and without it. (A text may be
        missing for any example.)"""
        for name in self.optional_inputs:
            if self.input_kinds[name] == TEXTS:
                continue
            given = inputs[name] is not None
            earlier = self._optional_given.get(name, given)
            if given != earlier:
                raise ValueError(
                    f"{name}: examples 0-{offset - 1} were added {'with' if earlier else 'without'} {name} but this "
                    f"batch (examples {offset}-{offset + n - 1}) has {'none' if earlier else 'them'}; give {name} "
                    "for every batch or for none"
                )

    def add(self, *, prediction: Any = None, reference: Any = None, **kwargs: Any) -> None:
        """Add one example; other inputs (such as `scores`) by their feature name. An optional
        input left out or None is absent for this example. `predictions=` / `references=`
        (what `evaluate.combine(...).add` passes) name the same one example."""
        for singular, plural in (("prediction", "predictions"), ("reference", "references")):
            if plural in kwargs:
                if (prediction if singular == "prediction" else reference) is not None:
                    raise ValueError(f"add takes one example: give {singular}= or {plural}=, not both")
                if singular == "prediction":
                    prediction = kwargs.pop(plural)
                else:
                    reference = kwargs.pop(plural)
        if self.input_kinds["predictions"] == KEYWORDS and _is_batch(prediction):
            raise ValueError(
                "add takes one example (a list of keywords), got a list of lists: use add_batch for several examples"
            )
        self.add_batch(
            predictions=[prediction],
            references=None if reference is None else [reference],
            **{name: None if value is None else [value] for name, value in kwargs.items()},
        )


def _combination(caller: Any) -> list[Any] | None:
    """The modules of the `evaluate.combine(...)` whose `compute` is `caller` (a frame), or None."""
    combined = caller.f_locals.get("self")
    if caller.f_code.co_name != "compute" or type(combined).__name__ != "CombinedEvaluations":
        return None
    return list(combined.evaluation_modules)


def _arguments_of(module: Any) -> set[str]:
    """The inputs and options a module's `compute` takes (its features and `_compute`'s parameters)."""
    return {*module._feature_names(), *_compute_parameters(type(module))}


def _is_batch(example: Any) -> bool:
    """Whether one example's keywords look like several examples' (a list of lists)."""
    return isinstance(example, (list, tuple)) and len(example) > 0 and isinstance(example[0], (list, tuple))


def _in_memory_table(columns: dict[str, Any]) -> Any:
    """An Arrow table of `_compute`'s inputs, copied into memory (evaluate deletes its cache files)."""
    import pyarrow as pa

    table = pa.table(
        {
            name: column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            for name, column in columns.items()
        }
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return pa.ipc.open_stream(sink.getvalue()).read_all()
