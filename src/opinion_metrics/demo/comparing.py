"""Comparisons in the Spaces: every keyword family on the same systems, and each system
against a baseline with the paired test and its report.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..analysis.compare import DEFAULT_RESAMPLES
from ..families.registry import output_for
from ..io.pairing import Rows, pair_rows, pairing
from ..stats.significance import Difference, Pairs, significance
from ..view.significance import format_p, method_note, report_notes, signed
from ..view.text import left_out_reason, value_text
from . import controls as families
from .controls import (
    COMBINED,
    FAMILIES,
    INTERVAL_LEVEL,
    evaluate_family,
    keyword_options,
    presence_texts,
    tuple_inputs,
)
from .parsing import takes_tuples, whole_number
from .plots import plot_differences, plot_systems
from .results import (
    ALL_OTHERS,
    MARKS,
    Outcome,
    _examples,
    _fail,
    _plural,
    _read,
    _read_systems,
    _status,
    error,
    noted,
    results_frame,
    space_message,
)
from .systems import Systems, read_systems

# The options the combined Space's tabs have as controls (the families' other options: their defaults).
COMBINED_CONTROLS = ("confidence_level",)
COMPARE_CONTROLS = ("presence", "confidence_level")


def _paired(systems: Systems, baseline: str, system: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The baseline's and `system`'s inputs, example i of one with example i of the other: typed
    lines and side-by-side columns by position, a file's rows by its id column (else by position);
    their references must agree."""
    base, other = systems.inputs[baseline].data, systems.inputs[system].data
    parts = systems.parts
    column = systems.paired_by
    if parts[baseline] is not None and parts[system] is not None and parts[baseline] is not parts[system]:
        both = {
            name: Rows(parts[name], list(range(len(systems.inputs[name].data["predictions"]))))
            for name in (baseline, system)
        }  # type: ignore[arg-type]
        if column is not None and parts[baseline].columns.get(column) is not None:  # type: ignore[union-attr]
            order = pair_rows(both, baseline, column, "system")[system]
            other = {key: [value[i] for i in order] if isinstance(value, list) and len(value) == len(order) else value
                     for key, value in other.items()}  # fmt: skip
    count_a, count_b = len(base["predictions"]), len(other["predictions"])
    if count_a != count_b:
        raise ValueError(
            f"cannot compare system {system!r} with {baseline!r}: {count_a} and {count_b} examples; "
            f"{pairing(column, 'system')}"
        )
    for side in ("texts", "references"):  # the same examples: the same reviews and gold keywords
        found_a, found_b = base.get(side), other.get(side)
        if found_a and found_b and found_a != found_b:
            index = next(i for i, (x, y) in enumerate(zip(found_a, found_b)) if x != y)
            raise ValueError(
                f"cannot compare system {system!r} with {baseline!r}: their {side} differ at example {index} (of "
                f"{baseline!r}); the examples must be the same ({pairing(column, 'system')})"
            )
    return base, other


def _compared(
    name: str, options: Mapping[str, Any], base: dict[str, Any], other: dict[str, Any], **settings: Any
) -> tuple[dict[str, dict[str, float]], Pairs]:
    """`compare_systems` with the family's options as the controls give them, and its `Pairs`."""
    from ..analysis.compare import compare_systems_with_pairs

    library = keyword_options(dict(options))
    level = float(settings.pop("confidence_level", INTERVAL_LEVEL))
    library.pop("confidence_level", None)
    if "presence" in library:
        library.update(presence_texts(base, library))
    elif "texts" in FAMILIES[name].inputs and base.get("texts"):
        library["texts"] = base.get("texts")
    if "model" in library:
        library["model"] = families.MODELS.get(library["model"])
    for integer in ("k", "min_rating", "max_rating"):
        if integer in library:
            library[integer] = whole_number(library[integer], integer)
    if name == "weighted_keyword_prf":
        if base.get("scores") is None or other.get("scores") is None:
            raise ValueError('weighted metrics need a score per keyword: "keyword (0.8); other (0.3)"')
        library.update(scores_a=base["scores"], scores_b=other["scores"])
    if name == "aspect_sentiment_score":
        library["aspects"] = base["aspects"]
    if takes_tuples(name):  # the tuples, or with a format the text
        base, other = ({**data, **tuple_inputs(data, library)} for data in (base, other))
    references = base.get("references") if "references" in FAMILIES[name].inputs else None
    if name == "sentiment_appropriateness" and not references:
        references = None
    try:
        return compare_systems_with_pairs(
            name, base["predictions"], other["predictions"], references, confidence_level=level, **library, **settings
        )
    finally:
        families.clear_embedding_cache()


