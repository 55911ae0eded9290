"""Kept corpora answer only the question asked (issue 29, item 3).

A corpus kept across calls is prepared from its snapshot's frozen rows, never the live ones
(a row another thread changes and restores meanwhile, injected deterministically); snapshots
take only exact str and float items; keywords enter the vocabulary by value as exact str (a
subclass's `lower`, `__eq__`, `__hash__` are never asked), and rows are grouped by content only
when they hold exact str; the C helper holds each string it looks up in a table that runs
Python code.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap

import pytest

from opinion_metrics import _native, keyword_diversity, keyword_prf, weighted_keyword_prf
from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics.core import corpus_cache, documents, preparation
from opinion_metrics.io.rows import content_key


@pytest.fixture(params=["c", "python"])
def helper(request, monkeypatch):
    """Each test with the C helper's snapshots and with their Python twin."""
    if request.param == "c" and _native.helper() is None:
        pytest.skip("the C helper is not built or not used here")
    if request.param == "python":
        monkeypatch.setenv(IMPLEMENTATION, "python")
    corpus_cache.clear_prepared_corpora()
    yield request.param
    corpus_cache.clear_prepared_corpora()


def test_a_row_changed_and_restored_while_prepared_is_kept_as_it_was_frozen(helper, monkeypatch):
    """Another thread changes a keyword and puts the same object back while the call prepares
    its rows: the kept corpus must be the rows' (3-14% of threaded trials kept the transient
    keyword before, and later calls on the unchanged rows returned its values)."""
    predictions = [["jedi", "war"], ["empire"], ["droid"]]
    references = [["jedi"], ["empire"], ["droid", "rebel"]]
    truth = keyword_prf(copy.deepcopy(predictions), copy.deepcopy(references), match="exact")
    if helper == "python":  # the Python twin snapshots a corpus from its second call
        assert keyword_prf(predictions, references, match="exact") == truth
    # through the kept corpus (the per-document path keeps nothing, and reads the rows in C
    # without running Python code)
    monkeypatch.setattr(documents, "documents_cheaper", lambda references: False)
    original = preparation.prepare_side
    raced = []

    def racing(lists, vocabulary, side, *args, **kwargs):
        if side != "predictions":
            return original(lists, vocabulary, side, *args, **kwargs)
        keyword = predictions[0][0]
        predictions[0][0] = "pizza"  # another thread, while this call reads the rows
        try:
            return original(lists, vocabulary, side, *args, **kwargs)
        finally:
            predictions[0][0] = keyword  # and back: the same object
            raced.append(True)

    monkeypatch.setattr(preparation, "prepare_side", racing)
    keyword_prf(predictions, references, match="exact")
    monkeypatch.setattr(preparation, "prepare_side", original)
    assert raced
    assert keyword_prf(predictions, references, match="exact") == truth
    scores = [[0.9, 0.4], [0.8], [0.7]]
    assert weighted_keyword_prf(predictions, scores, references, match="exact") == weighted_keyword_prf(
        copy.deepcopy(predictions), copy.deepcopy(scores), copy.deepcopy(references), match="exact"
    )


class Shifty(str):
    """A str whose methods answer differently at each call (as a lazily decoded or
    locale-dependent string class might)."""

    calls = 0

    def _shift(self, *args, **kwargs):
        Shifty.calls += 1
        return "other" if Shifty.calls % 2 else str.lower(self)

    lower = casefold = strip = _shift


def test_a_str_subclass_is_read_by_its_value_and_never_kept_by_identity(helper):
    """A subclass whose `lower()` changes returned a cached 0.5 where a fresh call gave 0.0."""
    predictions, references = [[Shifty("Jedi"), "War"]], [["jedi", "empire"]]
    expected = keyword_prf([["Jedi", "War"]], [["jedi", "empire"]])
    for _ in range(3):
        assert keyword_prf(predictions, references) == expected
    assert keyword_diversity([[Shifty("Jedi"), "jedi"]]) == keyword_diversity([["Jedi", "jedi"]])
    present = keyword_prf([["jedi"]], [["jedi"]], texts=[Shifty("The Jedi!")], presence="present")
    assert present == keyword_prf([["jedi"]], [["jedi"]], texts=["The Jedi!"], presence="present")
    assert Shifty.calls == 0
    assert corpus_cache._Snapshot.of(predictions, references) is None  # never kept by identity


