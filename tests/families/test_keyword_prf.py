"""Family 1 (SPEC section 3): hand-computed cases, properties, and the real movie data."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_impl import f1, keyword_counts, prepare, ratio

from opinion_metrics import keyword_prf


def prf(predictions, references, **options):
    result = keyword_prf(predictions, references, **options)
    return result["precision"], result["recall"], result["f1"]


def test_substring_match_is_the_default():
    p, r, f = prf([["social satire", "dark comedy", "pizza"]], [["satire", "class struggle", "comedy"]])
    assert (p, r, f) == pytest.approx((2 / 3, 2 / 3, 2 / 3))


def test_one_to_one_uses_a_maximum_matching():
    predictions, references = [["war", "star wars", "wars"]], [["star wars"]]
    assert prf(predictions, references, one_to_one=False) == (1.0, 1.0, 1.0)
    assert prf(predictions, references) == pytest.approx((1 / 3, 1.0, 0.5))


def test_one_to_one_is_maximum_not_greedy_in_sorted_order():
    # Seed 001 sorts and matches greedily: "star" takes "star wars" first, "wars" nothing.
    assert prf([["star", "wars"]], [["star wars", "star"]]) == (1.0, 1.0, 1.0)


def test_exact_match_after_normalization():
    assert prf([["Star Wars!", "wars"]], [["star wars"]], match="exact") == pytest.approx((0.5, 1.0, 2 / 3))


def test_token_match():
    assert prf([["art", "party time"]], [["party"]], match="token") == pytest.approx((0.5, 1.0, 2 / 3))
    assert prf([["art", "party time"]], [["party"]], match="substring", one_to_one=False) == (1.0, 1.0, 1.0)


def test_macro_and_micro_averages():
    predictions, references = [["a", "b"], ["c"]], [["a"], ["c", "d", "e"]]
    assert prf(predictions, references) == pytest.approx((0.75, 2 / 3, (2 / 3 + 1 / 2) / 2))
    assert prf(predictions, references, average="micro") == pytest.approx((2 / 3, 0.5, 4 / 7))


@pytest.mark.parametrize(
    ("top_k", "expected"),
    [(1, (0.0, 0.0, 0.0)), (2, (1 / 2, 1 / 3, 0.4)), ("O", (2 / 3, 2 / 3, 2 / 3)), ("M", (2 / 4, 2 / 3, 4 / 7))],
)
def test_top_k(top_k, expected):
    assert prf([["x", "a", "b", "y"]], [["a", "b", "c"]], top_k=top_k) == pytest.approx(expected)
    assert prf([["x", "a", "b", "y"]], [["a", "b", "c"]]) == prf([["x", "a", "b", "y"]], [["a", "b", "c"]], top_k="M")


def test_top_k_counts_after_empty_and_duplicate_keywords_are_dropped():
    assert prf([["!!!", "x", "X", "a"]], [["a"]], top_k=2) == pytest.approx((0.5, 1.0, 2 / 3))


@pytest.mark.parametrize("zero_division", [0.0, 1.0, 0.5])
def test_zero_division(zero_division):
    zd = zero_division
    assert prf([[]], [["a"]], zero_division=zd) == pytest.approx((zd, 0.0, 0.0))
    assert prf([["a"]], [[]], zero_division=zd) == pytest.approx((0.0, zd, 0.0))
    assert prf([[]], [[]], zero_division=zd) == pytest.approx((zd, zd, zd))


def test_normalize_and_stemmer_options():
    assert prf([["Café"]], [["caf"]], match="exact") == (0.0, 0.0, 0.0)
    assert prf([["Café"]], [["caf"]], match="exact", normalize="ascii") == (1.0, 1.0, 1.0)
    assert prf([["Sci-Fi"]], [["sci-fi"]], match="exact", normalize="none") == (0.0, 0.0, 0.0)
    assert prf([["battles"]], [["battle"]], match="exact") == (0.0, 0.0, 0.0)
    assert prf([["battles"]], [["battle"]], match="exact", stemmer="porter") == (1.0, 1.0, 1.0)


def test_return_per_example():
    result = keyword_prf([["a", "b"], ["c"]], [["a"], ["d"]], return_per_example=True)
    assert result["per_example"] == {"precision": [0.5, 0.0], "recall": [1.0, 0.0], "f1": [2 / 3, 0.0]}


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("match", "fuzzy", "match must be one of"),
        ("average", "weighted", "average must be one of"),
        ("top_k", 0, "top_k must be None, 'M', 'O' or a positive integer|positive integer"),
        ("top_k", "K", "top_k must be None, 'M', 'O' or a positive integer"),
        ("top_k", True, "positive integer"),
        ("zero_division", 2, r"zero_division must be a number in \[0, 1\]"),
        ("zero_division", "warn", r"zero_division must be a number in \[0, 1\]"),
        ("one_to_one", "yes", "one_to_one must be True or False"),
        ("normalize", "lower", "normalize must be one of"),
    ],
)
def test_bad_options(option, value, message):
    with pytest.raises(ValueError, match=message):
        keyword_prf([["a"]], [["a"]], **{option: value})


words = st.sampled_from(["war", "star wars", "wars", "jedi", "Jedi!", "peace", "art", "party", "", "  "])
examples = st.lists(st.lists(words, max_size=6), min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(
    examples,
    st.data(),
    st.sampled_from(["exact", "substring", "token"]),
    st.booleans(),
    st.sampled_from(["macro", "micro"]),
    st.sampled_from([None, 1, 3, "O"]),
    st.sampled_from([0.0, 1.0]),
)
def test_values_are_in_the_unit_interval(predictions, data, match, one_to_one, average, top_k, zero_division):
    references = data.draw(st.lists(st.lists(words, max_size=6), min_size=len(predictions), max_size=len(predictions)))
    result = keyword_prf(
        predictions,
        references,
        match=match,
        one_to_one=one_to_one,
        average=average,
        top_k=top_k,
        zero_division=zero_division,
        return_per_example=True,
    )
    for name in ("precision", "recall", "f1"):
        assert 0.0 <= result[name] <= 1.0
        assert all(0.0 <= v <= 1.0 for v in result["per_example"][name])


@settings(max_examples=200, deadline=None)
@given(st.lists(words, max_size=7), st.lists(words, max_size=7), st.randoms(use_true_random=False))
def test_one_to_one_counts_do_not_depend_on_order(predicted, gold, random):
    shuffled_predicted, shuffled_gold = predicted[:], gold[:]
    random.shuffle(shuffled_predicted)
    random.shuffle(shuffled_gold)
    assert prf([predicted], [gold]) == pytest.approx(prf([shuffled_predicted], [shuffled_gold]))


@settings(max_examples=200, deadline=None)
@given(st.lists(words, max_size=7), st.lists(words, max_size=7))
def test_one_to_one_never_counts_more(predicted, gold):
    strict, loose = prf([predicted], [gold]), prf([predicted], [gold], one_to_one=False)
    assert strict[0] <= loose[0] and strict[1] <= loose[1]


@pytest.mark.parametrize("one_to_one", [True, False])
@pytest.mark.parametrize("average", ["macro", "micro"])
def test_real_movie_reviews_equal_a_straightforward_implementation(movie_reviews, one_to_one, average):
    sample = movie_reviews[::9]  # every movie, every model; a sample keeps the loop short
    predictions = [review[f"keywords_{model}"] or [] for model in ("base", "sentiment") for review in sample]
    references = [review["gold"] for _ in ("base", "sentiment") for review in sample]
    prepared_gold = {}
    counts = []
    for predicted, gold in zip(predictions, references):
        gold_key = id(gold)
        if gold_key not in prepared_gold:
            prepared_gold[gold_key] = prepare(gold)[0]
        kept = prepare(predicted)[0]
        counts.append(
            (
                *keyword_counts(kept, prepared_gold[gold_key], one_to_one=one_to_one),
                len(kept),
                len(prepared_gold[gold_key]),
            )
        )
    if average == "macro":
        per_p = [ratio(mp, n) for mp, _, n, _ in counts]
        per_r = [ratio(mg, g) for _, mg, _, g in counts]
        expected = (
            sum(per_p) / len(counts),
            sum(per_r) / len(counts),
            sum(f1(p, r) for p, r in zip(per_p, per_r)) / len(counts),
        )
    else:
        p = ratio(sum(c[0] for c in counts), sum(c[2] for c in counts))
        r = ratio(sum(c[1] for c in counts), sum(c[3] for c in counts))
        expected = (p, r, f1(p, r))
    assert prf(predictions, references, one_to_one=one_to_one, average=average) == pytest.approx(expected, abs=1e-12)
    assert expected[0] > 0.1  # the data really has matches


def test_precision_at_k_divides_by_k_and_at_o_by_the_gold_count():
    # SPEC section 3 (trec_eval P_k / Rprec): 3 correct predictions of 3 -> P@5 = 3/5, P@M = 1;
    # 3 correct of 6, all within the first 5 -> P@5 = 3/5, P@M = 3/6.
    gold = [["a", "b", "c", "d"]]
    assert prf([["a", "b", "c"]], gold, match="exact", top_k=5)[0] == pytest.approx(3 / 5)
    assert prf([["a", "b", "c"]], gold, match="exact")[0] == pytest.approx(1.0)
    assert prf([["a", "x", "b", "y", "c", "z"]], gold, match="exact", top_k=5)[0] == pytest.approx(3 / 5)
    assert prf([["a", "x", "b", "y", "c", "z"]], gold, match="exact", top_k="M")[0] == pytest.approx(3 / 6)
    # R-precision: hits in the first |G| = 4, divided by 4 even when fewer predictions exist.
    assert prf([["a", "x"]], gold, match="exact", top_k="O")[0] == pytest.approx(1 / 4)
    # Micro pools the k denominators: (1 + 0) / (2 + 2).
    assert prf([["a"], []], [["a"], ["b"]], match="exact", top_k=2, average="micro")[0] == pytest.approx(1 / 4)


def test_keywords_differing_only_in_inner_white_space_match_on_every_strategy():
    # Issue 10 item 1: thousands of predictions sharing a gold list select the lookup strategy.
    fillers = [[f"filler{i}"] for i in range(3000)]
    result = keyword_prf(
        [["a b"], ["a  b"], *fillers], [["a b c"]] * 3002, match="token", normalize="ascii", return_per_example=True
    )
    assert result["per_example"]["precision"][:2] == [1.0, 1.0]


def test_pandas_series_are_read_by_position():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"p": [["a"], ["b"], ["c"]], "r": [["a"], ["x"], ["x"]]}, index=[10, 5, 7])
    expected = keyword_prf(frame["p"].tolist(), frame["r"].tolist(), return_per_example=True)
    filtered = frame[frame.index > 5].sort_values("r")
    assert keyword_prf(frame["p"], frame["r"], return_per_example=True) == expected
    assert keyword_prf(filtered["p"], filtered["r"]) == keyword_prf(filtered["p"].tolist(), filtered["r"].tolist())


def test_format_characters_are_removed_by_default_normalization():
    # SPEC section 1: Cf (BOM, zero-width, bidi marks) removed; a lone zero-width space is empty.
    assert prf([["\ufeffwar", "\u200fwar\u200b", "\u200b"]], [["war"]], match="exact") == pytest.approx((1.0, 1.0, 1.0))


def test_a_top_k_up_to_2_53_divides_precision_by_k_and_a_larger_one_is_a_clear_error():
    result = keyword_prf([["a"]], [["a", "b"]], top_k=2**53)  # k exact in float64
    assert result["precision"] == 2.0**-53 and result["recall"] == 0.5
    with pytest.raises(
        ValueError, match=r"top_k must be at most 2\*\*53 = 9,007,199,254,740,992, got 9223372036854775808"
    ):
        keyword_prf([["a"]], [["a", "b"]], top_k=2**63)
