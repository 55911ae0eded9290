"""Three systems in the Spaces (issue 37): one small real-shaped table (three movies, three
systems; four reviews rated per aspect; three restaurant reviews' sentiment triplets),
written as a visitor gives it (typed with `[name]` prefixes, a file with a `model` column,
a file per system), the library's values on it, and a Space's page read back (its tables,
its error badges and toasts)."""

import csv
import json
from pathlib import Path

from opinion_metrics.embeddings.encoder import DEFAULT_MODEL
from opinion_metrics.families.aspect_sentiment_score import DEFAULT_ASPECTS

SYSTEMS = ("tfidf", "yake", "keybert")
IDS = ("m1", "m2", "m3")
GOLD = [["space opera", "jedi", "empire"], ["satire", "class struggle", "comedy"], ["heist", "bank robbery", "crew"]]
TEXTS = [
    "A space opera: a young jedi knight fights the empire.",
    "A biting satire of class, and a dark comedy too.",
    "A clever heist: the crew plans a bank robbery. Great fun.",
]
PREDICTIONS = {
    "tfidf": [["space opera", "jedi knight", "film"], ["satire", "comedy", "pizza"], ["bank robbery", "crew", "vault"]],
    "yake": [["space", "empire", "war"], ["social satire", "class"], ["heist", "money"]],
    "keybert": [["jedi", "space opera"], ["dark comedy", "class struggle", "boring"], ["robbery", "heist crew"]],
}
SCORES = {system: [[0.9, 0.6, 0.3][: len(row)] for row in rows] for system, rows in PREDICTIONS.items()}
SCORES["yake"] = [[0.4, 0.8, 0.1], [0.7, 0.2], [0.9, 0.5]]  # not in the order of the keywords
# The aspect score: four reviews, one rating per default aspect (0: absent).
RATINGS = [[0, 5, 0, 5, 0, 0], [3, 0, 0, 0, 2, 0], [0, 0, 4, 5, 0, 0], [4, 0, 0, 3, 0, 1]]
PREDICTED_RATINGS = {
    "tfidf": [[0, 4, 0, 5, 0, 0], [3, 0, 0, 4, 2, 0], [0, 0, 5, 5, 0, 0], [4, 0, 0, 3, 0, 0]],
    "yake": [[0, 5, 0, 5, 0, 0], [3, 0, 0, 0, 2, 0], [0, 0, 4, 4, 0, 0], [5, 0, 0, 3, 0, 1]],
    "keybert": [[2, 5, 0, 0, 0, 0], [3, 0, 0, 0, 0, 0], [0, 0, 4, 5, 0, 1], [4, 0, 0, 3, 0, 1]],
}

# The tuple family: three restaurant reviews' triplets (aspect, opinion, sentiment).
TUPLES = [
    [["pizza", "over cooked", "NEG"], ["staff", "friendly", "POS"]],
    [["wine list", "long", "POS"]],
    [["service", "slow", "NEG"], ["dessert", "great", "POS"]],
]
PREDICTED_TUPLES = {
    "tfidf": [[["pizza", "over cooked", "NEG"]], [["wine list", "long", "POS"]], [["service", "slow", "POS"]]],
    "yake": [[["pizza", "overcooked", "NEG"], ["staff", "friendly", "POS"]], [], [["dessert", "great", "POS"]]],
    "keybert": [
        [["staff", "friendly", "positive"], ["pizza", "over cooked", "negative"]],
        [["wine", "long", "POS"]],
        [["service", "slow", "NEG"], ["dessert", "great", "POS"], ["music", "loud", "NEG"]],
    ],
}


# --- the ways a visitor gives them -------------------------------------------------------------


def _keywords(row, scores=None):
    return "; ".join(f"{k} ({s})" for k, s in zip(row, scores)) if scores else "; ".join(row)


def typed(family):
    """The text boxes ({label: text}): every predictions line starts with [its system]; the
    references and texts once per example. Scores are typed for every family (read alike)."""
    if family == "aspect_sentiment_score":
        predictions = [f"[{s}] " + ", ".join(map(str, row)) for s in SYSTEMS for row in PREDICTED_RATINGS[s]]
        references = "\n".join(", ".join(map(str, row)) for row in RATINGS)
        return {"predictions": "\n".join(predictions), "references": references, "aspects": ", ".join(DEFAULT_ASPECTS)}
    if family == "sentiment_tuple_prf":
        predictions = [f"[{s}] {json.dumps(row)}" for s in SYSTEMS for row in PREDICTED_TUPLES[s]]
        return {"predictions": "\n".join(predictions), "references": "\n".join(map(json.dumps, TUPLES))}
    predictions = [f"[{s}] {_keywords(row, scores)}" for s in SYSTEMS for row, scores in zip(PREDICTIONS[s], SCORES[s])]
    boxes = {"predictions": "\n".join(predictions)}
    if family != "keyword_diversity":
        boxes.update(references="\n".join(map(_keywords, GOLD)), texts="\n".join(TEXTS))
    return boxes


def _rows(system):
    return [
        {"review_id": i, "predictions": p, "scores": s, "references": g, "texts": t}
        for i, p, s, g, t in zip(IDS, PREDICTIONS[system], SCORES[system], GOLD, TEXTS)
    ]


