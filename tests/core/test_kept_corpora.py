"""Prepared corpora kept across calls: prepared once, every change seen (rows, items, scores),
snapshots in C and in Python, frozen rows, collections and other threads meanwhile, the
weighted family taking the keyword family's snapshot, and what is never kept."""

from __future__ import annotations

import operator

import numpy as np
import pytest
import reference_impl as ref
from conftest import IMPLEMENTATIONS, approx_nested
from fast_path_cases import _encoded_by_definition
from hypothesis import given, settings
from hypothesis import strategies as st

from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics._native import helper
from opinion_metrics.core import corpus_cache, documents, matching, preparation, relations
from opinion_metrics.core.preparation import prepare_corpus


def test_a_corpus_evaluated_again_is_prepared_once_and_its_changes_are_seen(monkeypatch):
    from opinion_metrics import keyword_prf, weighted_keyword_prf

    predictions = [["Star Wars", "jedi"], ["sith", "empire"], ("yoda", "force")]
    scores = [[0.9, 0.1], [0.5, 0.4], (0.3, 0.2)]
    gold = ["star wars", "the force"]
    references = [gold, gold, ["yoda", "sith"]]
    prepared = []  # rows read again: prepared, or (scores) read for the ids prepared without them
    prepare_side, with_scores = preparation.prepare_side, preparation._with_scores
    monkeypatch.setattr(preparation, "prepare_side", lambda *a, **k: prepared.append(1) or prepare_side(*a, **k))
    monkeypatch.setattr(preparation, "_with_scores", lambda *a: prepared.append(1) or with_scores(*a))

    def check():
        for options in ({"match": "exact"}, {"match": "substring", "top_k": 1}, {"match": "token", "top_k": "O"}):
            actual = keyword_prf(predictions, references, return_per_example=True, **options)
            assert actual["per_example"] == approx_nested(
                ref.keyword_prf(predictions, references, **options)["per_example"]
            )
            actual = weighted_keyword_prf(predictions, scores, references, return_per_example=True, **options)
            expected = ref.weighted_keyword_prf(predictions, scores, references, **options)
            assert actual["per_example"] == approx_nested(expected["per_example"])

    relations.clear_lexical_caches()
    check()
    before = len(prepared)
    check()
    assert len(prepared) == before  # the same rows: prepared once per family
    for change in (
        lambda: predictions[0].__setitem__(1, "the force"),  # a list changed in place
        lambda: predictions.__setitem__(1, ["jedi", "sith"]),  # a row replaced
        lambda: scores[0].__setitem__(0, 0.05),  # a score changed
        lambda: gold.__setitem__(1, "empire"),  # the shared gold list changed in place
    ):
        change()
        before = len(prepared)
        check()
        assert len(prepared) > before


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["Jedi", "jedi", "", " sith!", "yoda", "a b"]), max_size=5), min_size=1, max_size=6
    ),
    st.data(),
)
def test_scores_read_for_rows_kept_prepared_without_them_equal_a_fresh_preparation(predictions, data):
    """The weighted family given rows the keyword family prepared: the kept ids with the
    scores read again equal the rows prepared with their scores (repeated and empty keywords
    dropped with their scores); scores the vectorized path refuses go the per-row way."""
    scores = [[data.draw(st.floats(0, 1)) for _ in row] for row in predictions]
    references = [["jedi", "the force"]] * len(predictions)
    corpus_cache.clear_prepared_corpora()
    plain = prepare_corpus(predictions, references)
    scored = prepare_corpus(predictions, references, scores=scores)
    corpus_cache.clear_prepared_corpora()
    fresh = prepare_corpus(predictions, references, scores=scores)
    assert scored.strings == fresh.strings
    assert scored.predictions.ids == fresh.predictions.ids and scored.references.ids == fresh.references.ids
    assert scored.predictions.scores == fresh.predictions.scores
    if helper() is not None:  # kept from the first call: derived, edges shared
        assert scored.memo is plain.memo
    if any(predictions):  # a score out of range: clipped or refused on the per-row path, as fresh
        scores[next(i for i, row in enumerate(predictions) if row)][0] = 1.5
        assert prepare_corpus(predictions, references, scores=scores, clip_scores=True).predictions.scores == (
            prepare_corpus(list(predictions), references, scores=scores, clip_scores=True).predictions.scores
        )
        with pytest.raises(ValueError, match="1.5"):
            prepare_corpus(predictions, references, scores=scores)


