"""The command line's arguments: generated from the family registry (one flag per declared
option, with its type and help), the column options, and the help text.
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from .. import DEFINITIONS_URL, __version__
from ..core.validation import PRESENCES, parse_top_k
from ..embeddings.encoder import DEFAULT_MODEL
from ..families.aspect_sentiment_score import DEFAULT_ASPECTS, VIETNAMESE_COLUMNS
from ..families.options import Option
from ..families.registry import FAMILIES as DECLARATIONS
from ..io.column_names import NAMES
from ..view.text import shown
from .inputs import FAMILIES, NO_FLAG, _semantic_installed


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


class _Typed(argparse.Action):
    """Stores the value and, in `<dest>_flag`, the flag typed (--baseline or --compare): the
    messages about it answer in the user's words."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_flag", option)


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
                first, defaults = found.setdefault(option.name, (option, {}))
                defaults[family.name] = family.defaults[option.name]
                more = [choice for choice in option.choices if choice not in first.choices]
                if more:  # one flag for the families' choices (sentiment_tuple_prf's --match overlap)
                    meaning = f"{first.meaning}; for {family.name}: {option.meaning}"
                    found[option.name] = (replace(first, choices=(*first.choices, *more), meaning=meaning), defaults)
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
                # "top_k must be ..." -> "argument --top-k: must be ..."; a name inside the message stays
                message = str(error).removeprefix(f"{option.name} ")
                raise argparse.ArgumentTypeError(message) from None
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
        action=_Typed,
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
