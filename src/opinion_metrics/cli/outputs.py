"""What `opinion-metrics` writes besides the tables: --output (JSON), --per-example (JSON
Lines or CSV, every example's values and what produced them) and --plot, each checked before
any work and written atomically.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..io.pairing import id_column
from ..view.text import left_out_reason
from .evaluation import Evaluation
from .inputs import UsageError


def _same_file(a: Path, b: Path) -> bool:
    """`a` and `b` name the same file or folder (after links), or `a` lies inside folder `b`."""
    try:
        if a.exists() and b.exists() and a.samefile(b):
            return True
    except OSError:
        pass
    resolved, folder = a.resolve(), b.resolve()
    return resolved == folder or (b.is_dir() and folder in resolved.parents)


def check_not_input(path: Path, option: str, inputs: Sequence[tuple[Path, str]]) -> None:
    """Fail before any work if `path` is one of the `inputs` ((path, what)), or lies in an input folder."""
    for given, what in inputs:
        if _same_file(path, given):
            raise UsageError(f"{option} {path} is the input {what} {given}; writing there would destroy it")


def check_output(path: Path, option: str) -> None:
    """Fail before any work if `path` cannot be written (a folder, its folder missing or
    read-only). Nothing is created."""
    if str(path) == "-":  # not standard output: the tables go there
        raise UsageError(f"{option} -: give a file name (the tables already go to standard output; /dev/stdout works)")
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    if not path.parent.is_dir():
        raise UsageError(f"{option} {path}: the folder {path.parent} does not exist")
    target = path.resolve()
    try:
        if path.exists() and not path.is_file():  # /dev/stdout, a pipe: written in place
            if not os.access(path, os.W_OK):
                raise PermissionError(13, "Permission denied")
        else:
            with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"):
                pass
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot write there ({error.strerror})") from None
    if path.is_file() and not os.access(path, os.W_OK):
        raise UsageError(f"{option} {path}: cannot write there (the file is read-only)")


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """`write(temporary)` to a file in the folder of `path` (of the file it links to), then
    rename it over that file: a write that fails (disk full, an error while drawing) leaves the
    old file whole. Something that is not a file (/dev/stdout, a pipe) is written in place."""
    if path.exists() and not path.is_file():
        write(path)
        return
    target = path.resolve()
    temporary = target.parent / f".{target.name}.{secrets.token_hex(6)}{target.suffix}"
    with open(temporary, "x"):  # a new file's mode as the umask says, like a plain write
        pass
    try:
        write(temporary)
        if target.exists():
            os.chmod(temporary, target.stat().st_mode & 0o7777)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


PER_EXAMPLE_FORMATS = (".jsonl", ".csv")


# Names of another format than --output's JSON (a table, compressed): refused, not filled with JSON.
OTHER_FORMATS = {".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".arrow", ".feather", ".ipc", ".gz", ".xlsx", ".xls"}


def per_example_records(evaluation: Evaluation, args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """Per system (subset), family and example: the columns that join it back to the input (the
    system's, the id's and the line's: `_Examples.identity`), the per-example values and the
    detail of `opinion_metrics.explain` under "detail". The aspect score is corpus-level: it has none."""
    from ..analysis.explain import explain

    for (name, family), (given, examples) in evaluation.inputs.items():
        if family == "aspect_sentiment_score":
            continue
        options = dict(given["options"])
        texts = options.pop("texts", None)
        sentiments = options.pop("prediction_sentiments", None)
        records = explain(
            family,
            given["predictions"],
            given.get("references"),
            scores=given.get("scores"),
            texts=texts,
            prediction_sentiments=sentiments,
            per_example=evaluation.per_example.get((name, family)),
            **options,
        )
        column = id_column(examples.table.columns) if args.id is None else args.id
        presence = options.get("presence", "all")
        for index, record in enumerate(records):
            values = record.pop("values")
            where = {**examples.system, **examples.identity(index, column)}
            if presence != "all":  # why an example has no values: the view leaves it out
                left_out = all(value is None for value in values.values())
                values["left_out"] = left_out_reason(presence) if left_out else None
            yield {**where, "family": family, **values, "detail": record}


def _flat(value: Any) -> Any:
    """A detail as one CSV cell: pairs as "prediction -> gold (cosine)", keywords with their
    sentiment, tokens with their count, keywords with their normalized form, lists joined by "; "."""
    if isinstance(value, list):
        return "; ".join(str(_flat(item)) for item in value)
    if isinstance(value, dict):
        if "prediction" in value:
            extra = [f"{value[key]:.4f}" for key in ("similarity", "score") if key in value]
            return f"{value['prediction']} -> {value['reference']}" + (f" ({', '.join(extra)})" if extra else "")
        if "keyword" in value:
            return f"{value['keyword']} ({value['sentiment']:.4f})"
        if "token" in value:
            return f"{value['token']} x{value['count']}"
        return "; ".join(f"{raw} -> {form}" for raw, form in value.items())  # keywords and their normalized forms
    if isinstance(value, (list, tuple)):
        return " = ".join(map(str, value))
    return value


def write_per_example(records: list[dict[str, Any]], path: Path) -> None:
    """Records of `per_example_records` as JSON Lines, or as CSV (a column per value and per
    detail), by the extension of `path`."""
    with open(path, "w", encoding="utf-8", newline="") as stream:
        if path.suffix.lower() == ".jsonl":
            for record in records:
                stream.write(json.dumps(record, ensure_ascii=False) + "\n")
            return
        rows = []
        for record in records:
            row = {key: value for key, value in record.items() if key != "detail"}
            for key, value in record["detail"].items():
                if key == "repeated":
                    value = ["=".join(group) for group in value]
                row[key] = _flat(value)
            rows.append(row)
        columns = list(dict.fromkeys(key for row in rows for key in row))
        writer = csv.DictWriter(stream, columns)
        writer.writeheader()
        writer.writerows(rows)


def _check_plot_format(path: Path, formats: dict[str, str]) -> None:
    """Fail before any work if matplotlib cannot write `path`'s format here (.pgf needs LaTeX)."""
    import matplotlib

    extension = path.suffix.lower().lstrip(".")
    if extension not in formats:
        supported = ", ".join(f".{name}" for name in sorted(formats))
        raise UsageError(f"--plot {path}: give a file name ending in one of {supported}")
    texsystem = matplotlib.rcParams["pgf.texsystem"]
    if extension == "pgf" and shutil.which(texsystem) is None:
        raise UsageError(f"--plot {path}: .pgf needs LaTeX ({texsystem}), which is not installed; try .pdf or .svg")


def _written_differences(evaluation: Evaluation) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """--output's comparison per subset, family and key: `compare_systems`'s values, and the
    report's Holm-adjusted p-value, pairs and smallest attainable p-value."""
    written: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for name, by_family in evaluation.comparisons.items():
        for family, by_key in by_family.items():
            for key, values in by_key.items():
                row = evaluation.differences[name][family][key]
                extra = {"p_value_holm": row.holm_p_value, "pairs": row.pairs, "differing_pairs": row.differing}
                extra["smallest_p_value"] = row.smallest_p_value
                written.setdefault(name, {}).setdefault(family, {})[key] = {**values, **extra}
    return written