def _refused(
    name: str, options: Mapping[str, Any], systems: Systems, pair: Sequence[str]
) -> tuple[str, Exception] | None:
    """The one system of `pair` whose inputs the family refuses on their own, and its error (the
    library's comparison says "example 3" of either); None when both or neither are refused."""
    refused = []
    for system in pair:
        try:
            evaluate_family(name, systems.inputs[system].data, dict(options))
        except (ValueError, ImportError) as problem:
            refused.append((system, problem))
        finally:
            families.clear_embedding_cache()
    return refused[0] if len(refused) == 1 else None


def _against_baseline(
    name: str,
    systems: Systems,
    baseline: str,
    options: Mapping[str, Any],
    versus: Sequence[str] | None = None,
    method: str = "permutation",
    level: float = INTERVAL_LEVEL,
    controls: Collection[str] | None = None,
) -> tuple[dict[str, dict[str, dict[str, Difference]]], Any, str]:
    """Each system (or those of `versus`) against `baseline`: {system: {family: {key: Difference}}}
    with Holm's correction over them, the report's frame and its notes (Markdown); an error names
    the system whose inputs it is about (`controls`: the tab's, as `space_message` takes them)."""
    import pandas as pd

    compared, pairs = {}, {}
    for system in versus or [name for name in systems.inputs if name != baseline]:
        try:
            base, other = _paired(systems, baseline, system)
        except ValueError as problem:  # its positions are the baseline's
            raise _fail(problem, systems.inputs[baseline].where, controls) from None
        try:
            compared[system], pairs[system] = _compared(
                name, options, base, other, method=method, confidence_level=level
            )
        except (ValueError, ImportError) as problem:
            culprit, problem = _refused(name, options, systems, (baseline, system)) or ("", problem)
            message = space_message(problem, systems.inputs[culprit or system].where, controls)
            raise error(f"system {culprit!r}: {message}" if culprit else message) from None
    found = significance(compared, method=method, n_resamples=DEFAULT_RESAMPLES, pairs=pairs)
    alpha = round(1 - level, 10)
    several = len(found) > 1
    rows = []
    for system, by_key in found.items():
        for key, row in by_key.items():
            output = output_for(name, key)
            arrow = MARKS.lower if output is not None and not output.higher_is_better else MARKS.higher
            significant = ("yes" if row.significant(alpha) else "no") + (
                f" {MARKS.note}" if row.disagreement(alpha) else ""
            )
            p_values = [format_p(row.p_value, DEFAULT_RESAMPLES)] + (
                [format_p(row.holm_p_value, DEFAULT_RESAMPLES)] if several else []
            )
            interval = f"[{signed(row.low)}, {signed(row.high)}]"
            values = [value_text(row.baseline_value), value_text(row.value), signed(row.difference), interval]
            rows.append([system, f"{key} {arrow}", *values, *p_values, significant])
    headers = ["system", "metric", baseline, "value", "difference", f"{level:.0%} interval", "p"]
    headers += ["p (Holm)"] if several else []
    frame = pd.DataFrame(rows, columns=[*headers, "significant"])
    presence = options.get("presence", "all")
    notes = report_notes(
        found,
        baseline=baseline,
        method=method,
        level=level,
        n_resamples=DEFAULT_RESAMPLES,
        left_out=f"left out: {left_out_reason(presence)}",
    )
    notes.append(method_note(method, level, DEFAULT_RESAMPLES, family=name))
    return {system: {name: by_key} for system, by_key in found.items()}, frame, "\n".join(f"- {note}" for note in notes)


