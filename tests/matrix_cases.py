"""The crossing matrix's table and its oracle (tests/cli/test_cli_matrix.py): a small real-shaped
table (reviews of two movies from the movie data, three systems, scores clipped into [0, 1])
written in every input form the CLI reads, once per shape (systems in a `model` column, or
side by side as `keywords_<system>`), with and without its gold lists; and what the library
gives on the same rows for each result row, comparison and per-example record the CLI writes."""

from __future__ import annotations

import csv
import gzip
import itertools
import json
import math
from pathlib import Path
from typing import Any

from conftest import MOVIE_REVIEWS, require_shared

from opinion_metrics import compare_systems, keyword_prf, pool_by_group, sentiment_appropriateness, weighted_keyword_prf

SYSTEMS = ("base", "reranker", "sentiment")
MOVIES = ("SW_Episode4", "HarryPotter")
PER_MOVIE = 5
FAMILIES = ("keyword_prf", "weighted_keyword_prf", "sentiment_appropriateness")
FUNCTIONS = {"keyword_prf": keyword_prf, "weighted_keyword_prf": weighted_keyword_prf}
FUNCTIONS["sentiment_appropriateness"] = sentiment_appropriateness
TAKES_PRESENCE = ("keyword_prf", "weighted_keyword_prf")
FORMS = ("jsonl", "csv", "tsv", "json", "parquet", "parquet-folder", "hive", "datasets", "arrow")
SHAPES = ("long", "wide")
RESAMPLES = ["--n-resamples", "40", "--random-state", "1"]


def movie_reviews() -> tuple[list[dict], dict[str, list[str]]]:
    """The first reviews of each movie, each with its systems' keywords and clipped scores, and the
    gold keywords of each movie."""
    folder = require_shared(MOVIE_REVIEWS)
    with open(folder / "ground_truth.jsonl", encoding="utf-8") as lines:
        gold = {record["movie"]: record["keywords"] for record in map(json.loads, lines)}
    reviews = []
    for movie in MOVIES:
        with gzip.open(folder / f"{movie}.jsonl.gz", "rt", encoding="utf-8") as lines:
            for record in map(json.loads, itertools.islice(lines, PER_MOVIE)):
                review = {"review_id": record["review_id"], "movie": movie, "review": record["review"]}
                for system in SYSTEMS:
                    review[f"keywords_{system}"] = record[f"keywords_{system}"]
                    review[f"scores_{system}"] = [min(max(s, 0.0), 1.0) for s in record[f"scores_{system}"]]
                reviews.append(review)
    return reviews, {movie: gold[movie] for movie in MOVIES}


def shaped(reviews: list[dict], gold: dict[str, list[str]], shape: str, references: bool) -> list[dict]:
    """The table's rows: a row per review and system (`model` column), or a row per review."""
    rows = []
    for review in reviews:
        base = {"review_id": review["review_id"], "movie": review["movie"], "review": review["review"]}
        if references:
            base["references"] = gold[review["movie"]]
        if shape == "wide":
            rows.append({**base, **{k: v for k, v in review.items() if k.startswith(("keywords_", "scores_"))}})
            continue
        for system in SYSTEMS:
            row = {"model": system, **base}
            row.update(predictions=review[f"keywords_{system}"], scores=review[f"scores_{system}"])
            rows.append(row)
    return rows


