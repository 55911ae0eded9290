"""The crossing matrix (issue 37): one small real-shaped table (two movies of the movie data,
three systems) in every input form the CLI reads (JSON Lines, CSV, TSV, JSON, a Parquet file, a
Parquet folder, a hive-partitioned folder, a datasets folder, Arrow), in both shapes (systems in
a `model` column, or side by side), run with every CLI feature, for the lexical families. Each
cell's --output (and --per-example) equals the library called on the same rows: every system
and every split present, each value to 1e-12, nothing pooled, dropped or counted twice. Cells
that cannot combine are usage errors with their message. Each form is written once per module.
"""

from __future__ import annotations

import json
import math

import pytest
from matrix_cases import (
    FAMILIES,
    FORMS,
    RESAMPLES,
    SHAPES,
    SYSTEMS,
    Oracle,
    assert_values,
    holm,
    movie_reviews,
    review_order,
    shaped,
    write_form,
)

from opinion_metrics.cli import main

pytest.importorskip("pyarrow")
pytest.importorskip("datasets")
pytest.importorskip("vaderSentiment")  # sentiment_appropriateness's default

# feature: its flags (a dict: per shape); "gold" runs on the table without its gold lists
FEATURES: dict[str, list[str] | dict[str, list[str]]] = {
    "plain": [],
    "system": {"long": ["--system", "model"], "wide": ["--predictions", "keywords_base", "keywords_sentiment"]},
    "presence": ["--presence", "all,present"],
    "group": ["--group", "movie"],
    "by": ["--by", "movie"],
    "baseline": ["--baseline", "base", *RESAMPLES],
    "by+baseline": ["--by", "movie", "--baseline", "base", *RESAMPLES],
    "per-example": ["--presence", "all,present"],  # and --per-example
    "workers": ["--workers", "2"],
    "workers+by": ["--workers", "2", "--by", "movie", "--ci", "0.9", *RESAMPLES],
    "gold": [],  # and --gold, the table without its gold lists
    "ci": ["--ci", "0.9", *RESAMPLES],
}
# cells that cannot combine: their usage error
REFUSED = {
    "group+presence": (["--group", "movie", "--presence", "present"], "--presence cannot be pooled with --group"),
    "group+texts": (["--group", "movie", "--texts", "review"], "--texts cannot be pooled with --group"),
}


@pytest.fixture(scope="module")
def data() -> tuple[list[dict], dict[str, list[str]]]:
    return movie_reviews()


@pytest.fixture(scope="module")
def files(data, tmp_path_factory) -> dict:
    """{(form, shape, with gold lists): (path, rows in file order)}, and the gold file."""
    reviews, gold = data
    folder = tmp_path_factory.mktemp("matrix")
    written: dict = {}
    for shape in SHAPES:
        for references in (True, False):
            rows = shaped(reviews, gold, shape, references)
            for form in FORMS:
                partition = "model" if shape == "long" else "movie"  # Spark's partitionBy
                name = f"{shape}_{'gold' if references else 'bare'}_{form.replace('-', '_')}"
                written[form, shape, references] = write_form(form, rows, folder / name, partition)
    lines = "".join(json.dumps({"movie": movie, "keywords": keywords}) + "\n" for movie, keywords in gold.items())
    (folder / "gold.jsonl").write_text(lines, encoding="utf-8")
    written["gold"] = folder / "gold.jsonl"
    return written


def run(path, flags: list[str], tmp_path, capsys) -> tuple[int, dict | None, str]:
    output = tmp_path / "out.json"
    status = main([str(path), "--metrics", *FAMILIES, *flags, "--quiet", "--output", str(output)])
    err = capsys.readouterr().err
    return status, json.loads(output.read_text()) if status == 0 else None, err


@pytest.mark.parametrize("feature", FEATURES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("form", FORMS)
def test_each_form_with_each_feature_gives_the_librarys_values(files, data, tmp_path, capsys, form, shape, feature):
    flags = FEATURES[feature]
    flags = list(flags[shape] if isinstance(flags, dict) else flags)
    path, rows = files[form, shape, feature != "gold"]
    if feature == "gold":
        flags += ["--gold", str(files["gold"])]
    per_example = tmp_path / "per.jsonl"
    if feature == "per-example":
        flags += ["--per-example", str(per_example)]
    status, written, err = run(path, flags, tmp_path, capsys)
    assert status == 0, err

    oracle = Oracle(*data, review_order(rows))
    systems = ("base", "sentiment") if feature == "system" and shape == "wide" else SYSTEMS
    by = "by" in feature
    views = ("all", "present") if feature in ("presence", "per-example") else ("all",)
    ci = feature == "ci" or "--ci" in flags
    expected = oracle.results(systems, by, views, group=feature == "group", ci=ci)
    results = written["results"] if "baseline" in feature else written
    assert set(results) == set(expected)  # every system and split, each once: nothing pooled or dropped
    for name, by_family in expected.items():
        assert set(results[name]) == set(by_family), name
        for family, values in by_family.items():
            assert_values(results[name][family], values, f"{name} {family}")

    if "baseline" in feature:
        assert_comparisons(written["comparison"]["differences"], oracle.differences(systems, by, "base"))
    if feature == "per-example":
        assert_per_example(per_example, oracle, systems, views)


def assert_comparisons(found: dict, expected: dict) -> None:
    """compare_systems' values for each (system, value), and Holm's correction within each value."""
    assert set(found) == set(expected)
    for name, by_family in expected.items():
        for family, by_key in by_family.items():
            for key, values in by_key.items():
                assert_values({k: found[name][family][key][k] for k in values}, values, f"{name} {family} {key}")
    for family in FAMILIES:
        for key in expected[next(iter(expected))][family]:
            views: dict[str, dict[str, float]] = {}  # per --by value: {name: p-value}
            for name in expected:
                views.setdefault(name.partition("/")[2], {})[name] = found[name][family][key]["p_value"]
            for p_values in views.values():
                for name, adjusted in holm(p_values).items():
                    assert math.isclose(found[name][family][key]["p_value_holm"], adjusted, abs_tol=1e-12), name


def assert_per_example(path, oracle: Oracle, systems: tuple[str, ...], views: tuple[str, ...]) -> None:
    """Each record's values are the library's per-example values of its example, in order; each
    example of each system, view and family once."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    by_subset: dict[tuple, list[dict]] = {}
    for record in records:
        by_subset.setdefault((record["model"], record.get("presence", "all"), record["family"]), []).append(record)
    count = 0
    for _, family, system, value, view in oracle.subsets(systems, False, views):
        rows = oracle.rows(value)
        per_example = oracle.call(family, oracle.inputs(family, system, rows, view, False, False), True)["per_example"]
        mine = by_subset.pop((system, view, family))
        assert [r["review_id"] for r in mine] == [row["review_id"] for row in rows], (system, view, family)
        for index, record in enumerate(mine):
            expected = {key: values[index] for key, values in per_example.items()}
            assert_values({key: record[key] for key in expected}, expected, f"{system} {view} {family} {index}")
            if view != "all":
                left_out = all(value is None for value in expected.values())
                assert (record["left_out"] is not None) == left_out, record
        count += len(mine)
    assert not by_subset and count == len(records)


@pytest.mark.parametrize("cell", REFUSED)
@pytest.mark.parametrize("form", ["jsonl", "parquet", "hive"])
def test_cells_that_cannot_combine_are_usage_errors(files, tmp_path, capsys, form, cell):
    flags, message = REFUSED[cell]
    status, _, err = run(files[form, "long", True][0], flags, tmp_path, capsys)
    assert status == 2 and message in err, err
