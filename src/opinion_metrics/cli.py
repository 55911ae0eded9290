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
import csv
import difflib
import io
import json
import logging
import math
import os
import re
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, redirect_stderr
from pathlib import Path
from typing import Any, NoReturn

from . import DEFINITIONS_URL, __version__
from .aspects import DEFAULT_ASPECTS, VIETNAMESE_COLUMNS
from .columns import NAMES, list_columns, number_columns
from .comparison import DEFAULT_RESAMPLES
from .families import FAMILIES as DECLARATIONS
from .families import Option
from .reading import (
    COMPARE_LEVEL,
    FAMILIES,
    NO_FLAG,
    Evaluation,
    UsageError,
    _presences,
    _semantic_installed,
    _takes_presence,
    evaluate_table,
    resolve_columns,
    run_details,
    side_by_side,
)
from .semantic import DEFAULT_MODEL
from .tables import id_column, read_table
from .validation import PRESENCES, parse_top_k
from .view import (
    format_significance,
    format_tables,
    left_out_reason,
    marks_for,
    plot_results,
    shown,
    terminal_width,
)


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
        located = re.sub(r"\bexample (\d+)", lambda m: locate(side, int(m.group(1))), message)
        if side in sides and sides[side] != side:
            located = f"{side} (column {sides[side]!r}){located[len(side) :]}"
        self.translated = False
        spoken = self.pattern.sub(self._flag, located)
        return UsageError(spoken) if self.translated and located == message else ValueError(spoken)


def _positive_int(value: str) -> int:
    if not re.fullmatch(r"\+?\d+", value.strip()) or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}")
    return int(value)


