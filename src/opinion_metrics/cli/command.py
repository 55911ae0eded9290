"""`opinion-metrics`: evaluate a file of predictions from the command line.

    opinion-metrics examples/reviews.jsonl
    opinion-metrics reviews.jsonl.gz --gold ground_truth.jsonl --metrics all --plot results.png
    opinion-metrics examples/reviews.jsonl --baseline baseline --ci 0.95
    opinion-metrics ratings.csv --metrics aspect_sentiment_score --aspects giai_tri,luu_tru
    opinion-metrics examples/reviews.jsonl --explain --per-example errors.jsonl

Columns are found by their usual names (keywords or predictions, gold or references, ...; the
first line of output says which were found under other names): a `model` or `system` column
splits the rows into systems, scored one row each, and columns side by side such as keywords_tfidf
and keywords_yake are systems too (with scores_tfidf, ...). --gold joins gold lists per movie.

The tables: a row per system, each metric with its direction (higher or lower is better), the
best value of each column marked *, the examples per system and the options used; they fit the
terminal (or $COLUMNS), split into blocks rather than wrapped. --ci 0.95 adds each value's
bootstrap interval. --baseline NAME adds each system's difference from NAME (marked where
significant), then per metric a report: the difference, its interval, the p-value (Holm-adjusted
for several systems), the pairs compared and the smallest p-value they allow.

--explain adds each column's meaning and range. --per-example FILE (.jsonl or .csv) writes every
example's values and what produced them (matched pairs, cosine similarities, sentiments), with
the input's system, id and line to join it back. Progress goes to stderr (none with --quiet).

Exit status: 0 done, 1 the data cannot be evaluated, 2 a mistake in the command line.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, redirect_stderr
from typing import Any

from ..analysis.compare import DEFAULT_RESAMPLES
from ..core.positions import rename_example
from ..families.registry import FAMILIES as DECLARATIONS
from ..io.column_names import list_columns, number_columns, prediction_columns, tuple_columns
from ..io.read import read_table
from ..view.figures import plot_results
from ..view.significance import format_significance
from ..view.text import format_tables, marks_for, terminal_width
from .evaluation import evaluate_table, run_details
from .inputs import COMPARE_LEVEL, UsageError, _presences, _takes_presence, resolve_columns, side_by_side, system_split
from .outputs import (
    OTHER_FORMATS,
    PER_EXAMPLE_FORMATS,
    _check_plot_format,
    _same_file,
    _written_differences,
    check_not_input,
    check_output,
    per_example_records,
    write_atomically,
    write_per_example,
)
from .parser import build_parser, plot_formats


class _Speaker:
    """Rewrites library messages in the CLI's words: options as flags (`clip_scores=True` ->
    `--clip-scores`), input sides as the user's columns, and "example N" as the line in the file."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.flags = {
            action.dest: action
            for group in parser._action_groups
            if (group.title or "").startswith("metric options")
            for action in group._group_actions
        }
        names = "|".join(sorted(map(re.escape, self.flags), key=len, reverse=True))
        self.pattern = re.compile(rf"(?<![\w@'-])({names})(?:=([^\s,;:)]+))?(?!\w)")

    def _flag(self, match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        # a name with "_" is unambiguous; a plain word ("model") only as `name=...` or `name must`
        if "_" not in name and value is None and not match.string.startswith(" must", match.end()):
            return match.group(0)
        self.translated = True
        action = self.flags[name]
        flag = action.option_strings[0]
        if value is None:
            return flag
        if isinstance(action, argparse.BooleanOptionalAction):
            return flag if value == "True" else "--no-" + flag[2:]
        return f"{flag} {value.strip(chr(39))}"

    def __call__(self, message: str, locate: Callable[[str, int], str], sides: dict[str, str]) -> ValueError:
        """The message as a `UsageError` when it is about an option, else as a data error."""
        side = message.split(":", 1)[0] if ":" in message else ""
        located = rename_example(message, lambda example: locate(side, example))  # never inside a keyword
        if side in sides and sides[side] != side:
            located = f"{side} (column {sides[side]!r}){located[len(side) :]}"
        self.translated = False
        spoken = self.pattern.sub(self._flag, located)
        return UsageError(spoken) if self.translated and located == message else ValueError(spoken)


@contextmanager
def _quiet_third_party() -> Iterator[None]:
    """No progress bars or log lines from the model libraries (weights loading, downloads)
    while the command runs: the CLI's own progress display is the only one on stderr. The
    host's settings come back after it (`main` may run in a notebook, a test or a script)."""
    defaults = {
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TRANSFORMERS_VERBOSITY": "error",
        "TOKENIZERS_PARALLELISM": "false",
    }
    set_here = [name for name in defaults if name not in os.environ]
    os.environ.update({name: defaults[name] for name in set_here})
    names = ("transformers", "sentence_transformers", "huggingface_hub", "datasets", "evaluate")
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.ERROR)
    hub, transformers = sys.modules.get("huggingface_hub"), sys.modules.get("transformers")
    hub_bars = hub is not None and not hub.utils.are_progress_bars_disabled()
    transformers_bars = transformers is not None and transformers.utils.logging.is_progress_bar_enabled()
    if hub_bars:  # imported before the settings above: switch them off now
        hub.utils.disable_progress_bars()
    if transformers_bars:
        transformers.utils.logging.disable_progress_bar()
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        for name in set_here:
            os.environ.pop(name, None)
        if hub_bars:
            hub.utils.enable_progress_bars()
        if transformers_bars:
            transformers.utils.logging.enable_progress_bar()


