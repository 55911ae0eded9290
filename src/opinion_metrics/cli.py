"""`opinion-metrics`: evaluate a predictions / references file from the command line.

opinion-metrics examples/reviews.jsonl --by model
opinion-metrics data.csv --predictions keywords --references gold --group movie --output results.json
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .grouping import pool_by_group
from .keyword_prf import keyword_prf
from .weighted_keyword_prf import weighted_keyword_prf

FAMILIES = ("keyword_prf", "weighted_keyword_prf")
LIST_SEPARATOR = ";"


def _split_cell(value: Any) -> Any:
    """A CSV cell holding a list: "a; b; c" -> ["a", "b", "c"] (empty cell: [])."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(LIST_SEPARATOR) if item.strip()]
    return value


def _parse_scores(values: list[str], row: int, column: str) -> list[float]:
    try:
        return [float(value) for value in values]
    except ValueError:
        raise ValueError(f"{column}: row {row}: scores must be numbers separated by '{LIST_SEPARATOR}'") from None


def load_table(path: Path, list_columns: Sequence[str], score_columns: Sequence[str]) -> dict[str, list[Any]]:
    """Columns of a JSONL / JSON / CSV / Parquet file or a `datasets` folder saved with
    `save_to_disk`. In CSV, list cells hold items separated by ';'."""
    if not path.exists():
        raise ValueError(f"no such file or folder: {path}")
    suffix = path.suffix.lower()
    if path.is_dir():
        from datasets import load_from_disk

        dataset = load_from_disk(str(path))
        if hasattr(dataset, "keys"):  # a DatasetDict: take its first split
            dataset = dataset[next(iter(dataset.keys()))]
        return dataset.to_dict()
    if suffix == ".parquet":
        import pyarrow.parquet as parquet

        return parquet.read_table(path).to_pydict()
    if suffix in (".jsonl", ".json"):
        with open(path, encoding="utf-8") as lines:
            records = json.load(lines) if suffix == ".json" else [json.loads(line) for line in lines if line.strip()]
        if isinstance(records, dict):
            return records
        names = list(dict.fromkeys(name for record in records for name in record))
        return {name: [record.get(name) for record in records] for name in names}
    if suffix in (".csv", ".tsv"):
        with open(path, encoding="utf-8", newline="") as lines:
            records = list(csv.DictReader(lines, delimiter="\t" if suffix == ".tsv" else ","))
        table = {name: [record[name] for record in records] for name in (records[0] if records else {})}
        for name in list_columns:
            if name in table:
                table[name] = [_split_cell(value) for value in table[name]]
        for name in score_columns:
            if name in table:
                table[name] = [_parse_scores(values, row, name) for row, values in enumerate(table[name])]
        return table
    raise ValueError(f"unsupported file type {suffix!r}: use .jsonl, .json, .csv, .tsv, .parquet or a datasets folder")


def _column(table: dict[str, list[Any]], name: str, option: str) -> list[Any]:
    if name not in table:
        raise ValueError(f"column {name!r} not found (columns: {', '.join(table)}); choose one with {option}")
    return table[name]


