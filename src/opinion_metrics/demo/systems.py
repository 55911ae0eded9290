"""The systems of a Space's inputs: typed in the boxes (each line of a system prefixed with
`[name]`, or one system) or read from uploaded files (a system column, prediction columns side
by side, or one file per system), paired as the same examples."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..io.column_names import first_text, text_cell_message
from ..io.table import Table
from .parsing import (
    KEYWORD_SEPARATOR,
    PREDICTION_PREFIX,
    SYSTEM_PREFIX,
    BoxPart,
    Inputs,
    _code,
    collect_inputs,
    lines,
    not_a_score,
    reads_scores,
    split_score,
    split_systems,
    system_prefix,
    takes_tuples,
)

TYPED_SOURCE = "the text boxes"


# An upload's column of each role, as the column-mapping boxes give them (empty: found by name).
ColumnMapping = dict[str, str]


@dataclass
class Systems:
    """The systems read from the boxes or a file: each system's `Inputs` and, for a file, its
    rows (a `Table`, for their lines); `described` says where they came from and how they were
    told apart, `columns` which columns were read; examples pair by `paired_by` (an id column)
    or by position."""

    inputs: dict[str, Inputs]
    parts: dict[str, Table | None]
    described: str
    columns: str = ""
    paired_by: str | None = None
    notes: list[str] = field(default_factory=list)  # for the status line: what was read otherwise than typed

    @property
    def named(self) -> bool:
        return list(self.inputs) != [""]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def typed_lines(predictions: str | None, tuples: bool = False) -> dict[str, list[tuple[int, str]]] | None:
    """{system: [(line number, text after "[system]")]} when every line of the predictions box
    names its system, None when none does; some named and others not is an error naming them.
    `tuples`: the box of the tuple family, whose lines of tuples name no system (`system_prefix`)."""
    found = lines(predictions, "predictions")
    named = [system_prefix(line, tuples) for line in found]
    if not any(named):
        return None
    unnamed = [number for number, match in enumerate(named, 1) if match is None]
    if unnamed:
        shown = ", ".join(map(str, unnamed[:5])) + (" and more" if len(unnamed) > 5 else "")
        first = next(number for number, match in enumerate(named, 1) if match)
        verb = "do" if len(unnamed) > 1 else "does"
        raise ValueError(
            f"predictions: line {first} starts with [a system's name] but line{'s' * (len(unnamed) > 1)} {shown} "
            f'{verb} not: name the system of every line ("[tfidf] keyword; keyword"; an example without '
            'keywords: "[tfidf]" alone), or of none'
        )
    systems: dict[str, list[tuple[int, str]]] = {}
    for number, (line, match) in enumerate(zip(found, named), 1):
        systems.setdefault(match[1].strip(), []).append((number, line[match.end() :]))  # type: ignore[index]
    return systems


def _typed_systems(family: str, inputs: Sequence[str], predictions: str, references: str, extra: str) -> Systems | None:
    """Several systems typed in the predictions box ("[name] ..." lines), the references and
    texts given once per example and shared by every system (example i: each system's i-th line)."""
    systems = typed_lines(predictions, takes_tuples(family))
    if systems is None:
        return None
    counts = {name: len(found) for name, found in systems.items()}
    first, size = next(iter(counts.items()))
    uneven = next((name for name, count in counts.items() if count != size), None)
    if uneven is not None:
        raise ValueError(
            f"predictions: system {first!r} has {_plural(size, 'line')} and {uneven!r} {counts[uneven]}: each "
            "system needs one line per example, in the same order"
        )
    shared = {}
    for box, text in (("references", references), ("texts", extra)):
        if box in inputs and lines(text, box):
            shared[box] = len(lines(text, box))
    for box, count in shared.items():
        if count != size:
            per_line = count == sum(counts.values())
            repeated = " (given per system's line: give them once per example instead)" if per_line else ""
            raise ValueError(
                f"{box} has {_plural(count, 'line')} but each system {_plural(size, 'example')}{repeated}: "
                f"the {box} are given once per example and shared by every system"
            )
    found: dict[str, Inputs] = {}
    scored = reads_scores(predictions, family)  # one rule for the whole box, every system alike
    for name, typed in systems.items():
        text = [line for _, line in typed]  # a list: an empty last example is kept
        numbers = [number for number, _ in typed]

        def where(index: int, numbers: list[int] = numbers) -> str:
            line = f" (predictions line {numbers[index]})" if index < len(numbers) else ""
            return f"example {index + 1}{line}"

        part = BoxPart(name, numbers, scored)
        data = collect_inputs(inputs, text, references, extra, None, family=family, part=part).data
        found[name] = Inputs(data, TYPED_SOURCE, where)
    names = ", ".join(list(found)[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    described = f"{TYPED_SOURCE}: {_plural(len(found), 'system')} ({names}) named at the start of their lines"
    return Systems(found, dict.fromkeys(found), described)


def _renamed(part: Table, columns: ColumnMapping) -> Table:
    """`part` with the columns of `columns` ({role: column}) under the roles' names, the others kept."""
    renamed = {role: part.columns[column] for role, column in columns.items() if column in part.columns}
    return Table(part.path, {**part.columns, **renamed}, part.lines, part.rows)


def _file_systems(
    family: str | None,
    inputs: Sequence[str],
    upload: Table,
    mapping: ColumnMapping | None,
    prefix: str,
    extra: str | None,
    predictions: str | None = None,
    references: str | None = None,
) -> Systems:
    """The systems of an uploaded file, its columns found by name or as `mapping` gives them: a
    system column (one row per system and example), predictions side by side (`keywords_*`), or one."""
    from ..io.column_names import TUPLE_WHAT, WHAT, closest, find_columns
    from ..io.column_names import described as mapping_words
    from ..io.column_names import names as looked_for

    tuples = takes_tuples(family)  # columns of tuples looked for first; a text cell may be a model's text
    given = {role: value.strip() for role, value in (mapping or {}).items() if value and value.strip()}
    found = find_columns(list(upload.columns), given, tuples)
    for role, column in given.items():
        if column != "none" and "*" not in column and column not in upload.columns:
            near = closest(column, upload.columns)
            hint = f"; did you mean `{near}`?" if near else ""
            found_columns = _code(upload.columns) or "none"
            raise ValueError(
                f"no column `{column}` for {role} in {upload.path.name} (its columns: {found_columns}){hint}"
            )
    roles = {role: found[role] for role in ("predictions", "references", "scores", "texts") if found[role]}

    for role in ("predictions", "references"):
        if role in inputs and "aspects" not in inputs and found[role] is None:
            join = " (gold lists in a file of their own, one per movie, are joined by the CLI: --gold FILE)"
            what = (TUPLE_WHAT if tuples else WHAT)[role]
            patterns = " and patterns such as keywords_*" if role == "predictions" and not tuples else ""
            raise ValueError(
                f"no column of {what} in {upload.path.name}: looked for {', '.join(looked_for(role, tuples))}"
                f"{patterns} (found: {_code(upload.columns) or 'none'}); name it under 'columns of the file'"
                f"{join if role == 'references' and not tuples else ''}"
            )
    parts: dict[str, Table]
    pattern = found["predictions"] if found["predictions"] and "*" in found["predictions"] else None
    if pattern and "aspects" not in inputs:
        expression = re.compile(re.escape(pattern).replace(r"\*", "(.+)") + "$")
        parts = {}
        for column in upload.columns:
            match = expression.match(column)
            if match:
                own = dict(roles, predictions=column)
                scores = found["scores"]
                own["scores"] = scores.replace("*", match[1]) if scores and "*" in scores else (scores or "")
                parts[match[1]] = _renamed(upload, {k: v for k, v in own.items() if v})
        how = f"{_plural(len(parts), 'system')} side by side (`{pattern}`)"
    else:
        column = found["system"]
        split = split_systems(upload, column) if column else {"": upload}
        parts = {name: _renamed(part, roles) for name, part in split.items()}
        how = f"{_plural(len(parts), 'system')} of its `{column}` column" if column else ""
    systems: dict[str, Inputs] = {}
    for name, part in parts.items():
        for role in ("predictions", "references"):
            column = pattern.replace("*", name) if role == "predictions" and pattern else found[role]
            keywords = role in inputs and "aspects" not in inputs and not tuples and column in part.columns
            row = first_text(part.columns[column]) if keywords else None
            if row is not None:
                raise ValueError(text_cell_message(column, part.columns[column][row], part.location(row)))
        systems[name] = collect_inputs(inputs, predictions, references, extra, part, prefix, family)
    source = next(iter(systems.values())).source  # the file, and for the aspect score the columns read as aspects
    usual = {"predictions": ("predictions",), "references": ("references",), "scores": ("scores",)}
    usual["texts"] = ("texts", "review")
    # only the roles the family reads: texts where it takes them, scores for the keyword families (dropped by some)
    unread = {role for role in ("texts", "scores") if role not in inputs and (role == "texts" or tuples)}
    read = {role: column for role, column in found.items() if role not in unread}
    renamed = any(read[role] not in names for role, names in usual.items() if read.get(role) and role in roles)
    words = mapping_words(read, given) if "aspects" not in inputs and (renamed or given) else ""
    return Systems(systems, dict(parts), source + (f": {how}" if how else ""), words, found["id"])


def read_systems(
    family: str | None,
    inputs: Sequence[str],
    predictions: str | None,
    references: str | None,
    extra: str | None = None,
    upload: Table | None = None,
    mapping: ColumnMapping | None = None,
    prefix: str = PREDICTION_PREFIX,
) -> Systems:
    """The systems of family `family`'s input, the same model everywhere: an upload (its systems
    by a system column or side-by-side columns, `mapping` naming columns found otherwise), else
    the text boxes (several systems when every predictions line starts with "[name]", the
    references and texts once per example, shared). `inputs`: the family's boxes ("predictions",
    "references", and "texts" or "aspects"); "keyword (0.8)" is the keyword "keyword" with a
    score in every family, as `collect_inputs` says (None: the box shared by every family)."""
    if upload is not None:
        return _file_systems(family, inputs, upload, mapping, prefix, extra, predictions, references)
    found = _typed_systems(family, inputs, predictions or "", references or "", extra or "")
    if found is None:
        single = collect_inputs(inputs, predictions, references, extra, None, prefix, family)
        found = Systems({"": single}, {"": None}, TYPED_SOURCE)
    if "aspects" not in inputs and not takes_tuples(family):
        found.notes = kept_notes(family, inputs, predictions, references)
    return found


def kept_parentheses(text: str | None, scored: bool, named: bool = False) -> list[tuple[int, str]]:
    """(line, keyword) of each keyword of the box whose parentheses stay keyword text (no score
    read from them: "Star Wars (IV)", or any "(0.8)" when the box reads no scores); with `named`,
    a line's "[system]" prefix is not part of its keyword."""
    kept = []
    for number, line in enumerate(lines(text), start=1):
        prefix = SYSTEM_PREFIX.match(line) if named else None
        for item in line[prefix.end() if prefix else 0 :].split(KEYWORD_SEPARATOR):
            keyword = split_score(item)[0] if scored else item.strip()
            if keyword.endswith(")") and "(" in keyword:
                kept.append((number, keyword))
    return kept


def _code_span(text: str) -> str:
    """`text` as Markdown code (a backtick in it would end the span early)."""
    return "`" + text.replace("`", "'") + "`"


def _shown(kept: Sequence[tuple[int, str]]) -> str:
    """`keyword (0.9)` (line 1), ... and 3 more."""
    shown = ", ".join(f"{_code_span(keyword)} (line {number})" for number, keyword in kept[:3])
    return shown + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")


def kept_notes(family: str | None, inputs: Sequence[str], predictions: str | None, references: str | None) -> list[str]:
    """What the status line says of typed keywords whose parentheses stay keyword text: where
    the box reads no scores (a number outside [0, 1] in it, as `reads_scores` says), every
    "(0.8)" of it; otherwise those that hold no number ("Star Wars (IV)"); gold keywords take
    no scores."""
    notes = []
    scored = reads_scores(predictions, family)
    kept = kept_parentheses(predictions, scored, named=True)
    if kept and not scored:
        notes.append(
            "predictions: no number in parentheses is read as a score in this box, as "
            f"{_code_span(not_a_score(predictions) or '')} is outside [0, 1]; kept as keyword text: {_shown(kept)}"
        )
    elif kept:
        notes.append(f"predictions: parentheses without a score kept as keyword text: {_shown(kept)}")
    gold = kept_parentheses(references, False) if "references" in inputs else []
    if gold:
        notes.append(f"references: parentheses kept as keyword text (gold keywords take no scores): {_shown(gold)}")
    return notes