@contextmanager
def _progress_display(quiet: bool) -> Iterator[None]:
    """With `quiet`, nothing on stderr while it runs (progress bars write there when they
    start); errors are reported after it."""
    if not quiet:
        yield
        return
    with open(os.devnull, "w", encoding="utf-8") as sink, redirect_stderr(sink):
        yield


def _printable_anywhere() -> None:
    """A character the console cannot show (an emoji in a model's name on a Windows console) is
    printed as its escape (\\U0001f600) instead of crashing the run."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """The command; its status: 0 done, 1 the data cannot be evaluated, 2 a mistake in the command line.
    A reader that stops early (`| head`) ends it quietly."""
    try:
        with _quiet_third_party():
            return _main(argv)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 0


def _main(argv: Sequence[str] | None) -> int:
    _printable_anywhere()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.output is not None and args.plot is not None and _same_file(args.output, args.plot):
            raise UsageError(f"--output and --plot name the same file {args.output}; give two files")
        if args.per_example is not None and args.per_example.suffix.lower() not in PER_EXAMPLE_FORMATS:
            raise UsageError(f"--per-example {args.per_example}: give a .jsonl or a .csv file")
        files = [(args.output, "--output"), (args.plot, "--plot"), (args.per_example, "--per-example")]
        named = [path.resolve() for path, _ in files if path is not None]
        if len(set(named)) < len(named):
            raise UsageError("--output, --plot and --per-example name the same file; give one file each")
        if args.plot is not None:
            try:
                formats = plot_formats()
            except ImportError:
                raise UsageError("--plot needs matplotlib: pip install matplotlib") from None
        inputs = [(args.file, "file")] + ([(args.gold, "--gold file")] if args.gold is not None else [])
        for path, option in files:
            if path is not None:
                check_not_input(path, option, inputs)
                check_output(path, option)
        if args.output is not None and args.output.suffix.lower() in OTHER_FORMATS:
            raise UsageError(f"--output {args.output}: the results are written as JSON; name a .json file")
        if args.plot is not None:
            _check_plot_format(args.plot, formats)
        predicted, gold = list(args.predictions or []), [args.references, args.gold_column if args.gold else None]
        lists = list_columns([*predicted, *gold])
        generated = getattr(args, "format", None) is not None  # the predictions are text (sentiment tuples)
        tuples = tuple_columns(predicted, gold, "sentiment_tuple_prf" in (args.metrics or []), generated)
        if generated:
            lists = [name for name in lists if name not in prediction_columns(predicted)]
        table = read_table(args.file, lists, number_columns([args.scores, args.prediction_sentiments]), lazy=True,
                           tuple_columns=tuples)  # fmt: skip
        found = resolve_columns(table, args)
        if found:
            print(found)
        with _progress_display(args.quiet):
            evaluation = evaluate_table(table, args, _Speaker(parser))
            if args.per_example is not None:
                per_example = list(per_example_records(evaluation, args))
    except (ValueError, ImportError) as error:
        return _report(error)
    results = evaluation.results
    system = "model" if side_by_side(args) else system_split(args) or ""
    label = "/".join(part for part in (system, args.by or "") if part)
    labels = dict.fromkeys(DECLARATIONS, label)
    if len(_presences(args)) > 1:
        labels.update({family: f"{label}/presence".lstrip("/") for family in DECLARATIONS if _takes_presence(family)})
    width, marks = terminal_width(), marks_for(sys.stdout)
    level = getattr(args, "confidence_level", None) or COMPARE_LEVEL
    marking = {"width": width, "marks": marks, "baseline": args.compare, "alpha": round(1 - level, 10)}
    counts, options = run_details(evaluation)
    views = {"groups": evaluation.groups, "within": evaluation.within}
    tables = format_tables(results, labels, counts, options, args.explain, **marking, **views,
                           differences=evaluation.differences, left_out=evaluation.left_out)  # fmt: skip
    print(tables)
    written: dict[str, Any] = results
    if args.compare is not None:
        n_resamples = getattr(args, "n_resamples", None) or DEFAULT_RESAMPLES
        report = format_significance(
            evaluation.differences,
            baseline=args.compare,
            label=labels,
            method=args.compare_method,
            level=level,
            n_resamples=n_resamples,
            width=width,
            marks=marks,
            presence={
                name: next((used["presence"] for used in by_family.values() if "presence" in used), "all")
                for name, by_family in options.items()
            },  # fmt: skip
            **views,
        )
        print("\n" + report)
        comparison = {"base": args.compare, "method": args.compare_method, "confidence_level": level}
        comparison["n_resamples"] = n_resamples
        written = {"results": results, "comparison": {**comparison, "differences": _written_differences(evaluation)}}
    outputs = []  # (path, write, what it wrote)
    if args.output:
        text = json.dumps(written, indent=2) + "\n"
        outputs.append((args.output, lambda path: path.write_text(text, encoding="utf-8"), ""))
    if args.per_example:
        rows = f" ({len(per_example)} rows: one per example, system and family)"
        outputs.append((args.per_example, lambda path: write_per_example(per_example, path), rows))
    if args.plot:
        names = list(results)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        subsets = f" ({label}: {shown})" if label else ""
        outputs.append((args.plot, lambda path: plot_results(results, path, f"{args.file.name}{subsets}"), ""))
    for target, write, what in outputs:
        try:
            write_atomically(target, write)
        except OSError as error:  # the folder vanished or filled up since the check
            return _report(ValueError(f"cannot write {target}: {error.strerror or error}"))
        except Exception as error:  # matplotlib's own failures while drawing come in many types
            if target is not args.plot:
                raise
            return _report(ValueError(f"cannot draw {target}: {error}"))
        print(("\n" if target is args.output else "") + f"wrote {target}{what}")
    return 0


def _report(error: Exception) -> int:
    """Print one line; exit status 2 for a mistake in the command line, 1 for the data."""
    print(f"opinion-metrics: error: {error}".replace("\n", " "), file=sys.stderr)
    usage = isinstance(error, (UsageError, ImportError)) or getattr(error, "usage", False)
    return 2 if usage else 1
