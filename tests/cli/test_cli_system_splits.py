"""Systems in a column meeting --by another column (issue 37, item 2): one row per (system,
value), each the library's numbers on its rows, the best marked and the systems compared with
the baseline within each value (Holm's correction within each), as with systems side by side;
the same with --group and --presence views."""

from __future__ import annotations

import json

import pytest
from cli_cases import _jsonl

from opinion_metrics import compare_systems, keyword_prf, pool_by_group
from opinion_metrics.cli import main

SYSTEMS = ("a", "b", "c")
# (review_id, movie, review, gold, {system: predictions})
REVIEWS = [
    ("r1", "sw", "the jedi fight the empire", ["jedi", "empire", "droid"],
     {"a": ["jedi", "war"], "b": ["empire"], "c": ["x"]}),
    ("r2", "sw", "a droid and a jedi", ["jedi", "empire", "droid"],
     {"a": ["droid"], "b": ["jedi", "droid"], "c": ["jedi"]}),
    ("r3", "sw", "the empire strikes", ["jedi", "empire", "droid"],
     {"a": ["empire"], "b": ["war"], "c": ["empire", "jedi"]}),
    ("r4", "hp", "the wizard school", ["wizard", "school", "owl"], {"a": ["wizard", "owl"], "b": ["school"], "c": []}),
    ("r5", "hp", "an owl flies", ["wizard", "school", "owl"], {"a": ["broom"], "b": ["owl", "night"], "c": ["owl"]}),
]  # fmt: skip
LONG = [
    {"model": m, "review_id": rid, "movie": movie, "review": text, "predictions": predicted[m], "references": gold}
    for m in SYSTEMS
    for rid, movie, text, gold, predicted in REVIEWS
]
WIDE = [
    {"review_id": rid, "movie": movie, "review": text, "references": gold,
     **{f"keywords_{m}": predicted[m] for m in SYSTEMS}}
    for rid, movie, text, gold, predicted in REVIEWS
]  # fmt: skip


def rows_of(system: str, movie: str) -> list[dict]:
    return [row for row in LONG if row["model"] == system and row["movie"] == movie]


def run(tmp_path, rows: list[dict], arguments: list[str], capsys) -> tuple[dict, str]:
    path = _jsonl(tmp_path / f"rows{len(list(tmp_path.iterdir()))}.jsonl", rows)
    output = tmp_path / f"{path.stem}.out.json"
    assert main([str(path), *arguments, "--metrics", "keyword_prf", "--output", str(output)]) == 0
    return json.loads(output.read_text()), capsys.readouterr().out


def test_a_system_column_split_by_movie_gives_a_row_per_system_and_movie(tmp_path, capsys):
    result, printed = run(tmp_path, LONG, ["--by", "movie"], capsys)
    assert "3 systems from `model` (one row per system and movie" in printed
    assert "* best in its column within each movie" in printed
    assert list(result) == [f"{m}/{movie}" for m in SYSTEMS for movie in ("sw", "hp")]
    for name, by_family in result.items():
        system, movie = name.split("/")
        mine = rows_of(system, movie)
        expected = keyword_prf([row["predictions"] for row in mine], [row["references"] for row in mine])
        assert by_family["keyword_prf"] == pytest.approx(expected, abs=1e-12)
    marked = {line.split()[0]: line.split()[1].endswith("*") for line in printed.splitlines() if "/" in line[:6]}
    for movie in ("sw", "hp"):  # the best precision within each movie (a in sw, b in hp), not over both
        values = {m: result[f"{m}/{movie}"]["keyword_prf"]["precision"] for m in SYSTEMS}
        assert {m for m in SYSTEMS if marked[f"{m}/{movie}"]} == {
            m for m in SYSTEMS if values[m] == max(values.values())
        }
    assert marked["a/sw"] and marked["b/hp"]