def system_column_file(folder: Path, family: str) -> Path:
    """One file, a row per (movie, system) with the system in a `model` column, movie by movie;
    the aspect score's as CSV (a gold and a `pred_` column per aspect), the tuples' per review."""
    if family == "aspect_sentiment_score":
        path = folder / "ratings.csv"
        with open(path, "w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(["review_id", "model", *DEFAULT_ASPECTS, *(f"pred_{a}" for a in DEFAULT_ASPECTS)])
            for index, gold in enumerate(RATINGS):
                for system in SYSTEMS:
                    writer.writerow([f"r{index}", system, *gold, *PREDICTED_RATINGS[system][index]])
        return path
    if family == "sentiment_tuple_prf":
        path = folder / "triplets.jsonl"
        rows = [{"review_id": i, "model": s, "predictions": PREDICTED_TUPLES[s][n], "references": TUPLES[n]}
                for n, i in enumerate(IDS) for s in SYSTEMS]  # fmt: skip
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        return path
    path = folder / "movies.jsonl"
    rows = [dict(_rows(system)[index], model=system) for index in range(len(IDS)) for system in SYSTEMS]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def files_per_system(folder: Path) -> list[Path]:
    """A JSON Lines file per system (named by it), rows paired by their review_id."""
    paths = []
    for system in SYSTEMS:
        paths.append(folder / f"{system}.jsonl")
        paths[-1].write_text("".join(json.dumps(row) + "\n" for row in _rows(system)), encoding="utf-8")
    return paths


# --- the library on the same inputs ------------------------------------------------------------


def library_values(family, system):
    """The family function's values (its defaults) on the system's inputs."""
    import opinion_metrics as om

    if family == "aspect_sentiment_score":
        return om.aspect_sentiment_score(PREDICTED_RATINGS[system], RATINGS, aspects=list(DEFAULT_ASPECTS))
    if family == "sentiment_tuple_prf":
        return om.sentiment_tuple_prf(PREDICTED_TUPLES[system], TUPLES)
    predictions = PREDICTIONS[system]
    if family == "keyword_diversity":  # the Space's model control: its default model
        return om.keyword_diversity(predictions, model=DEFAULT_MODEL)
    if family == "weighted_keyword_prf":
        return om.weighted_keyword_prf(predictions, SCORES[system], GOLD)
    if family == "sentiment_appropriateness":
        return om.sentiment_appropriateness(predictions, GOLD, texts=TEXTS)
    return getattr(om, family)(predictions, GOLD)


def library_comparison(family, baseline, system):
    """`compare_systems` of `system` against `baseline` (the compare tab's defaults)."""
    from opinion_metrics import compare_systems

    scores = {"scores_a": SCORES[baseline], "scores_b": SCORES[system]} if family == "weighted_keyword_prf" else {}
    texts = {"texts": TEXTS} if family == "sentiment_appropriateness" else {}
    return compare_systems(family, PREDICTIONS[baseline], PREDICTIONS[system], GOLD, **scores, **texts)


def shown(value):
    """A value as the Spaces show it: 4 decimals, "n/a" where undefined."""
    return "n/a" if value is None or value != value else f"{value:.4f}"


# --- the page ------------------------------------------------------------------------------------

_ROWS = """table => [...table.querySelectorAll('[role=row]')].map(row =>
    [...row.querySelectorAll('[role=gridcell],[role=columnheader]')].map(cell => cell.innerText.trim()))"""

_ERRORS = """() => [
    ...[...document.querySelectorAll('span.error')].map(badge => 'badge: ' + badge.innerText),
    ...[...document.querySelectorAll('[data-testid="toast-body"].error')].map(toast => 'toast: ' + toast.innerText),
]"""

_BUSY = """() => [...document.querySelectorAll('.pending, .generating, .eta-bar')]
    .every(e => e.offsetParent === null)"""


def settle(page) -> None:
    """Wait until no event of the page is running (twice: an event's follow-up starts after it)."""
    for _ in range(2):
        page.wait_for_function(_BUSY, timeout=180_000)
        page.wait_for_timeout(400)


def assert_no_error_shown(page, when: str) -> None:
    """No red "Error" badge on any output and no error toast anywhere in the page."""
    found = page.evaluate(_ERRORS)
    assert not found, f"{when}: {found}"


def table_rows(table) -> list[list[str]]:
    """A Gradio table's header and rows as their cells' texts (every row rendered: none scrolled away)."""
    table.scroll_into_view_if_needed()
    rows = table.evaluate(_ROWS)
    assert len(rows) == int(table.get_attribute("aria-rowcount")), "rows left unrendered"
    return rows


def metric_name(cell: str) -> str:
    """ "precision ↑\\n<its meaning>" -> "precision" (the first line without its direction)."""
    return cell.split("\n")[0].replace("\u00a0", " ").removesuffix(" ↑").removesuffix(" ↓")


def results_by_system(rows: list[list[str]]) -> dict[str, dict[str, str]]:
    """The results view ({system: {metric: value text}}): a column per system (" (baseline)"
    dropped), a row per metric ("examples" left out), each value's first line (not its difference)."""
    systems = [header.removesuffix(" (baseline)") for header in rows[0][1:]]
    found = {system: {} for system in systems}
    for row in rows[1:]:
        if row[0] == "examples":
            continue
        for system, cell in zip(systems, row[1:]):
            found[system][metric_name(row[0])] = cell.split("\n")[0]
    return found


def aspect_key(metric: str) -> str:
    """The aspect score's row name as its library key: "restaurant: f1" -> "f1_restaurant"."""
    aspect, _, column = metric.rpartition(": ")
    return f"{column}_{aspect}" if aspect else column
