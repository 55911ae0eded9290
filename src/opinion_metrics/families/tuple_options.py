"""The options of the sentiment tuple family (docs/definitions.md section 13), each with its
check, meaning and choices; the registry declares them with the shared interval options."""

from __future__ import annotations

from dataclasses import replace

from ..core.tuples import (
    COUNTINGS,
    ELEMENTS,
    FORMATS,
    TUPLE_MATCHES,
    check_counting,
    check_elements,
    check_format,
    check_label_map,
    check_projections,
    check_tuple_match,
)
from .options import AVERAGE, INTERVALS, NORMALIZE, RETURN_PER_EXAMPLE, ZERO_DIVISION, Option

ELEMENTS_OPTION = Option(
    "elements",
    "text",
    "the tuple's elements in order: aope, aste, tasd, asqp, acos, or names such as aspect,category,sentiment",
    check_elements,
)


TUPLE_MATCH = Option(
    "match",
    "choice",
    "exact: every element equal; overlap: labels equal and spans sharing a token, credited by the tokens shared",
    check_tuple_match,
    TUPLE_MATCHES,
)


COUNTING = Option(
    "counting",
    "choice",
    "one_to_one: each gold tuple credited once, repeats dropped; membership: the field's count (a prediction "
    "in the gold list is a hit, each repeat too)",
    check_counting,
    COUNTINGS,
)


PROJECTIONS = Option(
    "projections",
    "text",
    "element lists also scored alone, such as aspect,opinion,aspect_opinion (default: each span element and "
    "aspect_opinion; none: no projections)",
    lambda value: check_projections(value, ELEMENTS),
)


LABEL_MAP = Option(
    "label_map",
    "text",
    "labels renamed after strip and casefold, such as pos=positive,neg=negative,neu=neutral (the default)",
    check_label_map,
)


FORMAT = Option(
    "format",
    "choice",
    "predictions are a generative model's text: paraphrase (ABSA-QUAD) or tuples (generative ABSA)",
    check_format,
    FORMATS,
)


TUPLE_OPTIONS = (
    ELEMENTS_OPTION,
    TUPLE_MATCH,
    AVERAGE,
    COUNTING,
    PROJECTIONS,
    LABEL_MAP,
    replace(NORMALIZE, meaning="text spans before they are split into tokens: " + NORMALIZE.meaning),
    FORMAT,
    ZERO_DIVISION,
    *INTERVALS,
    RETURN_PER_EXAMPLE,
)
