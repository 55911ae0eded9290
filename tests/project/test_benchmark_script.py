"""scripts/benchmark.py: its naive baselines (in scripts/benchmarks/) follow SPEC (hand cases),
and a small run passes its own assertions (library == naive baselines) on the real movie data."""

from __future__ import annotations

import importlib
import math
import subprocess
import sys

import pytest
import reference_impl as ref
from conftest import MOVIE_REVIEWS, REPO, SHARED, require_shared

SCRIPT = REPO / "scripts" / "benchmark.py"


def shape(name: str):
    """One of the runner's modules in scripts/benchmarks/, imported as the runner imports it."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        return importlib.import_module(f"benchmarks.{name}")
    finally:
        sys.path.remove(str(SCRIPT.parent))


@pytest.fixture(scope="module")
def common():
    return shape("common")


@pytest.fixture(scope="module")
def keyphrase():
    return shape("keyphrase")


@pytest.fixture(scope="module")
def presence():
    return shape("presence")


def test_naive_normalization_removes_format_characters(common):
    assert common.naive_normalize("\ufeffWar\u200f") == "war"
    assert common.naive_normalize("\u200b") == ""
    assert common.naive_normalize("  Café,  Phở! ") == "café phở"


def test_naive_weighted_follows_spec_worked_example(common):
    # SPEC 4: nDCG@5 = 0.7295; AP@5 = (1/1 + 2/3 + 3/5) / |G| with |G| = 3 (hits at ranks 1, 3, 5).
    gold = ["fraud", "poverty", "scam"]
    predicted = ["scam", "family", "poverty", "cinematography", "fraud"]
    result = common.naive_weighted_keyword_prf([predicted], [[1.0] * 5], [gold])
    assert round(result["ndcg@5"], 4) == 0.7295
    assert math.isclose(result["map@5"], (1 + 2 / 3 + 3 / 5) / 3)
    # Weighted precision: 3 of 5 unit scores matched; recall 3 / |G|.
    assert math.isclose(result["weighted_precision"], 3 / 5)
    assert math.isclose(result["weighted_recall"], 1.0)
    # One hit at rank 1 against 4 gold keywords: AP@5 = 1 / 4, not 1 / min(5, 4) ... nor 1.
    short = common.naive_weighted_keyword_prf([["a"]], [[0.5]], [["a", "b", "c", "d"]])
    assert math.isclose(short["map@5"], 1 / 4)


def test_naive_match_loops_count_as_the_definitions_without_one_to_one(keyphrase):
    # "war" is in "star wars saga" (substring) but is no token of it; "b" is a token of "a b c".
    predictions = [["Star Wars", "war", "x", "war"], ["a b", "b"], []]
    references = [["star wars saga", "wars"], ["a b c", "c a b"], ["z"]]
    for match in ("substring", "token"):
        expected = ref.keyword_prf(predictions, references, match=match, one_to_one=False)
        actual = keyphrase.naive_match_loop(predictions, references, match)
        assert actual == pytest.approx({key: expected[key] for key in ("precision", "recall", "f1")}), match


def test_diverse_documents_have_their_own_phrases(keyphrase):
    words = ["alpha", "beta", "gamma"]  # a vocabulary small enough to repeat phrases
    predictions, references = keyphrase.diverse_corpus(200, words)
    for predicted, gold in zip(predictions, references):
        assert 1 <= len(gold) <= 20 and len(predicted) <= 5
        assert len(set(predicted) & set(gold)) >= min(2, len(gold))  # two of its gold phrases
        for phrase in predicted + gold:
            assert 1 <= len(phrase.split()) <= 3 and set(phrase.lower().split()) <= set(words)
    assert len({id(gold) for gold in references}) == 200  # each its own list


def test_naive_presence_leaves_out_examples_without_present_references(presence):
    # Example 0: "art" is not present in "party"; "star wars" is; gold "wars" present.
    # Example 1: no gold keyword occurs in the text: left out of the means.
    predictions = [["art", "star wars"], ["jedi"]]
    references = [["wars", "party time", "art"], ["sith"]]
    texts = ["A party for Star Wars fans!", "jedi"]
    result = presence.naive_presence_prf(predictions, references, texts)
    # present predictions: ["star wars"]; present gold: ["wars"]; 1 match.
    assert result == {"precision": 1.0, "recall": 1.0, "f1": 1.0}


def test_the_tuple_shapes_loop_counts_as_abs_quads_rule():
    """A predicted tuple is a hit when it is in its sentence's gold list, each repeat counted."""
    tuples = shape("tuples")
    pizza, staff = ["pizza", "food", "negative", "cold"], ["staff", "service", "positive", "kind"]
    result = tuples.field_loop([[pizza, pizza, staff], []], [[pizza], [staff]])
    assert result == {"precision": 2 / 3, "recall": 2 / 2, "f1": 2 * (2 / 3) / (2 / 3 + 1)}
    predicted = tuples.perturbed([[pizza, staff]] * 50, seed=1)
    assert any(len(p) != 2 for p in predicted) and any(p and p[0] != pizza for p in predicted)