def evaluate_table(table: dict[str, list[Any]], args: argparse.Namespace) -> dict[str, dict[str, dict[str, float]]]:
    """{subset: {family: results}}, one subset per value of `--by` (or "all")."""
    predictions = _column(table, args.predictions, "--predictions")
    references = _column(table, args.references, "--references")
    scores = table.get(args.scores)
    families = args.metrics or [f for f in FAMILIES if f != "weighted_keyword_prf" or scores is not None]
    if "weighted_keyword_prf" in families and scores is None:
        raise ValueError(f"weighted_keyword_prf needs a scores column: {args.scores!r} not found; use --scores")
    subsets = {"all": list(range(len(predictions)))}
    if args.by:
        subsets = {}
        for index, value in enumerate(_column(table, args.by, "--by")):
            subsets.setdefault(str(value), []).append(index)
    options = {"match": args.match, "normalize": args.normalize, "stemmer": args.stemmer, "average": args.average}
    options.update(one_to_one=args.one_to_one, top_k=args.top_k, zero_division=args.zero_division)
    results: dict[str, dict[str, dict[str, float]]] = {}
    for subset, rows in subsets.items():
        subset_predictions = [predictions[i] for i in rows]
        subset_references = [references[i] for i in rows]
        subset_scores = None if scores is None else [scores[i] for i in rows]
        if args.group:
            groups = _column(table, args.group, "--group")
            pooled = pool_by_group(
                subset_predictions,
                subset_references,
                [groups[i] for i in rows],
                scores=subset_scores,
                normalize=args.normalize,
                stemmer=args.stemmer,
                clip_scores=args.clip_scores,
            )
            subset_predictions, subset_references, subset_scores = pooled.predictions, pooled.references, pooled.scores
        results[subset] = {}
        for family in families:
            if family == "keyword_prf":
                results[subset][family] = keyword_prf(subset_predictions, subset_references, **options)
            elif family == "weighted_keyword_prf":
                results[subset][family] = weighted_keyword_prf(
                    subset_predictions,
                    subset_scores,
                    subset_references,
                    k=args.k,
                    relevance=args.relevance,
                    clip_scores=args.clip_scores,
                    **options,
                )
    return results


def format_tables(results: dict[str, dict[str, dict[str, float]]], label: str) -> str:
    """One table per metric family: a row per subset, a column per metric."""
    blocks = []
    families = list(dict.fromkeys(family for by_family in results.values() for family in by_family))
    for family in families:
        rows = [(subset, by_family[family]) for subset, by_family in results.items() if family in by_family]
        names = list(rows[0][1])
        width = max(len(label), *(len(subset) for subset, _ in rows))
        lines = [family, "  ".join([label.ljust(width), *(name.rjust(max(len(name), 6)) for name in names)])]
        for subset, values in rows:
            cells = [f"{values[name]:.4f}".rjust(max(len(name), 6)) for name in names]
            lines.append("  ".join([subset.ljust(width), *cells]))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="opinion-metrics",
        description="Evaluate keyword predictions against gold keywords (SPEC.md metric families).",
    )
    parser.add_argument("file", type=Path, help=".jsonl, .json, .csv, .tsv, .parquet, or a datasets folder")
    parser.add_argument("--metrics", nargs="+", choices=FAMILIES, help="families to compute (default: all that apply)")
    parser.add_argument("--predictions", default="predictions", help="column of predicted keyword lists")
    parser.add_argument("--references", default="references", help="column of gold keyword lists")
    parser.add_argument("--scores", default="scores", help="column of prediction score lists")
    parser.add_argument("--by", help="column to split by: one result row per value (e.g. the model)")
    parser.add_argument("--group", help="column to pool by before evaluating (e.g. the movie: global evaluation)")
    parser.add_argument("--match", default="substring", choices=["exact", "substring", "token"])
    parser.add_argument("--normalize", default="default", choices=["default", "ascii", "none"])
    parser.add_argument("--stemmer", choices=["porter"])
    parser.add_argument("--average", default="macro", choices=["macro", "micro"])
    parser.add_argument("--no-one-to-one", dest="one_to_one", action="store_false", help="count every match")
    parser.add_argument("--top-k", type=_top_k, default=None, help="an integer, 'O' or 'M' (default: all)")
    parser.add_argument("--k", type=int, default=5, help="rank cut-off of nDCG and MAP (default 5)")
    parser.add_argument("--relevance", default="graded", choices=["graded", "binary"])
    parser.add_argument("--clip-scores", action="store_true", help="clip scores into [0, 1]")
    parser.add_argument("--zero-division", type=float, default=0.0)
    parser.add_argument("--output", type=Path, help="also write the results as JSON")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _top_k(value: str) -> int | str:
    return value if value in ("O", "M") else int(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        table = load_table(args.file, [args.predictions, args.references], [args.scores])
        results = evaluate_table(table, args)
    except (ValueError, ImportError) as error:
        print(f"opinion-metrics: error: {error}", file=sys.stderr)
        return 2
    print(format_tables(results, args.by or ""))
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
