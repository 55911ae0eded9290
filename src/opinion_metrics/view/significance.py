"""The significance report of paired comparisons against a baseline: p-values, their markers
and Holm-corrected families, and the notes that say what the method can and cannot show
(docs/definitions.md section 11). The CLI prints it; the Spaces show the same lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..stats.significance import MIN_PAIRS, Difference
from .text import UNICODE_MARKS, Marks, _column, fit_table, left_out_reason, signed, value_text, wrapped


def format_p(p: float, n_resamples: int) -> str:
    """A p-value as the report prints it: 3 decimals, 2 significant digits below 0.001, and a
    bootstrap p of 0 as "<" its resolution 1 / n_resamples."""
    if p == 0:
        return f"<{1 / n_resamples:.2g}"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.2g}"


def method_note(
    method: str, level: float, n_resamples: int, marker: str = "†", family: str | Sequence[str] | None = None
) -> str:
    """Which resampling gave the p-values and which the intervals (one note for the whole report),
    and which pairs can move the test, with an example of each family shown (default: keyword_prf's)."""
    scored = scored_differently(family)
    if method == "permutation":
        return (
            f"p-values: paired permutation test, exact where the pairs scored differently allow at most "
            f"{n_resamples:,} swaps of the two systems' outputs (every swap counted), else {n_resamples:,} random "
            f"swaps; intervals: paired bootstrap ({level:.0%}, {n_resamples:,} resamples of the same "
            "pairs). The test asks whether the difference could be chance, the interval how much it varies "
            f"when examples are redrawn: they can disagree near the threshold or with few pairs; {marker} "
            f"follows the p-value. {scored}"
        )
    return (
        f"p-values and intervals: the same {n_resamples:,} paired bootstrap resamples of the pairs "
        f"({level:.0%} intervals). {scored}"
    )


# Per family, what scores alike (or not) in a pair: the example `scored_differently` gives.
_ALIKE = {
    "keyword_prf": "the same keywords in another order score alike",
    "semantic_keyword_prf": "the same keywords in another order score alike",
    "sentiment_appropriateness": "the same keywords in another order score alike",
    "keyword_diversity": "the same keywords in another order score alike",
    "weighted_keyword_prf": "the same keywords in another order can score differently: its rankings follow the order",
    "aspect_sentiment_score": "a review that both systems rate alike scores alike",
}


def scored_differently(family: str | Sequence[str] | None = None) -> str:
    """Which pairs can move the test, with an example of each family (default: keyword_prf's)."""
    families = [family] if isinstance(family, str) or family is None else list(family)
    shown = [name for name in families if name in _ALIKE] or ["keyword_prf"]
    examples = "; ".join(f"for {name}, {_ALIKE[name]}" for name in shown)
    return (
        "A pair is scored differently when the two systems' per-example statistics differ where a value "
        f"depends on them ({examples}): only such pairs can move the test."
    )


def report_notes(
    differences: Mapping[str, Mapping[str, Difference]],
    *,
    baseline: str,
    method: str,
    level: float,
    n_resamples: int,
    marker: str = "†",
    note: str = "‡",
    groups: Mapping[str, str] | None = None,
    within: str = "",
    left_out: str = "left out",
) -> list[str]:
    """The report's notes in plain words, for one family: the significance marker and Holm's
    correction (applied within each group of `groups`, {system: group}, e.g. each movie:
    `within`), the pairs that count (those `left_out` named, e.g. "no present gold keyword")
    and how many differ, the smallest p-value each comparison can reach, a warning below
    MIN_PAIRS pairs, and the rows marked `note` where the interval and the marker disagree.
    `method_note` says which resampling gave what, once for the report."""
    alpha = round(1 - level, 10)
    if not any(differences.values()):
        return []
    notes = []
    per_group: dict[str, int] = {}
    for system in differences:
        group = (groups or {}).get(system, "")
        per_group[group] = per_group.get(group, 0) + 1
    compared = max(per_group.values())
    if compared > 1:
        count = f"the {compared} systems" if len(set(per_group.values())) == 1 else "the systems"
        where = f" within each {within}" if len(per_group) > 1 and within else ""
        corrected = f", after Holm's correction for {count} compared with {baseline}{where} (per metric)"
    else:
        corrected = ""
    notes.append(f"{marker} significant at the {alpha:g} level{corrected}")
    for system, rows in differences.items():
        row = next(iter(rows.values()))
        if row.differing == 0:
            floor = "the two score every pair alike: p is 1"
        elif row.smallest_p_value > 0 and row.exact:
            floor = f"p cannot go below {format_p(row.smallest_p_value, n_resamples)} (exact test: every swap counted)"
        elif row.smallest_p_value > 0:
            floor = (
                f"p cannot go below {format_p(row.smallest_p_value, n_resamples)} (a Monte Carlo test of "
                f"{n_resamples:,} random swaps: its p-value is never shown below this floor)"
            )
        else:
            floor = f"p below {1 / n_resamples:.2g} shows as <{1 / n_resamples:.2g}"
        examples = row.pairs + row.left_out
        counted = f" ({row.left_out:,} of {examples:,} examples {left_out})" if row.left_out else ""
        pairs = f"{row.pairs:,} pair" + "s" * (row.pairs != 1)
        notes.append(f"{system} vs {baseline}: {pairs}{counted}, {row.differing:,} scored differently; {floor}")
        if row.pairs < MIN_PAIRS:
            notes.append(
                f"warning: {system} vs {baseline} has only {pairs}, too few for a reliable comparison "
                f"({MIN_PAIRS} or more advised): the bootstrap interval is too narrow with so few pairs"
            )
        elif 0 < row.differing < MIN_PAIRS:
            notes.append(
                f"warning: only {row.differing} of the {row.pairs:,} pairs of {system} vs {baseline} are scored "
                f"differently ({MIN_PAIRS} or more advised): the test has little to go on"
            )
    reasons: dict[str, list[str]] = {}
    for system, rows in differences.items():
        for key, row in rows.items():
            reason = row.disagreement(alpha)
            if reason is not None:
                reasons.setdefault(reason, []).append(f"{key} ({system})")
    for reason, rows in reasons.items():
        shown = ", ".join(rows[:6]) + (f" and {len(rows) - 6} more" if len(rows) > 6 else "")
        if reason == "holm":
            why = (
                f"the interval excludes 0, but the Holm-adjusted p-value is not below {alpha:g}: the interval is not "
                f"adjusted for the several systems compared, and {marker} follows the adjusted p-value"
            )
        elif method == "permutation":
            why = (
                f"the interval (paired bootstrap) and the p-value (permutation test) disagree near the threshold; "
                f"{marker} follows the p-value"
            )
        else:
            why = f"the interval and the p-value disagree at the boundary (ties); {marker} follows the p-value"
        notes.append(f"{note} {shown}: {why}")
    return notes


def format_significance(
    differences: Mapping[str, Mapping[str, Mapping[str, Difference]]],
    *,
    baseline: str,
    label: str | Mapping[str, str],
    method: str,
    level: float,
    n_resamples: int,
    width: int | None = None,
    marks: Marks = UNICODE_MARKS,
    groups: Mapping[str, str] | None = None,
    within: str = "",
    presence: Mapping[str, str] | None = None,
) -> str:
    """The significance report, per family: each compared subset and metric against `baseline`
    (their values, the difference with its interval, the p-value and Holm's adjusted one, marked
    where significant at 1 - `level`, and `marks.note` where the interval tells another story),
    then the notes of `comparison.report_notes` (Holm's correction within each view of `groups`,
    the pairs that count (`presence`: each subset's view), the smallest attainable p-value, a
    warning below 30 pairs); which resampling gave what is said once, at the end."""
    alpha = round(1 - level, 10)
    text_blocks = []
    families = list(dict.fromkeys(family for by_family in differences.values() for family in by_family))
    for family in families:
        compared = {subset: found[family] for subset, found in differences.items() if family in found}
        title = label if isinstance(label, str) else label.get(family, "")
        several = len(compared) > 1
        headers = [baseline, "value", "difference", f"{level:.0%} interval", "p"] + (["p Holm"] if several else [])
        rows = []
        for subset, by_key in compared.items():
            for key, row in by_key.items():
                column = _column(family, key)
                mark = marks.significant if row.significant(alpha) else ""
                mark += marks.note if row.disagreement(alpha) else ""
                p_values = [format_p(row.p_value, n_resamples) + ("" if several else mark)]
                p_values += [format_p(row.holm_p_value, n_resamples) + mark] if several else []
                values = [value_text(row.baseline_value), value_text(row.value), signed(row.difference),
                          f"[{signed(row.low)}, {signed(row.high)}]", *p_values]  # fmt: skip
                rows.append(([subset, column.header(marks)], values))
        heading = f"{family}: each {title or 'row'} against {baseline} (paired {method} test)"
        lines = wrapped(heading, width, "  ")
        lines += fit_table([title or "row", "metric"], headers, rows, width)
        views = {subset: (presence or {}).get(subset, "all") for subset in compared}
        view = next(iter(views.values()), "all")
        reason = f"left out: {left_out_reason(view)}" if len(set(views.values())) == 1 else "left out by presence"
        notes = report_notes(
            compared,
            baseline=baseline,
            method=method,
            level=level,
            n_resamples=n_resamples,
            marker=marks.significant,
            note=marks.note,
            groups=groups,
            within=within,
            left_out=reason,
        )
        for note in notes:
            lines += wrapped(note, width, "  ")
        text_blocks.append("\n".join(lines))
    if text_blocks:
        note = method_note(method, level, n_resamples, marks.significant, family=families)
        text_blocks.append("\n".join(wrapped(note, width, "  ")))
    return "\n\n".join(text_blocks)