rows_of_words = st.lists(st.lists(st.sampled_from(["ab", "bc", "cd"]), max_size=3), max_size=5)


@settings(max_examples=300, deadline=None)
@given(rows_of_words, st.lists(st.integers(0, 4), max_size=8), st.integers(0, 4))
def test_snapshots_in_c_and_in_python_see_every_change(rows, picks, change):
    """Rows (some the same object, some repeated row after row) are unchanged until one of
    them changes in place, is replaced, or an item becomes an equal but distinct object."""
    for in_c in [False, True] if helper() is not None else [False]:
        with pytest.MonkeyPatch.context() as patch:
            if not in_c:
                patch.setenv(IMPLEMENTATION, "python")
            drawn = [list(row) for row in rows]  # fresh objects per pass
            current = [drawn[i % len(drawn)] for i in picks] if drawn else []
            snapshot = corpus_cache._Snapshot.of(current, None)
            assert (snapshot.unchanged is not None) is in_c
            assert snapshot.holds(current, None) and snapshot.holds(tuple(current), None)
            nonempty = [row for row in current if row]
            if change == 0 and nonempty:
                nonempty[-1][0] = "zz"
            elif change == 1 and nonempty:
                nonempty[0][0] = "".join(list(nonempty[0][0]))  # equal, another object
            elif change == 2 and current:
                current[0] = list(current[0])
            elif change == 3 and nonempty:
                nonempty[0].append("ab")
            else:
                continue
            assert not snapshot.holds(current, None)


def test_a_snapshot_in_c_stops_at_its_limit_and_takes_only_lists_and_tuples_of_str_and_float():
    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built or not used here")
    shared = ["a", "b"]
    rows = (shared, shared, ("c", 0.5), [], shared)
    items, sizes, starts = speedups.snapshot_rows(rows, 6)
    assert items == ("a", "b", "c", 0.5, "a", "b")  # a row right after itself: read once
    assert np.frombuffer(sizes, np.int64).tolist() == [2, 2, 2, 0, 2]
    assert np.frombuffer(starts, np.int64).tolist() == [0, 0, 2, 4, 4]
    frozen = preparation.FrozenRows(items, sizes, starts, rows, speedups)
    assert list(frozen) == [("a", "b"), ("a", "b"), ("c", 0.5), (), ("a", "b")] == frozen[:] and frozen[-1] == (
        "a",
        "b",
    )
    assert speedups.rows_unchanged(list(rows), rows, items, sizes)
    assert speedups.snapshot_rows((shared, ("c",)), 2) is False
    assert speedups.snapshot_rows((shared, "ab"), 10) is None and speedups.snapshot_rows([shared], 10) is None
    for item in (1, None, True, np.float64(0.5), type("Text", (str,), {})("a")):  # only exact str and float
        assert speedups.snapshot_rows((["a", item],), 10) is None
    assert not speedups.rows_unchanged(list(rows)[:4], rows, items, sizes)
    assert not speedups.rows_unchanged(list(rows), rows, items[:5], sizes)  # items fewer than the rows'
    assert not speedups.rows_unchanged(list(rows), rows, items + ("b",), sizes)  # or more
    assert not speedups.rows_unchanged(list(rows), rows, items, sizes[:32])
    assert not speedups.rows_unchanged([["a", "b"]], (shared,), ("a", "b"), sizes[:8])  # another row object
    assert not speedups.rows_unchanged([shared], (shared,), ("a",), np.int64([1]).tobytes())  # a size not the row's
    assert not speedups.rows_unchanged([shared], (shared,), (), np.int64([-1]).tobytes())
    other = object()  # a row that is neither list nor tuple (by hand: snapshot_rows never takes one)
    assert not speedups.rows_unchanged([other], (other,), (), np.int64([0]).tobytes())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=12), st.lists(st.sampled_from(["ab", "bc", 0.25]), max_size=4))
