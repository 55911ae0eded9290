"""Generated text read as sentiment tuples (docs/definitions.md section 13): the paraphrases of
ABSA-QUAD ("food quality is bad because pizza is over cooked [SSEP] ...") and the tuples of
generative ABSA ("(pizza, over cooked, negative); (...)"). A segment that cannot be read is kept
as such: it counts as one predicted tuple that matches nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .tuples import ELEMENTS, Elements, check_elements, check_format
from .validation import describe

SEPARATOR = "[SSEP]"
# The paraphrase's sentiment words (ABSA-QUAD's sentword2opinion, inverted).
SENTIMENT_WORDS = {"great": "positive", "bad": "negative", "ok": "neutral"}


class ParsedTuples(NamedTuple):
    """What `parse_tuples` read: the tuples (in element order; an implicit aspect, "it" in a
    paraphrase, as "NULL") and the segments it could not read."""

    tuples: list[tuple[str, ...]]
    unparsed: list[str]


def _halves(text: str, word: str) -> tuple[str, str] | None:
    """`text` split at `word` when it occurs exactly once and leaves two non-empty halves."""
    parts = text.split(word)
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        return None
    return parts[0].strip(), parts[1].strip()


def _paraphrase(segment: str, elements: Elements) -> tuple[str, ...] | None:
    """ "category is great because aspect is opinion" -> the tuple, or None."""
    found = _halves(segment, " because ")
    if found is None:
        return None
    first, second = _halves(found[0], " is "), _halves(found[1], " is ")
    if first is None or second is None:
        return None
    (category, word), (aspect, opinion) = first, second
    sentiment = SENTIMENT_WORDS.get(word.casefold(), word)
    values = {"aspect": "NULL" if aspect.casefold() == "it" else aspect, "category": category}
    values |= {"opinion": opinion, "sentiment": sentiment}
    return tuple(values[name] for name in elements)


def _extraction(segment: str, elements: Elements) -> tuple[str, ...] | None:
    """ "(a, b, c)" -> the tuple of its parts in element order, or None."""
    if not (segment.startswith("(") and segment.endswith(")")):
        return None
    parts = [part.strip() for part in segment[1:-1].split(",")]
    if len(parts) != len(elements) or not all(parts):
        return None
    return tuple(parts)


def read_text(text: str, format: str, elements: Elements) -> ParsedTuples:  # noqa: A002
    """`parse_tuples` on checked options."""
    if format == "paraphrase":
        segments, read = text.split(SEPARATOR), _paraphrase
    else:
        segments, read = text.split(";"), _extraction
    tuples, unparsed = [], []
    for segment in segments:
        segment = segment.strip()
        if not segment:
            continue  # nothing generated: no tuple
        found = read(segment, elements)
        if found is None:
            unparsed.append(segment)
        else:
            tuples.append(found)
    return ParsedTuples(tuples, unparsed)


def parse_tuples(text: str, *, format: str, elements: Any = "aste") -> ParsedTuples:  # noqa: A002
    """The tuples a generative model's output holds, as `sentiment_tuple_prf(format=...)` reads them.

    Args:
        text: one example's generated text.
        format: "paraphrase" (ABSA-QUAD: `category is great because aspect is opinion`, segments
            separated by "[SSEP]", "it" for an implicit aspect, the sentiment words great / bad /
            ok for positive / negative / neutral; needs all four elements) or "tuples" (generative
            ABSA: `(a, b, c); (d, e, f)`, the parts in the order of `elements`).
        elements: the tuple's elements, a preset ("aste", "asqp", ...) or names in order.

    Returns:
        `ParsedTuples(tuples, unparsed)`: the tuples read, in the order of `elements` (an
        implicit aspect as "NULL"), and the non-empty segments that could not be read. An output
        of white space only holds no tuple.

    Example:
        >>> parse_tuples("food quality is bad because it is cold [SSEP] service", format="paraphrase", elements="asqp")
        ParsedTuples(tuples=[('NULL', 'food quality', 'negative', 'cold')], unparsed=['service'])
    """
    elements = check_elements(elements)
    if check_format(format) is None:
        raise ValueError("format must be 'paraphrase' or 'tuples' to read generated text")
    if format == "paraphrase" and set(elements) != set(ELEMENTS):
        raise ValueError(f"format='paraphrase' reads quads: give elements='asqp' or 'acos', got {list(elements)}")
    if not isinstance(text, str):
        raise ValueError(f"text must be a str (a model's output), got {describe(text)}")
    return read_text(text, format, elements)


def read_predictions(predictions: Sequence[Any], format: str, elements: Elements) -> tuple[list[Any], list[list[str]]]:  # noqa: A002
    """Each example's generated text read: (its tuples, its unreadable segments) per example."""
    rows, segments = [], []
    cache: dict[str, ParsedTuples] = {}
    for index, text in enumerate(predictions):
        if not isinstance(text, str):
            raise ValueError(
                f"predictions: example {index} must be the generated text (a str) with format={format!r}, "
                f"got {describe(text)}"
            )
        parsed = cache.get(text)
        if parsed is None:
            parsed = cache[text] = read_text(text, format, elements)
        rows.append(parsed.tuples)
        segments.append(parsed.unparsed)
    return rows, segments