def compare_families(
    predictions: str,
    references: str,
    texts: str,
    upload: str | None,
    confidence_level: bool = False,
    mapping: Mapping[str, str] | None = None,
) -> tuple[str, Any, Any, dict[str, Outcome]]:
    """Every family of keyword lists with its default options on one input, for each system of it
    (the upload read once): the status line, the shared view (a row per family and metric, a
    column per system), grouped bars (with error bars), and per family its options and each
    system's inputs (an `Outcome` of those only: for the per-example explanation)."""

    table = _read(upload, mapping)
    results: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    systems: Systems | None = None
    explained: dict[str, Outcome] = {}
    notes = ""  # those of the first family's reading (the box is read alike for every family)
    for name in COMBINED:
        family = FAMILIES[name]
        options = {o.name: o.default for o in family.options}
        options["confidence_level"] = confidence_level
        try:
            # one predictions box for every family: scores read unless a number cannot be one (a year)
            systems = read_systems(None, family.inputs, predictions, references, texts, table, dict(mapping or {}))
        except ValueError as problem:
            raise _fail(ValueError(f"{name}: {problem}")) from None
        notes = notes or noted(systems)
        for system, inputs in systems.inputs.items():
            if name == "weighted_keyword_prf" and inputs.data.get("scores") is None:
                skipped.append(name)
                break
            try:
                summary, _ = evaluate_family(name, inputs.data, options)
            except (ValueError, ImportError) as problem:
                where = f"{name}" + (f", system {system!r}" if system else "")
                raise error(f"{where}: {space_message(problem, inputs.where, COMBINED_CONTROLS)}") from None
            results.setdefault(system, {})[name] = summary
        if name not in skipped:
            parts = {system: (inputs, systems.parts[system]) for system, inputs in systems.inputs.items()}
            explained[name] = Outcome("", None, None, None, options, parts)
    assert systems is not None
    counts = {system: len(inputs.data["predictions"]) for system, inputs in systems.inputs.items()}
    shown = [name for name in COMBINED if name not in skipped]
    status = _status(replace(systems, notes=[]), counts, "every family with its default options")
    status += f" · {INTERVAL_LEVEL:.0%} intervals" if confidence_level else ""
    status += f"{notes}."
    if skipped:
        status += " weighted_keyword_prf needs a score per keyword, as in `keyword (0.8)`: not shown."
    frame = results_frame(shown, results, counts)
    title = "every keyword metric" + (f" of {_plural(len(results), 'system')}" if len(results) > 1 else "")
    return status, frame, plot_systems(results, title), explained


METHODS = ("permutation", "bootstrap")


LEVELS = (0.9, 0.95, 0.99)


def compare_systems_tab(
    family: str,
    predictions: str,
    references: str,
    texts: str,
    presence: str = "all",
    method: str = "permutation",
    confidence_level: float = INTERVAL_LEVEL,
    upload: str | Sequence[str] | None = None,
    baseline: str = "",
    versus: str = ALL_OTHERS,
    mapping: Mapping[str, str] | None = None,
) -> tuple[str, Any, str, Any, list[str], str]:
    """Systems compared on the same examples, read as every Space reads them (typed "[name]" lines
    or a file), with the family's default options: `baseline` (default: the first system) against
    every other system or only `versus`. Returns the status line, the report (per system and
    metric: both values, the difference, its interval, the p-value and Holm's adjusted one,
    whether it is significant), its notes (Markdown), a plot of the differences, the systems
    found and the baseline (for the selectors)."""
    shown = FAMILIES[family]
    systems = _read_systems(family, predictions, references, texts, upload, mapping)
    names = list(systems.inputs)
    if len(names) < 2:
        raise _fail(
            ValueError(
                "compare needs at least two systems: start each predictions line with [its name] "
                '("[tfidf] keyword; keyword"), or upload a file with a `model` (or `system`) column or columns '
                "side by side such as keywords_tfidf, keywords_yake"
            )
        )
    base = baseline if baseline in names else names[0]
    others = [name for name in names if name != base]
    chosen = others if versus in (None, "", ALL_OTHERS) or versus not in others else [versus]
    options = {o.name: o.default for o in shown.options}
    if "presence" in options:
        options["presence"] = presence
    options["confidence_level"] = False
    level = float(confidence_level)
    differences, frame, notes = _against_baseline(
        family, systems, base, options, chosen, method, level, COMPARE_CONTROLS
    )
    paired = f"paired by {systems.paired_by}" if systems.paired_by else "paired by position"
    first = next(iter(next(iter(differences.values()))[family].values()))
    examples = _examples(first.pairs + first.left_out)
    if first.left_out:  # a presence view: the pairs that count
        counts = "counts" if first.pairs == 1 else "count"
        examples += f" {paired}, {first.pairs} {counts} ({first.left_out} left out: {left_out_reason(presence)})"
    else:
        examples += f" {paired}"
    view = f", presence {presence}" if presence != "all" and "presence" in options else ""
    status = (
        f"Compared on {systems.described}: {base} against {', '.join(chosen)}, {examples} ({family}{view}, "
        f"{method} test, {DEFAULT_RESAMPLES:,} resamples, seed 0){noted(systems)}"
    )
    alpha = 1 - level
    rows = [(f"{row[0]}: {row[1]}", float(row[4]), row[-1].startswith("yes")) for row in frame.itertuples(index=False)]
    intervals = [
        tuple(float(bound) for bound in row[5].strip("[]").split(", ")) for row in frame.itertuples(index=False)
    ]
    figure = plot_differences([(family, label, value) for label, value, _ in rows], intervals)
    figure.axes[0].set_title(f"difference from {base} (significant at {alpha:.2g}: see the table)", fontsize=10)
    return status, frame, notes, figure, names, base
