"""The "why" table of the Spaces: per example, the matched pairs, similarities or sentiments
behind its values, in the Space's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.tuples import check_elements
from ..io.pairing import id_column
from ..io.table import Table
from . import controls as families
from .controls import keyword_options, tuple_inputs
from .parsing import whole_number


def _written(keyword: str, normalized: str | None) -> str:
    """A keyword as written, and the form that was compared where normalization changed it."""
    return keyword if normalized is None else f"{keyword} [{normalized}]"


def _pairs(matches: list[dict[str, Any]], detail: str = "") -> str:
    shown = []
    for match in matches:
        extra = f" ({match[detail]:.4f})" if detail in match else ""
        prediction = _written(match["prediction"], match.get("prediction_normalized"))
        shown.append(f"{prediction} → {_written(match['reference'], match.get('reference_normalized'))}{extra}")
    return "; ".join(shown) or "none"


def _sentiments(items: list[dict[str, Any]], limit: int | None = None) -> str:
    return _listed([f"{item['keyword']} {item['sentiment']:.4f}" for item in items], limit) or "none"


# Unmatched gold keywords shown per example (real gold lists hold hundreds): the first, most important ones.
GOLD_SHOWN = 12


def _listed(items: Sequence[str], limit: int | None = GOLD_SHOWN) -> str:
    """Items joined by "; ", at most `limit` of them and then how many more: "a; b; … and 398 more (400)"."""
    if limit is None or len(items) <= limit:
        return "; ".join(items)
    return "; ".join(items[:limit]) + f"; … and {len(items) - limit} more ({len(items)} in all)"


def _example_names(upload: Table | None, count: int) -> dict[str, list[Any]]:
    """The columns naming each example of a per-example table: its line in the boxes or the file (a
    Parquet file's row), and its id where the file has an id column (review_id, id)."""
    if upload is None or upload.lines is not None:
        names: dict[str, list[Any]] = {"line": list(upload.lines if upload is not None else range(1, 1 + count))}
    else:
        names = {"row": [row + 1 for row in (upload.rows or range(count))]}
    column = id_column(upload.columns) if upload is not None else None
    if column is not None and len(upload.columns[column]) == count:
        names[column] = list(upload.columns[column])
    return names


def _tuple(item: Any, elements: Sequence[str] = ()) -> str:
    """A tuple as the box shows it: (pizza, over cooked, NEG); a mapping's values in the order of
    the `elements` (NULL for one it lacks), as a sequence gives them."""
    values = [item.get(name) for name in elements] if isinstance(item, dict) else item
    return "(" + ", ".join("NULL" if value is None else str(value) for value in values) + ")"


def _credited(match: dict[str, Any], elements: Sequence[str] = ()) -> str:
    """An assigned pair with its credits (precision, recall), or without them (membership counting)."""
    pair = f"{_tuple(match['prediction'], elements)} → {_tuple(match['reference'], elements)}"
    if "precision_credit" not in match:
        return pair
    return f"{pair} ({match['precision_credit']:.4f}, {match['recall_credit']:.4f})"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def explanation_table(name: str, data: dict[str, Any], options: dict[str, Any], upload: Table | None) -> Any:
    """Per example, why its values are what they are (`opinion_metrics.explain`): which
    prediction matched which gold keyword (with the cosine for the semantic family, the score
    for the weighted one), each keyword's and the review's sentiment, the repeated keywords;
    the tuples assigned with their credits, those unmatched and the text that could not be read."""
    import pandas as pd

    from ..analysis.explain import explain

    library = keyword_options(options)
    library.pop("confidence_level", None)
    if "model" in library:
        library["model"] = families.MODELS.get(library["model"])
    if "k" in library:
        library["k"] = whole_number(library["k"], "k")
    given: dict[str, Any] = {"texts": data.get("texts")}
    if name == "sentiment_tuple_prf":
        data = {**data, **tuple_inputs(data, library)}
    if name == "weighted_keyword_prf":
        given["scores"] = data.get("scores")
    if name == "sentiment_appropriateness":
        given["prediction_sentiments"] = data.get("prediction_sentiments")
    if name == "keyword_diversity":
        given.pop("texts")
    try:
        records = explain(name, data["predictions"], data.get("references"), **given, **library)
    finally:
        families.clear_embedding_cache()
    frame = pd.DataFrame(_example_names(upload, len(records)))
    if name in ("keyword_prf", "weighted_keyword_prf"):
        frame["matched: prediction → gold keyword" + (" (its score)" if name != "keyword_prf" else "")] = [
            _pairs(r["matches"], "score") for r in records
        ]
        frame["unmatched predictions"] = [
            "; ".join(_written(p, r.get("normalized", {}).get(p)) for p in r["unmatched_predictions"]) for r in records
        ]
        frame[f"unmatched gold keywords (the first {GOLD_SHOWN}, most important first)"] = [
            _listed([_written(g, r.get("normalized", {}).get(g)) for g in r["unmatched_references"]]) for r in records
        ]
    elif name == "semantic_keyword_prf":
        threshold = records[0]["threshold"] if records else library.get("threshold")
        frame[f"matched (cosine ≥ {threshold:g})"] = [_pairs(r["matches"], "similarity") for r in records]
        closest = []
        for record in records:
            matched = {m["prediction"] for m in record["matches"]}
            closest.append(
                _pairs([p for p in record["closest_references"] if p["prediction"] not in matched], "similarity")
            )
        frame[f"unmatched predictions: closest gold keyword (cosine < {threshold:g})"] = closest
        frame["unmatched gold keywords (what recall misses): closest prediction"] = [
            _listed(
                [f"{p['reference']} ← {p['prediction']} ({p['similarity']:.4f})" for p in r["unmatched_references"]]
            )
            or "none"
            for r in records
        ]
    elif name == "sentiment_tuple_prf":
        elements = check_elements(library.get("elements", "aste"))

        def shown(item: Any) -> str:
            return _tuple(item, elements)

        frame["assigned: prediction → gold tuple (precision credit, recall credit)"] = [
            "; ".join(_credited(match, elements) for match in r["matches"]) or "none" for r in records
        ]
        frame["unmatched predictions"] = ["; ".join(map(shown, r["unmatched_predictions"])) or "none" for r in records]
        frame["unmatched gold tuples"] = [
            _listed(list(map(shown, r["unmatched_references"]))) or "none" for r in records
        ]
        frame["repeats dropped (each tuple counts once)"] = [
            "; ".join(map(shown, r.get("repeated", ()))) or "none" for r in records
        ]
        frame["not read (each counts as a wrong prediction)"] = [
            "; ".join(map(repr, r.get("unreadable", ()))) or "none" for r in records
        ]
    elif name == "sentiment_appropriateness":
        frame["predicted keywords (sentiment: 0 negative, 0.5 neutral, 1 positive)"] = [
            _sentiments(r["predictions"]) for r in records
        ]
        frame["their mean"] = [_number(r["prediction_sentiment"]) for r in records]
        frame["gold keywords (sentiment)"] = [_sentiments(r["references"], GOLD_SHOWN) for r in records]
        frame["gold mean"] = [_number(r["reference_sentiment"]) for r in records]
        frame["review sentiment"] = [_number(r["text_sentiment"]) for r in records]
    else:
        frame["repeated keywords (written differently, normalized alike)"] = [
            "; ".join(" = ".join(group) for group in r["repeated"]) or "none" for r in records
        ]
        frame["repeated tokens (what lowers unique_token_ratio)"] = [
            "; ".join(f"{item['token']} ×{item['count']}" for item in r["repeated_tokens"]) or "none" for r in records
        ]
    return frame