def test_frozen_rows_read_whole_in_c_equal_the_rows_read_one_by_one(picks, words):
    """Frozen rows (some the same object, some repeated row after row) give the sizes, codes
    and values of their rows, each read as a tuple."""
    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built or not used here")
    objects = [words[i:] for i in range(4)]
    rows = tuple(objects[i] for i in picks)
    frozen = preparation.FrozenRows(*speedups.snapshot_rows(rows, 100), rows, speedups)
    assert list(frozen) == [tuple(row) for row in rows] == [frozen[i] for i in range(len(rows))]
    for read, of_rows in ((preparation.encode_lists, _encoded_by_definition), (preparation.encode_floats, None)):
        whole, one_by_one = read(frozen), read(list(frozen))
        if of_rows is not None:
            assert (whole is None) == (of_rows(rows) is None)
        if whole is None or one_by_one is None:
            assert whole is None and one_by_one is None
            continue
        assert [part.tolist() if isinstance(part, np.ndarray) else part for part in whole] == [
            part.tolist() if isinstance(part, np.ndarray) else part for part in one_by_one
        ]


def test_no_collection_runs_while_snapshot_rows_copies_and_what_it_freezes_is_never_visited():
    """A collection could run Python code that changes a row while `snapshot_rows` copies it
    (up to 3.11 inside `PyTuple_New`): the collector is paused meanwhile, and left as found. The
    frozen tuple holds only str and float, so the collector never visits it."""
    import gc

    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built or not used here")
    original = tuple(f"k{i}" for i in range(1000))
    row = list(original)
    armed = [False]

    def cut(phase, info):
        if armed[0] and phase == "start":
            armed[0] = False
            del row[10:]

    threshold = gc.get_threshold()
    gc.callbacks.append(cut)
    try:
        for _ in range(30):
            row[:] = original
            gc.set_threshold(1)
            armed[0] = True
            items, sizes, _ = speedups.snapshot_rows((row, ["a", 0.5]), 10**9)
            gc.set_threshold(*threshold)
            assert items == (*original, "a", 0.5) and np.frombuffer(sizes, np.int64).tolist() == [1000, 2]
            assert not gc.is_tracked(items)
    finally:
        gc.callbacks.remove(cut)
        gc.set_threshold(*threshold)
    assert gc.isenabled()
    gc.disable()
    try:
        speedups.snapshot_rows((["a"],), 10)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_scores_that_can_change_in_place_are_read_again_at_every_call():
    """0-d arrays (or tensors: `list(tensor)`) are scores whose value changes under the same
    identity: a corpus with such scores is never kept."""
    from opinion_metrics import weighted_keyword_prf

    corpus_cache.clear_prepared_corpora()
    base = np.array([0.2, 0.9])
    scores = [[base[0:1].reshape(()), base[1:2].reshape(())]]
    predictions, references = [["scam", "cinema"]], [["scam"]]
    for first, second in ((0.2, 0.9), (0.9, 0.1), (0.5, 0.5), (1.0, 0.0)):
        base[:] = first, second
        assert weighted_keyword_prf(predictions, scores, references)["weighted_precision"] == pytest.approx(
            first / (first + second)
        )


def test_keywords_read_in_c_while_a_collection_grows_a_row_are_never_written_past_the_buffer():
    """A collection may run while the C helper reads the rows (`distinct_codes` creates its
    list), and its Python code may grow a row: the sizes are read after that, or the change
    is named, never written past the codes' buffer."""
    import gc

    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built or not used here")
    row = ["a", "b", "c"]
    armed = [False]

    def grow(phase, info):
        if armed[0] and phase == "start":
            armed[0] = False
            row.extend(f"k{i}" for i in range(1000))

    threshold = gc.get_threshold()
    gc.callbacks.append(grow)
    try:
        for _ in range(30):
            del row[3:]
            gc.set_threshold(1)
            armed[0] = True
            try:
                encoded = speedups.distinct_codes([row])
            except RuntimeError as error:
                assert "changed size" in str(error)
                continue
            finally:
                gc.set_threshold(*threshold)
            sizes, codes, distinct = encoded
            assert np.frombuffer(sizes, np.int64).tolist() == [len(row)] and distinct == row
    finally:
        gc.callbacks.remove(grow)
        gc.set_threshold(*threshold)


def test_a_kept_corpus_keeps_its_match_edges_only_while_they_are_few():
    """Edges are memoized with the corpus (kept across calls) up to 4 per keyword beyond
    `_KEPT_EDGES`: a corpus where every prediction matches every gold keyword holds none."""
    few = prepare_corpus([["w1", "w2"]] * 3, [["w1", "w3"]] * 3)
    matching.corpus_edges(few, "substring")
    assert ("edges", "substring") in few.memo
    nested = ["x" * k for k in range(1, 201)]  # each in all the longer ones
    dense = prepare_corpus([nested] * 10, [nested] * 10)
    edges = matching.corpus_edges(dense, "substring")
    assert len(edges.examples) == 10 * 200 * 200 > relations._KEPT_EDGES + 4 * (10 * 200 + 200)
    assert ("edges", "substring") not in dense.memo


