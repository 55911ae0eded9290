"""Issue 20's fast paths of normalization against their slow truths: the ASCII path and the
batch normalization against the full per-string path, cached Porter stems against NLTK,
and normalized forms and stems whose caches another thread clears meanwhile."""

from __future__ import annotations

import pytest
from fast_path_cases import ASCII, any_text
from hypothesis import given, settings
from hypothesis import strategies as st

from opinion_metrics.core import normalization
from opinion_metrics.core.normalization import make_normalizer
from opinion_metrics.core.validation import lone_surrogate

ascii_text = st.text(alphabet=ASCII, max_size=12)


@settings(max_examples=500, deadline=None)
@given(ascii_text | any_text)
def test_ascii_path_of_default_normalization_equals_the_unicode_path(text):
    assert normalization._normalize_default(text) == normalization._normalize_unicode(text)


@pytest.mark.parametrize("mode", ["default", "ascii", "none"])
@pytest.mark.parametrize("stemmer", [None, "porter"])
@settings(max_examples=150, deadline=None)
@given(texts=st.lists(ascii_text | any_text, max_size=30))
def test_batch_normalization_equals_one_by_one(mode, stemmer, texts):
    normalizer = make_normalizer(mode, stemmer)
    texts = texts * 2  # past the batch threshold
    # None when a text holds a lone surrogate: the per-row path reports it
    expected = None if any(map(lone_surrogate, texts)) else [normalizer(text) for text in texts]
    assert normalizer.many(texts) == expected


def test_batch_normalization_runs_for_ascii_and_leaves_the_rest_to_the_full_path(monkeypatch):
    calls = []
    batch = normalization._BATCH_NORMALIZERS["default"]
    monkeypatch.setitem(normalization._BATCH_NORMALIZERS, "default", lambda texts: calls.append(texts) or batch(texts))
    texts = ["Star-Wars!", "  a\x1cb ", "Straße", "x\x00y", *[f"W{i}" for i in range(10)]]
    normalized = make_normalizer("default").many(texts)
    assert normalized == ["star wars", "a b", "strasse", "x\x00y", *[f"w{i}" for i in range(10)]]
    assert calls == ["\x00".join(["Star-Wars!", "  a\x1cb ", *[f"W{i}" for i in range(10)]])]  # no NUL, no non-ASCII


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abcdeilnorstuyz", min_size=1, max_size=10), max_size=6))
def test_cached_porter_stems_equal_nltk(tokens):
    from nltk.stem.porter import PorterStemmer

    stem = PorterStemmer().stem
    text = " ".join(tokens)
    expected = " ".join(stem(token, to_lowercase=False) for token in tokens)
    normalizer = make_normalizer("none", "porter")
    assert normalizer(text) == expected
    assert normalizer(text) == expected  # the second time from the cache


class _ClearedByAnotherThread(dict):
    """A shared cache that another thread clears right after every update."""

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        self.clear()

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self.clear()


def test_normalized_forms_and_stems_cleared_by_another_thread_meanwhile(monkeypatch):
    pytest.importorskip("nltk")
    from nltk.stem.porter import PorterStemmer

    texts = [f"Running Shoe{i}" for i in range(20)] + ["Café Noir", "running shoes"]
    normalizer = make_normalizer("default", "porter")
    expected = [normalizer(text) for text in texts]
    monkeypatch.setattr(normalization, "_STEMS", _ClearedByAnotherThread())
    monkeypatch.setattr(normalizer, "_cache", _ClearedByAnotherThread())
    assert normalizer.many(texts) == expected
    stem = PorterStemmer().stem
    assert expected[-1] == " ".join(stem(token, to_lowercase=False) for token in ["running", "shoes"])