def test_tuple_shape_run_passes_its_own_checks():
    """The library's membership counting equals the loop (asserted by the script) on a small corpus."""
    absa = require_shared(SHARED / "data" / "absa")
    command = [sys.executable, str(SCRIPT), "--families", "tuples", "--tuple-count", "20000", "--repeat", "1"]
    run = subprocess.run([*command, "--absa-data", str(absa)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ABSA-QUAD's loop" in run.stdout and "membership == the loop's values" in run.stdout


def test_small_run_passes_its_own_checks():
    require_shared(MOVIE_REVIEWS)
    command = [sys.executable, str(SCRIPT), "--data", str(MOVIE_REVIEWS), "--sample", "200", "--repeat", "1"]
    command += ["--families", "lexical", "intervals", "presence", "interactive", "aspects"]
    command += ["--aspect-examples", "5000", "--baseline-resamples", "1"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    for heading in ("keyword_prf", "intervals (1,000 resamples)", 'presence="present"', "one movie (", "aspect_"):
        assert heading in run.stdout


@pytest.mark.parametrize("helper", [[], ["--without-c-helper"]])
def test_keyphrase_shape_run_passes_its_own_checks(helper):
    """exact == the lower-cased set loop, and on documents of their own phrases each match ==
    its naive loop (asserted by the script), with the C helper and without."""
    require_shared(MOVIE_REVIEWS)
    command = [sys.executable, str(SCRIPT), "--families", "keyphrase", "--sample", "100", "--repeat", "1", *helper]
    command += ["--data", str(MOVIE_REVIEWS)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'keyword_prf(match="token")' in run.stdout and "1,000 documents" in run.stdout
    assert "documents of their own phrases" in run.stdout and "2,000" in run.stdout


@pytest.mark.slow
def test_real_shaped_run_passes_its_own_checks(tmp_path):
    """One copy of the movie rows (33,384) in the real-shaped layout: the CLI on the file and
    the folder, with --gold, and the Dask recipe give the same values per model (asserted)."""
    require_shared(MOVIE_REVIEWS)
    command = [sys.executable, str(SCRIPT), "--data", str(MOVIE_REVIEWS), "--families", "realshaped"]
    command += ["--replicas", "1", "--engine-data", str(tmp_path), "--real-runs", "cli-file", "cli-folder-workers"]
    command += ["cli-folder-gold-workers", "dask"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "33,384 rows" in run.stdout and "Equal results" in run.stdout
    assert len(list((tmp_path / "folder").glob("*.parquet"))) == 24


@pytest.mark.slow
def test_semantic_diverse_shape_runs_in_its_gpu_mode_on_the_cpu():
    """The diverse-shape semantic rows, with the device and precisions a GPU run passes
    (here device="cpu"): the library's float32 values equal those of model.encode's vectors
    and the token loop equals keyword_prf (both asserted by the script)."""
    require_shared(MOVIE_REVIEWS)
    command = [sys.executable, str(SCRIPT), "--data", str(MOVIE_REVIEWS), "--families", "semantic"]
    command += ["--semantic-shapes", "diverse", "--semantic-documents", "60", "--loop-documents", "10"]
    command += ["--repeat", "1", "--device", "cpu", "--precisions", "float32", "bfloat16"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    for row in ("model.encode(distinct)", "library cold, float32", "library cold, bfloat16", "naive token loop"):
        assert row in run.stdout
    assert "60 documents" in run.stdout


def test_same_speed_times_both_versions_call_by_call():
    """This checkout against itself: one row per call timed, cold and warm, with their ratio."""
    require_shared(MOVIE_REVIEWS)
    command = [sys.executable, str(REPO / "scripts" / "same_speed.py"), str(REPO / "src")]
    run = subprocess.run(
        [*command, "--data", str(SHARED / "data"), "--rounds", "1", "--only", "aspect"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = run.stdout.splitlines()[1:]
    assert [row.split("  ")[0] for row in rows] == [
        "tourism, aspect_sentiment_score, cold",
        "tourism, aspect_sentiment_score",
    ]
    assert all(float(row.split()[-1]) > 0 for row in rows)