def test_rows_converted_to_lists_are_not_kept():
    from opinion_metrics import keyword_prf

    corpus_cache.clear_prepared_corpora()
    predictions = np.array([["a", "b"], ["c", "d"]], dtype=object)  # converted to new lists at each call
    for _ in range(3):
        keyword_prf(predictions, [["a"], ["d"]])
    assert not corpus_cache._PREPARED


def test_threads_filling_and_clearing_the_kept_corpora_raise_nothing():
    """Concurrent calls (a Space's requests) add to, pop from and clear the bounded caches of
    kept corpora: each call still gets its own values."""
    from conftest import true_in_every_thread

    from opinion_metrics import keyword_prf

    def calls(seed: int) -> bool:
        for i in range(150):
            words = [f"w{seed}-{i}", f"w{i % 7}"]
            if seed == 0 and i % 5 == 0:
                corpus_cache.clear_prepared_corpora()
            result = keyword_prf([words], [words[1:]], match="exact")
            if result["recall"] != 1.0 or result["precision"] != 0.5:
                return False
        return True

    assert true_in_every_thread(calls)


def test_a_small_corpus_is_kept_from_its_first_call_with_the_c_helper(monkeypatch):
    from opinion_metrics import keyword_prf

    if helper() is None:
        pytest.skip("the C helper is not built or not used here")
    corpus_cache.clear_prepared_corpora()
    prepared = []
    prepare_side = preparation.prepare_side
    monkeypatch.setattr(preparation, "prepare_side", lambda *a, **k: prepared.append(1) or prepare_side(*a, **k))
    monkeypatch.setattr(documents, "documents_cheaper", lambda references: False)  # through the prepared corpus
    predictions, references = [["a", "b"]], [["a"]]
    keyword_prf(predictions, references)
    keyword_prf(predictions, references, match="exact")
    assert len(prepared) == 2  # both sides, once
    big = [["a", "b", "c", "d"] for _ in range(corpus_cache._FIRST_CALL_ITEMS // 8 + 1)]  # both sides: over it
    keyword_prf(big, big)
    keyword_prf(big, big)
    keyword_prf(big, big)
    assert len(prepared) == 2 + 4


def test_rows_changed_while_they_are_prepared_give_the_values_of_their_frozen_rows_then_of_the_new(monkeypatch):
    """Another thread changes a row after the call froze and read it: the call's values and
    the corpus it keeps are the frozen rows', and the next call sees the change."""
    from opinion_metrics import keyword_prf

    corpus_cache.clear_prepared_corpora()
    predictions, references = [["a", "b"]], [["a", "b"]]
    prepare_side = preparation.prepare_side
    changes = []

    def changing(rows, vocabulary, side, *args, **kwargs):
        prepared = prepare_side(rows, vocabulary, side, *args, **kwargs)
        if side == "references":  # another thread's change, after the rows were read
            changes.append(None)
            references[0][1] = f"c{len(changes)}"
        return prepared

    monkeypatch.setattr(preparation, "prepare_side", changing)
    monkeypatch.setattr(documents, "documents_cheaper", lambda references: False)  # through the prepared corpus
    recalls = [keyword_prf(predictions, references, match="exact")["recall"]]
    if helper() is not None:  # kept from the first call: what its frozen rows give
        ((snapshot, corpus),) = corpus_cache._PREPARED.values()
        assert list(snapshot.frozen[1]) == [("a", "b")] and corpus.strings == ["a", "b"]
    for _ in range(2):  # later calls (the Python twin's snapshot taken from the second)
        recalls.append(keyword_prf(predictions, references, match="exact")["recall"])
    monkeypatch.setattr(preparation, "prepare_side", prepare_side)
    assert len(changes) == 3  # each call saw the rows changed since the one before: none was given a kept corpus
    assert recalls == [1.0, 0.5, 0.5]  # a, b frozen by the first call; then a, c1 and a, c2
    assert keyword_prf(predictions, references, match="exact")["precision"] == 0.5  # a: yes, b: no


def test_the_weighted_family_takes_the_keyword_familys_snapshot_of_the_same_rows():
    """Rows the keyword family kept are compared once, not copied again: the weighted family's
    snapshot holds the same frozen predictions and references, and only its scores are new."""
    from opinion_metrics import keyword_prf, weighted_keyword_prf

    predictions, references = [["a", "b"], ["c"]], [["a"], ["c", "d"]]
    scores = [[0.5, 0.25], [1.0]]
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            patch.setattr(documents, "documents_cheaper", lambda references: False)  # through the prepared corpus
            corpus_cache.clear_prepared_corpora()
            for _ in range(2):  # the Python twin snapshots a corpus from its second call
                keyword_prf(predictions, references)
                weighted = weighted_keyword_prf(predictions, scores, references)
            (plain, plain_corpus), (scored, scored_corpus) = corpus_cache._PREPARED.values()
            assert all(map(operator.is_, scored.frozen, plain.frozen[:2]))
            assert scored_corpus.references is plain_corpus.references  # not prepared again
            assert scored.rows[2] == tuple(scores) and scored.held == plain.held + 3
            assert weighted_keyword_prf(predictions, scores, references) == weighted
            scores[1][0] = 0.5  # a change of the scores only, then of a prediction: both seen
            assert weighted_keyword_prf(predictions, scores, references) == weighted_keyword_prf(
                list(predictions), list(scores), references
            )
            predictions[0][1] = "d"
            assert weighted_keyword_prf(predictions, scores, references) == weighted_keyword_prf(
                list(predictions), list(scores), references
            )
            predictions[0][1], scores[1][0] = "b", 1.0
    corpus_cache.clear_prepared_corpora()


def test_a_weighted_snapshot_that_reads_the_rows_again_is_prepared_from_them(monkeypatch):
    """The keyword family's rows kept in C, then a weighted snapshot too large for C (gold
    lists repeated, not row after row) taken by Python from the live rows, after another thread
    changed a prediction: what is kept is prepared from that snapshot, not the plain corpus."""
    import copy

    from opinion_metrics import keyword_prf, weighted_keyword_prf

    if helper() is None:
        pytest.skip("the keyword family's rows are kept in C")
    corpus_cache.clear_prepared_corpora()
    monkeypatch.setattr(corpus_cache, "_PREPARED_ITEMS", 50)
    monkeypatch.setattr(corpus_cache, "_FIRST_CALL_ITEMS", 50)
    first, second = ["space opera", "jedi", "empire"], ["ford", "whip", "ark"]
    predictions = [["space opera", "ford"] for _ in range(10)]
    references = [first if i % 2 == 0 else second for i in range(10)]
    scores = [[0.9, 0.4] for _ in range(10)]
    keyword_prf(predictions, references)
    weighted_keyword_prf(predictions, scores, references)
    seen_before = corpus_cache._seen_before

    def another_thread_writes(key):  # between the plain corpus's check and the snapshot
        predictions[0][:] = ["jedi", "empire"]
        return seen_before(key)

    monkeypatch.setattr(corpus_cache, "_seen_before", another_thread_writes)
    weighted_keyword_prf(predictions, scores, references)
    monkeypatch.setattr(corpus_cache, "_seen_before", seen_before)
    fresh = weighted_keyword_prf(copy.deepcopy(predictions), copy.deepcopy(scores), copy.deepcopy(references))
    assert weighted_keyword_prf(predictions, scores, references) == fresh
    corpus_cache.clear_prepared_corpora()


def test_an_item_replaced_by_an_equal_one_of_another_type_is_checked_again():
    from opinion_metrics import weighted_keyword_prf

    corpus_cache.clear_prepared_corpora()
    predictions, scores, references = [["a", "b"]], [[1.0, 0.5]], [["a"]]
    for _ in range(3):  # the third call is given the corpus prepared by the second
        weighted_keyword_prf(predictions, scores, references)
    scores[0][0] = True  # == 1.0, but not a score
    with pytest.raises(ValueError, match="bool"):
        weighted_keyword_prf(predictions, scores, references)


def test_an_unhashable_stemmer_is_named_before_the_cache_is_looked_up():
    with pytest.raises(ValueError, match="stemmer"):
        prepare_corpus([["a"]], [["a"]], stemmer=["porter"])