def write_form(form: str, rows: list[dict], path: Path, partition: str) -> tuple[Path, list[dict]]:
    """`rows` written as `form` at `path` (plus its suffix); returns the path and the rows in the
    order the file holds them (a hive folder holds them by partition value)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if form == "jsonl":
        target = path.with_suffix(".jsonl")
        target.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    elif form == "json":
        target = path.with_suffix(".json")
        target.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    elif form in ("csv", "tsv"):  # list cells as JSON lists (pandas-like) in CSV, as "a; b" in TSV
        target = path.with_suffix(f".{form}")
        with open(target, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, list(rows[0]), delimiter="," if form == "csv" else "\t")
            writer.writeheader()
            for row in rows:
                cell = json.dumps if form == "csv" else (lambda items: "; ".join(map(str, items)))
                writer.writerow({k: cell(v) if isinstance(v, list) else v for k, v in row.items()})
    elif form == "parquet":
        target = path.with_suffix(".parquet")
        pq.write_table(pa.Table.from_pylist(rows), target, row_group_size=7)
    elif form == "parquet-folder":
        target = path.with_name(path.name + "_parts")
        target.mkdir()
        for number, start in enumerate(range(0, len(rows), 11)):
            pq.write_table(pa.Table.from_pylist(rows[start : start + 11]), target / f"part-{number:02d}.parquet")
        (target / "_SUCCESS").write_text("")
    elif form == "hive":  # as Spark's partitionBy(partition) writes it
        target = path.with_name(path.name + "_hive")
        pq.write_to_dataset(pa.Table.from_pylist(rows), target, partition_cols=[partition])
        (target / "_SUCCESS").write_text("")
        rows = sorted(rows, key=lambda row: f"{partition}={row[partition]}")  # the files in name order
    elif form == "datasets":
        import datasets

        target = path.with_name(path.name + "_dataset")
        datasets.Dataset.from_list(rows).save_to_disk(str(target))
    elif form == "arrow":
        import pyarrow.feather as feather

        target = path.with_suffix(".arrow")
        feather.write_feather(pa.Table.from_pylist(rows), target)
    else:
        raise ValueError(form)
    return target, rows


def review_order(rows: list[dict]) -> list[str]:
    """The reviews' ids in the order the file holds them (each system's rows in the same order)."""
    return list(dict.fromkeys(row["review_id"] for row in rows))


class Oracle:
    """What the library gives on the rows of each result row the CLI writes."""

    def __init__(self, reviews: list[dict], gold: dict[str, list[str]], order: list[str]) -> None:
        by_id = {review["review_id"]: review for review in reviews}
        self.reviews = [by_id[review_id] for review_id in order]
        self.gold = gold

    def rows(self, value: str | None) -> list[dict]:
        return [review for review in self.reviews if value is None or review["movie"] == value]

    def inputs(self, family: str, system: str, rows: list[dict], view: str, group: bool, ci: bool) -> dict:
        """The library's arguments for `family` on `system`'s `rows`."""
        predictions = [row[f"keywords_{system}"] for row in rows]
        references = [self.gold[row["movie"]] for row in rows]
        scores = [row[f"scores_{system}"] for row in rows]
        options: dict[str, Any] = {"confidence_level": 0.9, "n_resamples": 40, "random_state": 1} if ci else {}
        if group:
            pooled = pool_by_group(predictions, references, [row["movie"] for row in rows], scores=scores)
            predictions, references, scores = pooled.predictions, pooled.references, pooled.scores
        elif family == "sentiment_appropriateness" or view != "all":
            options["texts"] = [row["review"] for row in rows]
        if family in TAKES_PRESENCE and view != "all":
            options["presence"] = view
        arguments = [predictions, scores, references] if family == "weighted_keyword_prf" else [predictions, references]
        return {"arguments": arguments, "options": options}

    def call(self, family: str, given: dict, per_example: bool = False) -> dict:
        options = {**given["options"], **({"return_per_example": True} if per_example else {})}
        return FUNCTIONS[family](*given["arguments"], **options)

    def subsets(self, systems: tuple[str, ...], by: bool, views: tuple[str, ...]) -> list[tuple]:
        """(result name, family, system, --by value, view) of each result the CLI writes."""
        found = []
        for system in systems:
            for value in list(dict.fromkeys(r["movie"] for r in self.reviews)) if by else [None]:
                for view in views:
                    for family in FAMILIES:
                        if family not in TAKES_PRESENCE and view != views[0]:
                            continue
                        shown = view if family in TAKES_PRESENCE and len(views) > 1 else ""
                        name = "/".join(part for part in (system, value, shown) if part)
                        found.append((name, family, system, value, view))
        return found

    def results(self, systems: tuple[str, ...], by: bool, views: tuple[str, ...], group: bool, ci: bool) -> dict:
        expected: dict[str, dict] = {}
        for name, family, system, value, view in self.subsets(systems, by, views):
            given = self.inputs(family, system, self.rows(value), view, group, ci)
            expected.setdefault(name, {})[family] = self.call(family, given)
        return expected

    def differences(self, systems: tuple[str, ...], by: bool, base: str) -> dict:
        """compare_systems of each system with `base` on the same rows (of each --by value)."""
        expected: dict[str, dict] = {}
        for name, family, system, value, view in self.subsets(systems, by, ("all",)):
            if system == base:
                continue
            a = self.inputs(family, base, self.rows(value), view, False, False)
            b = self.inputs(family, system, self.rows(value), view, False, False)
            scores = {"scores_a": a["arguments"][1], "scores_b": b["arguments"][1]} if len(a["arguments"]) == 3 else {}
            expected.setdefault(name, {})[family] = compare_systems(
                family, a["arguments"][0], b["arguments"][0], a["arguments"][-1], **scores,
                method="permutation", n_resamples=40, random_state=1, confidence_level=0.95, **a["options"],
            )  # fmt: skip
        return expected


def holm(p_values: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values, by hand."""
    ordered = sorted(p_values, key=p_values.get)
    adjusted, running = {}, 0.0
    for rank, name in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - rank) * p_values[name]))
        adjusted[name] = running
    return adjusted


def assert_values(actual: dict, expected: dict, where: str) -> None:
    """The same keys, and every number equal to 1e-12 (NaN to NaN, None to None)."""
    assert set(actual) == set(expected), (where, sorted(set(actual) ^ set(expected)))
    for key, value in expected.items():
        found = actual[key]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            assert found is None or (isinstance(found, float) and math.isnan(found)), (where, key, found)
        else:
            assert math.isclose(found, value, rel_tol=1e-12, abs_tol=1e-12), (where, key, found, value)