def test_the_systems_are_compared_within_each_movie_as_side_by_side(tmp_path, capsys):
    arguments = ["--by", "movie", "--baseline", "a", "--n-resamples", "200", "--random-state", "3"]
    long, printed = run(tmp_path, LONG, arguments, capsys)
    wide, _ = run(tmp_path, WIDE, arguments, capsys)
    assert long == wide
    assert "Holm's correction for the 2 systems compared with a within each movie" in printed
    differences = long["comparison"]["differences"]
    assert sorted(differences) == ["b/hp", "b/sw", "c/hp", "c/sw"]
    for movie in ("sw", "hp"):
        base = rows_of("a", movie)
        p_values = {}
        for system in ("b", "c"):
            mine = rows_of(system, movie)
            expected = compare_systems(
                "keyword_prf",
                [row["predictions"] for row in base],
                [row["predictions"] for row in mine],
                [row["references"] for row in base],
                n_resamples=200,
                random_state=3,
                confidence_level=0.95,
            )
            found = differences[f"{system}/{movie}"]["keyword_prf"]
            for key, values in expected.items():
                assert {k: found[key][k] for k in values} == pytest.approx(values, abs=1e-12), (system, movie, key)
            p_values[system] = found["f1"]["p_value"]
        # Holm within the movie: the smaller p-value times 2, the larger at least that
        low, high = sorted(p_values, key=p_values.get)
        assert differences[f"{low}/{movie}"]["keyword_prf"]["f1"]["p_value_holm"] == pytest.approx(
            min(1.0, 2 * p_values[low])
        )
        assert differences[f"{high}/{movie}"]["keyword_prf"]["f1"]["p_value_holm"] == pytest.approx(
            max(min(1.0, 2 * p_values[low]), p_values[high])
        )


def test_a_split_with_group_and_presence_views(tmp_path, capsys):
    grouped, _ = run(tmp_path, LONG, ["--by", "movie", "--group", "movie"], capsys)
    for name, by_family in grouped.items():
        system, movie = name.split("/")
        mine = rows_of(system, movie)
        pooled = pool_by_group([r["predictions"] for r in mine], [r["references"] for r in mine], [movie] * len(mine))
        assert by_family["keyword_prf"] == pytest.approx(keyword_prf(pooled.predictions, pooled.references), abs=1e-12)
    views, printed = run(tmp_path, LONG, ["--by", "movie", "--presence", "all,present"], capsys)
    assert len(views) == 3 * 2 * 2 and "within each movie/presence view" in printed
    for system in SYSTEMS:
        mine = rows_of(system, "sw")
        expected = keyword_prf(
            [r["predictions"] for r in mine], [r["references"] for r in mine],
            texts=[r["review"] for r in mine], presence="present",
        )  # fmt: skip
        assert views[f"{system}/sw/present"]["keyword_prf"] == pytest.approx(expected, abs=1e-12)


def test_per_example_records_name_the_system_and_the_value(tmp_path, capsys):
    path = _jsonl(tmp_path / "rows.jsonl", LONG)
    records = tmp_path / "per.jsonl"
    assert main([str(path), "--by", "movie", "--metrics", "keyword_prf", "--per-example", str(records)]) == 0
    found = [json.loads(line) for line in records.read_text().splitlines()]
    assert len(found) == len(LONG)  # every row once: nothing pooled, dropped or counted twice
    assert {(r["model"], r["movie"], r["review_id"]) for r in found} == {
        (r["model"], r["movie"], r["review_id"]) for r in LONG
    }
    capsys.readouterr()


def test_a_baseline_without_rows_in_a_movie_is_named(tmp_path, capsys):
    rows = [row for row in LONG if not (row["model"] == "a" and row["movie"] == "hp")]
    path = _jsonl(tmp_path / "rows.jsonl", rows)
    assert main([str(path), "--by", "movie", "--baseline", "a", "--metrics", "keyword_prf"]) == 1
    assert "cannot compare the systems of movie 'hp' with 'a': 'a' has no row there (systems there: b, c)" in (
        capsys.readouterr().err
    )
    output = tmp_path / "out.json"  # without a baseline: a's row of hp is missing, nothing else
    assert main([str(path), "--by", "movie", "--metrics", "keyword_prf", "--output", str(output)]) == 0
    assert sorted(json.loads(output.read_text())) == ["a/sw", "b/hp", "b/sw", "c/hp", "c/sw"]
    capsys.readouterr()