class CaseBlind(str):
    """A str equal to any other of the same letters whatever their case."""

    def __eq__(self, other):
        return isinstance(other, str) and str.lower(self) == str.lower(other)

    def __hash__(self):
        return hash(str.lower(self))


class Unhashable(str):
    __hash__ = None


class EqualToAll:
    """Not a str, but equal to "jedi" and hashed like it."""

    def __eq__(self, other):
        return True

    def __hash__(self):
        return hash("jedi")


def test_keywords_enter_the_vocabulary_by_value_as_exact_str(helper):
    # A hostile __eq__ merged "War" into "war" (0/0/0); by the definition 0.5/1/0.667.
    result = keyword_prf([[CaseBlind("War"), "war"]], [["war"]], normalize="none", match="exact")
    assert result == keyword_prf([["War", "war"]], [["war"]], normalize="none", match="exact")
    assert result == pytest.approx({"precision": 0.5, "recall": 1.0, "f1": 2 / 3})
    # A subclass with __hash__ = None: a bare TypeError before; its value now.
    assert keyword_prf([[Unhashable("jedi")]], [[Unhashable("Jedi")]]) == keyword_prf([["jedi"]], [["Jedi"]])


class RaisingHash(str):
    """A str whose hash is refused with an error other than TypeError."""

    def __hash__(self):
        raise RuntimeError("hashed")


def test_gold_keywords_choosing_the_path_are_never_hashed_unless_exact_str(helper):
    """The per-document path's choice hashed a sample of the gold keywords: a subclass's
    __hash__ ran (a bare RuntimeError from inside the choice before); read by value now."""
    predictions = [["jedi", "war"], ["empire"], ["droid"]]
    references = [[RaisingHash("Jedi"), "force"], ["empire"], ["droid", "rebel"]]
    plain = [["Jedi", "force"], ["empire"], ["droid", "rebel"]]
    for match in ("exact", "substring", "token"):
        assert keyword_prf(predictions, references, match=match) == keyword_prf(predictions, plain, match=match)


def test_rows_are_grouped_by_content_only_when_they_hold_exact_str(helper):
    """An object equal to a str in another row was taken for that row, never type-checked
    (1.0 before)."""
    with pytest.raises(ValueError, match=r"references: example 1, keyword 0 must be a str, got EqualToAll"):
        keyword_prf([["jedi"], ["jedi"]], [["jedi"], [EqualToAll()]])
    with pytest.raises(ValueError, match=r"predictions: example 1, keyword 0 must be a str"):
        keyword_prf([["jedi"], [EqualToAll()]], [["jedi"], ["jedi"]])
    rows = [["jedi"], [CaseBlind("JEDI")], ["jedi"]]
    assert content_key(rows[1]) is None and content_key(rows[0]) == ("jedi",)
    assert keyword_prf(rows, [["x"]] * 3, normalize="none", match="exact") == keyword_prf(
        [["jedi"], ["JEDI"], ["jedi"]], [["x"]] * 3, normalize="none", match="exact"
    )


NUMBER_STRINGS_UNDER_A_HOSTILE_TABLE = textwrap.dedent(
    """
    from opinion_metrics import _native

    strings = ["".join(["ab", "cd"])]  # the list holds the only reference to this string
    junk = []

    class Hostile:
        def __hash__(self):
            return hash("abcd")

        def __eq__(self, other):  # compared with the string while the table looks it up
            strings.clear()
            junk.extend("".join(["zz", "zz"]) for _ in range(200))  # would take the freed string's memory
            return False

    table = {Hostile(): 0}
    try:
        _native.helper().number_strings(strings, table)
    except IndexError:
        pass
    print(sorted(key for key in table if isinstance(key, str)))
    """
)


def test_number_strings_holds_each_string_while_a_table_runs_python():
    """A table whose key runs Python code while it is compared can drop the list's last
    reference to the string being looked up: the C helper must still hold it (it read a
    freed string before: a heap use-after-free under ASan, another string's key here)."""
    if _native.helper() is None:
        pytest.skip("the C helper is not built or not used here")
    result = subprocess.run(
        [sys.executable, "-c", NUMBER_STRINGS_UNDER_A_HOSTILE_TABLE], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['abcd']"
