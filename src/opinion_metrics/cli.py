"""`opinion-metrics`: evaluate a file of predictions from the command line.

    opinion-metrics examples/reviews.jsonl --by model
    opinion-metrics reviews.jsonl.gz --predictions keywords_base --gold ground_truth.jsonl --gold-key movie \\
        --gold-column keywords --metrics keyword_prf semantic_keyword_prf --output results.json --plot results.png
    opinion-metrics ratings.csv --metrics aspect_sentiment_score --aspects giai_tri,luu_tru --prediction-prefix pred_
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .aspects import DEFAULT_ASPECTS, aspect_sentiment_score
from .grouping import pool_by_group
from .keyword_prf import keyword_prf
from .tables import load_table, rating_rows
from .weighted_keyword_prf import weighted_keyword_prf

FAMILIES = (
    "keyword_prf",
    "weighted_keyword_prf",
    "semantic_keyword_prf",
    "sentiment_appropriateness",
    "aspect_sentiment_score",
)
Results = dict[str, dict[str, dict[str, float]]]


def _column(table: dict[str, list[Any]], name: str, option: str) -> list[Any]:
    if name not in table:
        raise ValueError(f"column {name!r} not found (columns: {', '.join(table)}); choose one with {option}")
    return table[name]


def attach_gold(table: dict[str, list[Any]], args: argparse.Namespace) -> None:
    """Give every row the gold list of its key from a separate file (e.g. gold per movie)."""
    gold = load_table(args.gold, [args.gold_column], [])
    keys, lists = _column(gold, args.gold_key, "--gold-key"), _column(gold, args.gold_column, "--gold-column")
    by_key = {key: keywords for key, keywords in zip(keys, lists)}
    missing = sorted({str(key) for key in _column(table, args.gold_key, "--gold-key") if key not in by_key})
    if missing:
        raise ValueError(f"no gold keywords in {args.gold.name} for {args.gold_key} = {', '.join(missing[:5])}")
    table[args.references] = [by_key[key] for key in table[args.gold_key]]


def _compute(family: str, rows: list[int], table: dict[str, list[Any]], args: argparse.Namespace) -> dict[str, float]:
    if family == "aspect_sentiment_score":
        aspects = args.aspects or list(DEFAULT_ASPECTS)
        for aspect in aspects:
            _column(table, aspect, "--aspects")
            _column(table, args.prediction_prefix + aspect, "--prediction-prefix")
        predicted, gold = rating_rows(table, aspects, args.prediction_prefix), rating_rows(table, aspects)
        return aspect_sentiment_score(
            [predicted[i] for i in rows],
            [gold[i] for i in rows],
            aspects=aspects,
            min_rating=args.min_rating,
            max_rating=args.max_rating,
        )
    predictions = [_column(table, args.predictions, "--predictions")[i] for i in rows]
    references = [_column(table, args.references, "--references")[i] for i in rows]
    scores = [table[args.scores][i] for i in rows] if args.scores in table else None
    if args.group:
        groups = _column(table, args.group, "--group")
        pooled = pool_by_group(
            predictions,
            references,
            [groups[i] for i in rows],
            scores=scores,
            normalize=args.normalize,
            stemmer=args.stemmer,
            clip_scores=args.clip_scores,
        )
        predictions, references, scores = pooled.predictions, pooled.references, pooled.scores
    options = {"match": args.match, "normalize": args.normalize, "stemmer": args.stemmer, "average": args.average}
    options.update(top_k=args.top_k, zero_division=args.zero_division)
    if args.one_to_one is not None:  # else each family's default
        options["one_to_one"] = args.one_to_one
    if family == "keyword_prf":
        return keyword_prf(predictions, references, **options)
    if family == "weighted_keyword_prf":
        if scores is None:
            raise ValueError(f"weighted_keyword_prf needs a scores column: {args.scores!r} not found; use --scores")
        return weighted_keyword_prf(
            predictions,
            scores,
            references,
            k=args.k,
            relevance=args.relevance,
            clip_scores=args.clip_scores,
            **options,
        )
    if family == "semantic_keyword_prf":
        from .semantic import DEFAULT_MODEL, semantic_keyword_prf

        options.pop("match")
        return semantic_keyword_prf(
            predictions, references, model=args.model or DEFAULT_MODEL, threshold=args.threshold, **options
        )
    from .sentiment import sentiment_appropriateness

    texts = [table[args.texts][i] for i in rows] if args.texts in table and not args.group else None
    return sentiment_appropriateness(
        predictions, references, texts=texts, normalize=args.normalize, stemmer=args.stemmer
    )


def _default_families(table: dict[str, list[Any]], args: argparse.Namespace) -> list[str]:
    if args.predictions not in table and all(a in table for a in args.aspects or DEFAULT_ASPECTS):
        return ["aspect_sentiment_score"]
    return ["keyword_prf"] + (["weighted_keyword_prf"] if args.scores in table else [])


def evaluate_table(table: dict[str, list[Any]], args: argparse.Namespace) -> Results:
    """{subset: {family: results}}, one subset per value of `--by` (or "all")."""
    from tqdm.auto import tqdm

    if args.gold:
        attach_gold(table, args)
    families = args.metrics or _default_families(table, args)
    if "all" in families:
        families = [family for family in FAMILIES[:4] if family != "weighted_keyword_prf" or args.scores in table]
    n = len(next(iter(table.values()), []))
    subsets: dict[str, list[int]] = {"all": list(range(n))}
    if args.by:
        subsets = {}
        for index, value in enumerate(_column(table, args.by, "--by")):
            subsets.setdefault(str(value), []).append(index)
    results: Results = {subset: {} for subset in subsets}
    steps = [(subset, family) for subset in subsets for family in families]
    progress = tqdm(steps, desc="evaluating", unit="metric", disable=len(steps) < 2 or n < 1000, leave=False)
    for subset, family in progress:
        progress.set_postfix_str(f"{family} {subset}")
        results[subset][family] = _compute(family, subsets[subset], table, args)
    return results


def format_tables(results: Results, label: str) -> str:
    """One table per metric family: a row per subset, a column per metric."""
    blocks = []
    families = list(dict.fromkeys(family for by_family in results.values() for family in by_family))
    for family in families:
        rows = [(subset, by_family[family]) for subset, by_family in results.items() if family in by_family]
        names = list(dict.fromkeys(name for _, values in rows for name in values))
        width = max(len(label), *(len(subset) for subset, _ in rows))
        lines = [family, "  ".join([label.ljust(width), *(name.rjust(max(len(name), 6)) for name in names)])]
        for subset, values in rows:
            cells = [(f"{values[name]:.4f}" if name in values else "-").rjust(max(len(name), 6)) for name in names]
            lines.append("  ".join([subset.ljust(width), *cells]))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def plot_results(results: Results, path: Path) -> None:
    """One bar chart per family: each metric, a bar per subset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = list(dict.fromkeys(family for by_family in results.values() for family in by_family))
    figure, axes = plt.subplots(len(families), 1, figsize=(9, 3.2 * len(families)), squeeze=False, layout="constrained")
    subsets = list(results)
    for axis, family in zip(axes[:, 0], families):
        names = list(dict.fromkeys(name for subset in subsets for name in results[subset].get(family, {})))
        width = 0.8 / len(subsets)
        for position, subset in enumerate(subsets):
            values = [results[subset].get(family, {}).get(name, 0.0) for name in names]
            axis.bar([i + position * width for i in range(len(names))], values, width, label=subset)
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names, rotation=20, ha="right")
        axis.set_ylim(0, 1.05)
        axis.set_title(family)
        if len(subsets) > 1:
            axis.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.savefig(path, dpi=120)
    plt.close(figure)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="opinion-metrics",
        description="Evaluate keyword or aspect-rating predictions (the metric families of SPEC.md).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("file", type=Path, help=".jsonl, .json, .csv, .tsv (or .gz), .parquet, or a datasets folder")
    parser.add_argument(
        "--metrics",
        nargs="+",
        choices=[*FAMILIES, "all"],
        help="families to compute; 'all': every keyword family the columns allow (default: the lexical ones)",
    )
    columns = parser.add_argument_group("columns")
    columns.add_argument("--predictions", default="predictions", help="predicted keyword lists (default: predictions)")
    columns.add_argument("--references", default="references", help="gold keyword lists (default: references)")
    columns.add_argument("--scores", default="scores", help="prediction scores (default: scores)")
    columns.add_argument("--texts", default="review", help="review texts, for sentiment (default: review)")
    columns.add_argument("--by", help="split by this column: one result row per value (e.g. the model)")
    columns.add_argument("--group", help="pool by this column before evaluating (e.g. the movie)")
    columns.add_argument("--gold", type=Path, help="a separate file of gold lists, joined on --gold-key")
    columns.add_argument("--gold-key", default="movie", help="the join column in both files (default: movie)")
    columns.add_argument("--gold-column", default="keywords", help="gold lists in --gold (default: keywords)")
    columns.add_argument(
        "--aspects", type=lambda v: [a.strip() for a in v.split(",") if a.strip()], help="aspect columns"
    )
    columns.add_argument("--prediction-prefix", default="pred_", help="predicted aspect columns: prefix + aspect")
    options = parser.add_argument_group("metric options")
    options.add_argument("--match", default="substring", choices=["exact", "substring", "token"])
    options.add_argument("--normalize", default="default", choices=["default", "ascii", "none"])
    options.add_argument("--stemmer", choices=["porter"])
    options.add_argument("--average", default="macro", choices=["macro", "micro"])
    options.add_argument(
        "--one-to-one",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one-to-one matching (default: each family's, on except for semantic)",
    )
    options.add_argument("--top-k", type=_top_k, default=None, help="an integer, 'O' or 'M' (default: all)")
    options.add_argument("--k", type=int, default=5, help="rank cut-off of nDCG and MAP (default 5)")
    options.add_argument("--relevance", default="graded", choices=["graded", "binary"])
    options.add_argument("--clip-scores", action="store_true", help="clip scores into [0, 1]")
    options.add_argument("--zero-division", type=float, default=0.0)
    options.add_argument("--model", help="sentence-transformers model (default all-MiniLM-L6-v2)")
    options.add_argument("--threshold", type=float, default=0.75, help="semantic match threshold (default 0.75)")
    options.add_argument("--min-rating", type=int, default=1)
    options.add_argument("--max-rating", type=int, default=5)
    output = parser.add_argument_group("output")
    output.add_argument("--output", type=Path, help="also write the results as JSON")
    output.add_argument("--plot", type=Path, help="also draw the results as a PNG")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _top_k(value: str) -> int | str:
    return value if value in ("O", "M") else int(value)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
    if args.plot:
        plot_results(results, args.plot)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