def _integer(value: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", value.strip()):
        raise argparse.ArgumentTypeError(f"must be an integer, got {value!r}")
    return int(value)


def _names_of(role: str) -> str:
    return ", ".join(NAMES[role])


def _family(value: str) -> list[str]:
    """--metrics: family names or 'all', separated by spaces or commas; a misspelt one gets the closest name."""
    found = []
    for name in _names(value):
        if name not in FAMILIES and name != "all":
            close = difflib.get_close_matches(name, [*FAMILIES, "all"], n=1, cutoff=0.6)
            close = close or [family for family in FAMILIES if name.casefold() in family]
            hint = (
                f"; did you mean {close[0]!r}?" if len(close) == 1 else f" (families: {', '.join(FAMILIES)}, or 'all')"
            )
            raise argparse.ArgumentTypeError(f"no metric family {name!r}{hint}")
        found.append(name)
    return found


class _Flattened(argparse.Action):
    """nargs="+" whose type gives a list per word ("a,b c" -> [a, b, c]): the words' items in one list."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        setattr(namespace, self.dest, [item for items in values for item in items])


class _Parser(argparse.ArgumentParser):
    """argparse, with the closest option suggested for a misspelt one, and a one-line usage after an error
    (the full one is 25 lines: --help)."""

    def error(self, message: str) -> NoReturn:
        unknown = re.match(r"unrecognized arguments: (.*)", message)
        if unknown:
            options = [flag for action in self._actions for flag in action.option_strings]
            for word in unknown.group(1).split():
                close = difflib.get_close_matches(word.split("=")[0], options, n=1, cutoff=0.6)
                if word.startswith("-") and close:
                    message += f" (did you mean {close[0]}?)"
                    break
        self.exit(
            2, f"{self.prog}: error: {message}\n(usage: {self.prog} FILE [options]; {self.prog} --help lists them)\n"
        )


def _names(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {value!r}")
    return names


def _prediction_columns(value: str) -> list[str]:
    """--predictions: columns or '*' patterns, separated by spaces or commas."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("is empty: name the column of predicted keywords")
    return names


def _top_k(value: str) -> int | str | None:
    try:
        if not value.strip():
            raise ValueError(value)
        return parse_top_k(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, 'O' or 'M', got {value!r}") from None


def _number(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"must be a number, got {value!r}")
    return number


def _declared_options() -> dict[Option, dict[str, Any]]:
    """Every option of the family declarations that has a flag, with its default per family."""
    found: dict[str, tuple[Option, dict[str, Any]]] = {}
    for family in DECLARATIONS.values():
        for option in family.options:
            if option.name not in NO_FLAG and option.kind != "object":
                found.setdefault(option.name, (option, {}))[1][family.name] = family.defaults[option.name]
    if _semantic_installed():  # keyword_diversity then shows self_similarity with the default model
        found["model"][1]["keyword_diversity"] = DEFAULT_MODEL
    return dict(found.values())


# Flags whose declared meaning speaks of the library (objects, states): the help in users' words.
_USERS_WORDS = {
    "bootstrap": "multinomial: draw the examples with replacement; poisson: a Poisson(1) weight per example, as "
    "distributed runs draw them (default: multinomial)",
    "model": "sentence-transformers model name or local path, for semantic_keyword_prf and keyword_diversity's "
    f"self_similarity (default: {DEFAULT_MODEL})",
    "top_k": "keep the first K predictions (precision divides by K), O (the first as many as gold keywords: "
    "R-precision) or M (all) (default: M)",
    "random_state": "seed of the resamples, or none for fresh randomness (default: 0)",
}


def _add_flag(group: argparse._ArgumentGroup, option: Option, defaults: dict[str, Any]) -> None:
    """A flag for `option`; absent unless given, so that each family keeps its own default."""
    by_value: dict[str, list[str]] = {}
    for family, value in defaults.items():
        by_value.setdefault(shown(value), []).append(family)
    if len(by_value) == 1:
        default = next(iter(by_value))
    else:
        default = "; ".join(f"{value} for {', '.join(families)}" for value, families in by_value.items())
    flags = ["--" + option.name.replace("_", "-")]
    meaning = option.meaning if "(default:" in option.meaning else f"{option.meaning} (default: {default})"
    settings: dict[str, Any] = {"default": argparse.SUPPRESS, "help": meaning, "dest": option.name}
    if option.kind == "flag":
        settings["action"] = argparse.BooleanOptionalAction
    else:
        settings["type"] = _option_type(option)
        settings["metavar"] = {"int": "N", "number": "X", "top_k": "K|O|M", "text": "NAME"}.get(option.kind)
        if option.kind == "choice":
            settings["choices"] = [choice for choice in option.choices if choice is not None]
            del settings["type"]
    if option.name == "presence":  # several views side by side: one result row per view
        del settings["choices"]
        settings["type"], settings["metavar"] = _presence_list, "P[,P...]"
        settings["help"] += "; a list such as all,present,absent prints the views side by side (needs --texts)"
    if option.name == "workers":  # sentiment's VADER processes; every other family: states per chunk, merged
        settings["help"] = "processes (at most one per CPU): a state per chunk of rows in each, merged (one process's "
        settings["help"] += "numbers up to the last digits); for "
        settings["help"] += "sentiment_appropriateness, VADER on long texts; semantic families stay in one process"
    if option.name == "confidence_level":  # the short name first: messages say --ci
        flags.insert(0, "--ci")
        settings["help"] = "print each value with its bootstrap percentile interval at this level, e.g. 0.95, as "
        settings["help"] += "value [low, high] (error bars in --plot; <key>_ci_low / <key>_ci_high in --output)"
    settings["help"] = _USERS_WORDS.get(option.name, settings["help"])
    group.add_argument(*flags, **settings)


def _presence_list(value: str) -> list[str]:
    """--presence: one of all, present, absent, or several separated by commas."""
    names = list(dict.fromkeys(_names(value)))
    wrong = [name for name in names if name not in PRESENCES]
    if wrong:
        raise argparse.ArgumentTypeError(f"must be {', '.join(PRESENCES)} or a list of them, got {wrong[0]!r}")
    return names


def _option_type(option: Option) -> Callable[[str], Any]:
    """Parses a flag's text as the option's kind, then runs the option's own check."""
    parse = {"int": _integer, "number": _number, "top_k": _top_k}.get(option.kind, str)

    def convert(text: str) -> Any:
        if option.name == "random_state" and text.lower() == "none":
            return None
        value = parse(text)
        if option.check is not None:
            try:
                option.check(value)
            except ValueError as error:
                raise argparse.ArgumentTypeError(str(error).replace(f"{option.name} ", "", 1)) from None
        return value

    convert.__name__ = option.name
    return convert


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="opinion-metrics",
        description=f"Evaluate keyword or aspect-rating predictions. Every metric is defined in\n  {DEFINITIONS_URL}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument(
        "file",
        type=Path,
        help=".jsonl (.ndjson), .json, .csv, .tsv (or .gz), .parquet or a folder of Parquet files (streamed by row "
        "group), .arrow / .feather, or a datasets folder",
    )
    parser.add_argument(
        "--metrics",
        nargs="+",
        type=_family,
        action=_Flattened,
        metavar="FAMILY",
        help=f"families to compute, separated by spaces or commas: {', '.join(FAMILIES)}, or 'all': every keyword "
        "family the columns allow (default: the lexical ones)",
    )
    columns = parser.add_argument_group("columns")
    columns.add_argument(
        "--predictions",
        nargs="+",
        type=_prediction_columns,
        action=_Flattened,
        metavar="COLUMN",
        help=f"predicted keyword lists (default: the first of {_names_of('predictions')} in the file); several "
        "columns (separated by spaces or commas) or a pattern such as 'keywords_*' are systems side by side, one "
        "result row each, named by what their names do not share (the '*' part): keywords_base keywords_reranker "
        "are base and reranker",
    )
    columns.add_argument(
        "--references",
        metavar="COLUMN",
        help=f"gold keyword lists (default: the first of {_names_of('references')})",
    )
    columns.add_argument(
        "--scores",
        metavar="COLUMN",
        help=f"prediction scores (default: the first of {_names_of('scores')}); 'scores_*' follows --predictions",
    )
    columns.add_argument(
        "--texts",
        metavar="COLUMN",
        help=f"review texts, for sentiment and --presence (default: the first of {_names_of('texts')})",
    )
    columns.add_argument(
        "--system",
        metavar="COLUMN",
        help="the system (model) of each row: each system is scored on its own rows, one result row each "
        f"(default: {_names_of('system')}, where there; 'none': one system)",
    )
    columns.add_argument(
        "--prediction-sentiments",
        metavar="COLUMN",
        help="per-keyword sentiments in [0, 1] for sentiment_appropriateness (never taken from --scores)",
    )
    columns.add_argument(
        "--by", metavar="COLUMN", help="split by this column: one result row per value (e.g. the movie)"
    )
    columns.add_argument("--group", metavar="COLUMN", help="pool by this column before evaluating (e.g. the movie)")
    columns.add_argument(
        "--id",
        metavar="COLUMN",
        help="with --baseline: pair the systems' rows by this column (default: review_id or id, where there; "
        "else by position)",
    )
    columns.add_argument(
        "--gold", type=Path, metavar="FILE", help="a separate file of gold lists, joined on --gold-key"
    )
    columns.add_argument(
        "--gold-key", metavar="COLUMN", default="movie", help="the join column in both files (default: movie)"
    )
    columns.add_argument(
        "--gold-column", metavar="COLUMN", default="keywords", help="gold lists in --gold (default: keywords)"
    )
    columns.add_argument(
        "--aspects",
        type=_names,
        metavar="A,B,...",
        help=f"aspect columns, separated by commas (default: {', '.join(DEFAULT_ASPECTS)}; or "
        f"{', '.join(VIETNAMESE_COLUMNS)} where those are the columns)",
    )
    columns.add_argument(
        "--prediction-prefix", default="pred_", help="predicted aspect columns: prefix + aspect (default: pred_)"
    )
    options = parser.add_argument_group("metric options (each applies to the families that have it)")
    for option, defaults in _declared_options().items():
        _add_flag(options, option, defaults)
    comparison = parser.add_argument_group("paired comparison")
    comparison.add_argument(
        "--baseline",
        "--compare",
        dest="compare",
        metavar="NAME",
        help="compare every other system with NAME (a system, a model of a '*' --predictions pattern, or a --by "
        "value): each value's difference in the tables, then per metric the difference, its interval (--ci, "
        "default 0.95) and p-value, Holm-adjusted over the systems; rows pair by --id (review_id or id, where "
        "there), else by position (same references and texts); with --output the JSON holds {results, comparison}",
    )
    comparison.add_argument(
        "--compare-method",
        choices=["permutation", "bootstrap"],
        help="the test: permutation (approximate randomization; its interval from the paired bootstrap) or paired "
        "bootstrap (p-value and interval from the same resamples) (default: permutation)",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--explain",
        action="store_true",
        help="under each table, one line per column: its meaning, range and whether higher is better",
    )
    output.add_argument("--output", type=Path, metavar="FILE", help="also write the results as JSON")
    output.add_argument(
        "--per-example",
        type=Path,
        metavar="FILE",
        help="also write each example's values with what produced them (matched pairs, cosine similarities, "
        "sentiments) for error analysis, with the input's system, id and line columns to join it back: "
        "JSON Lines (.jsonl) or CSV (.csv)",
    )
    output.add_argument("--quiet", action="store_true", help="no progress display on stderr (errors are still printed)")
    output.add_argument(
        "--plot", type=Path, metavar="FILE", help="also draw the results: .png, .svg, .pdf, ... (needs matplotlib)"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def plot_formats() -> dict[str, str]:
    """The file extensions --plot can write ({"png": "Portable Network Graphics", ...})."""
    import matplotlib  # noqa: F401  (ImportError here when matplotlib is missing)
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


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
    from .explain import explain

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


def _quiet_third_party() -> None:
    """No progress bars or log lines from the model libraries (weights loading, downloads):
    the CLI's own progress display is the only one on stderr."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for name in ("transformers", "sentence_transformers", "huggingface_hub", "datasets", "evaluate"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if "huggingface_hub" in sys.modules:  # imported before the settings above: switch them off now
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()


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


def main(argv: Sequence[str] | None = None) -> int:
    """The command; its status: 0 done, 1 the data cannot be evaluated, 2 a mistake in the command line.
    A reader that stops early (`| head`) ends it quietly."""
    try:
        return _main(argv)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 0


def _main(argv: Sequence[str] | None) -> int:
    _printable_anywhere()
    parser = build_parser()
    args = parser.parse_args(argv)
    _quiet_third_party()
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
        lists = [*(args.predictions or []), args.references, args.gold_column if args.gold else None]
        table = read_table(args.file, list_columns(lists), number_columns([args.scores, args.prediction_sentiments]),
                           lazy=True)  # fmt: skip
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
    label = "/".join(part for part in ("model" if side_by_side(args) else "", args.by or "") if part)
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


def _report(error: Exception) -> int:
    """Print one line; exit status 2 for a mistake in the command line, 1 for the data."""
    print(f"opinion-metrics: error: {error}".replace("\n", " "), file=sys.stderr)
    usage = isinstance(error, (UsageError, ImportError)) or getattr(error, "usage", False)
    return 2 if usage else 1


if __name__ == "__main__":
    sys.exit(main())
