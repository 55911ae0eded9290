"""Brute force of SPEC section 13 (sentiment tuples), written from SPEC.md and independent of the
library: every tuple prepared by hand, every assignment of predicted to gold tuples enumerated
and compared in exact fractions. Slow on purpose; used to check the library's values."""

from collections import Counter
from fractions import Fraction

from reference_impl import normalize as normalize_text

PRESETS = {
    "aope": ("aspect", "opinion"),
    "aste": ("aspect", "opinion", "sentiment"),
    "tasd": ("aspect", "category", "sentiment"),
    "asqp": ("aspect", "category", "sentiment", "opinion"),
    "acos": ("aspect", "category", "opinion", "sentiment"),
}
SPANS = ("aspect", "opinion")
LABEL_MAP = {"pos": "positive", "neg": "negative", "neu": "neutral"}


def order(elements):
    return PRESETS[elements] if isinstance(elements, str) else tuple(elements)


def values_of(item, names):
    return [item[name] for name in names] if isinstance(item, dict) else list(item)


def prepare(value, name, normalize, label_map):
    """A span: ("implicit",), ("text", tokens) or ("positions", set); a label: ("label", form)."""
    if name in SPANS:
        if value is None or (isinstance(value, str) and value.strip().casefold() == "null"):
            return ("implicit",)
        if isinstance(value, str):
            return ("text", tuple(normalize_text(value, normalize).split()))
        return ("positions", frozenset(value))
    label = value.strip().casefold()
    return ("label", label_map.get(label, label))


def first_occurrences(tuples):
    kept = []
    for item in tuples:
        if item not in kept:
            kept.append(item)
    return kept


def shared(a, b):
    if a[0] == "positions":
        return len(a[1] & b[1])
    return sum((Counter(a[1]) & Counter(b[1])).values())


def credit(p, g, names, match):
    """(precision credit, recall credit) of a compatible pair, None otherwise."""
    if match == "exact":
        return (Fraction(1), Fraction(1)) if p == g else None
    precision, recall = [], []
    for a, b, name in zip(p, g, names):
        if name not in SPANS or a[0] == "implicit" or b[0] == "implicit":
            if a != b:
                return None
        else:
            common = shared(a, b)
            if common == 0:
                return None
            precision.append(Fraction(common, len(a[1])))
            recall.append(Fraction(common, len(b[1])))
    if not precision:
        return Fraction(1), Fraction(1)
    return sum(precision) / len(precision), sum(recall) / len(recall)


def assignments(predicted, gold, names, match):
    """Every one-to-one assignment (each prediction to no gold tuple or to an unused compatible
    one) as (sum of (pc + rc) / 2, sum of pc, sum of rc)."""
    credits = {(i, j): credit(p, g, names, match) for i, p in enumerate(predicted) for j, g in enumerate(gold)}
    found = []

    def walk(i, used, total, precision, recall):
        if i == len(predicted):
            found.append((total, precision, recall))
            return
        walk(i + 1, used, total, precision, recall)
        for j in range(len(gold)):
            pair = credits[i, j]
            if pair is not None and j not in used:
                walk(i + 1, used | {j}, total + (pair[0] + pair[1]) / 2, precision + pair[0], recall + pair[1])

    walk(0, frozenset(), Fraction(0), Fraction(0), Fraction(0))
    return found


def matched(predicted, gold, names, match):
    """(matched predictions, matched gold tuples) of the best assignment: the largest credit sum,
    then the largest precision credit sum (any such assignment: they all give the same)."""
    best = max(assignments(predicted, gold, names, match), key=lambda found: found[:2])
    ties = {found[2] for found in assignments(predicted, gold, names, match) if found[:2] == best[:2]}
    assert ties == {best[2]}, "the definition says the values do not depend on further ties"
    return best[1], best[2]


def ratio(a, b, zero_division):
    return zero_division if b == 0 else a / b


def f1(p, r):
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def default_projections(names):
    spans = [name for name in SPANS if name in names]
    return [[name] for name in spans] + ([spans] if len(spans) == 2 else [])


def sentiment_tuple_prf(
    predictions,
    references,
    *,
    elements="aste",
    match="exact",
    average="micro",
    counting="one_to_one",
    projections=None,
    label_map=None,
    normalize="default",
    zero_division=0.0,
    unparsed=None,
):
    """SPEC section 13 by enumeration; `unparsed[i]`: unreadable segments of prediction i."""
    names = order(elements)
    label_map = LABEL_MAP if label_map is None else {k.casefold(): v.casefold() for k, v in label_map.items()}
    projections = default_projections(names) if projections is None else projections
    unparsed = unparsed or [0] * len(predictions)
    result = {}
    for number, projection in enumerate([list(names), *projections]):
        columns = [names.index(name) for name in projection]
        rows = []
        for predicted, gold, extra in zip(predictions, references, unparsed):
            if counting == "membership":
                strip = [tuple(v.strip() if isinstance(v, str) else v for v in values_of(t, names)) for t in predicted]
                gold_stripped = [
                    tuple(v.strip() if isinstance(v, str) else v for v in values_of(t, names)) for t in gold
                ]
                keys = [tuple(t[c] for c in columns) for t in strip]
                gold_keys = [tuple(t[c] for c in columns) for t in gold_stripped]
                hits = sum(key in gold_keys for key in keys)
                rows.append((hits, len(predicted) + extra, hits, len(gold)))
                continue
            sides = []
            for tuples in (predicted, gold):
                prepared = [[prepare(v, n, normalize, label_map) for v, n in zip(values_of(t, names), names)]
                            for t in tuples]  # fmt: skip
                sides.append(first_occurrences([tuple(t[c] for c in columns) for t in prepared]))
            mp, mg = matched(*sides, projection, match)
            rows.append((mp, len(sides[0]) + extra, mg, len(sides[1])))
        if average == "micro":
            p = ratio(sum(r[0] for r in rows), sum(r[1] for r in rows), zero_division)
            r = ratio(sum(r[2] for r in rows), sum(r[3] for r in rows), zero_division)
            values = (float(p), float(r), f1(float(p), float(r)))
        else:
            per = [(float(ratio(a, b, zero_division)), float(ratio(c, d, zero_division))) for a, b, c, d in rows]
            values = tuple(sum(v) / len(per) for v in zip(*[(p, r, f1(p, r)) for p, r in per]))
        prefix = "" if number == 0 else "_".join(projection) + "_"
        result.update(dict(zip((prefix + "precision", prefix + "recall", prefix + "f1"), values)))
    return result
