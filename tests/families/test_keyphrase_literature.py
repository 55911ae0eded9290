"""Hand-computed cases from the keyphrase and IR literature (issue 11, SPEC section 3 cut-offs).

- F1@5 (Chan et al. 2019; Meng et al. 2017 and after): the first 5 predictions, precision
  over 5 even when fewer were predicted (the missing ones count as wrong).
- F1@M: all predictions; F1@O (Yuan et al. 2020): the first |G| predictions, precision
  over |G|, which is R-precision (Manning, Raghavan and Schuetze 2008, section 8.4).
- AP@k as trec_eval's map_cut_k and KPEval's MAP@k: precisions at the hits over |G|.
Matching is exact after stemming, as those papers evaluate.
"""

import pytest

from opinion_metrics import keyword_prf, map_at_k, weighted_keyword_prf

GOLD = ["neural network", "keyphrase generation", "reinforcement learning", "adaptive reward"]
EXACT = {"match": "exact", "stemmer": "porter"}


def prf(predictions, references, top_k):
    result = keyword_prf(predictions, references, top_k=top_k, **EXACT)
    return result["precision"], result["recall"], result["f1"]


def test_six_predictions_three_correct_within_the_first_five():
    # Correct at ranks 1, 3 and 5 ("neural networks" stems to the gold "neural network").
    predicted = ["neural networks", "deep learning", "keyphrase generation", "attention", "adaptive rewards", "copy"]
    assert prf([predicted], [GOLD], 5) == pytest.approx((3 / 5, 3 / 4, 2 / 3), abs=1e-15)
    assert prf([predicted], [GOLD], "M") == pytest.approx((3 / 6, 3 / 4, 3 / 5), abs=1e-15)
    assert prf([predicted], [GOLD], None) == prf([predicted], [GOLD], "M")
    # F1@O: the first |G| = 4 predictions hold 2 correct: R-precision 2/4.
    assert prf([predicted], [GOLD], "O") == pytest.approx((2 / 4, 2 / 4, 2 / 4), abs=1e-15)


def test_third_correct_keyword_after_rank_five():
    predicted = ["neural networks", "deep learning", "keyphrase generation", "attention", "copy", "adaptive rewards"]
    assert prf([predicted], [GOLD], 5) == pytest.approx((2 / 5, 2 / 4, 4 / 9), abs=1e-15)
    assert prf([predicted], [GOLD], "M") == pytest.approx((3 / 6, 3 / 4, 3 / 5), abs=1e-15)


def test_three_predictions_all_correct():
    predicted = ["neural networks", "keyphrase generation", "reinforcement learning"]
    # F1@5: two missing predictions count as wrong.
    assert prf([predicted], [GOLD], 5) == pytest.approx((3 / 5, 3 / 4, 2 / 3), abs=1e-15)
    assert prf([predicted], [GOLD], "M") == pytest.approx((1.0, 3 / 4, 6 / 7), abs=1e-15)
    # R-precision divides by |G| whatever |P| is: 3 hits in the first 4 ranks.
    assert prf([predicted], [GOLD], "O") == pytest.approx((3 / 4, 3 / 4, 3 / 4), abs=1e-15)


def test_two_predictions_against_four_gold_r_precision():
    # With fewer predictions than gold keywords, R-precision is hits / |G| (trec_eval Rprec),
    # not hits / |P| (which would give 1.0 here).
    assert prf([["adaptive reward", "neural network"]], [GOLD], "O")[0] == pytest.approx(2 / 4, abs=1e-15)


def test_r_precision_is_the_break_even_point():
    # Manning et al. 2008, 8.4: |Rel| = 5 relevant, 2 of them among the top 5: R-precision 0.4,
    # and precision equals recall at rank |Rel|.
    gold = ["a1", "a2", "a3", "a4", "a5"]
    ranked = ["a1", "x1", "x2", "a4", "x3", "a2", "a3"]
    precision, recall, _ = prf([ranked], [gold], "O")
    assert precision == recall == pytest.approx(0.4, abs=1e-15)


def test_macro_f1_at_5_is_the_mean_of_per_document_f1_and_micro_pools_counts():
    doc1 = ["neural networks", "deep learning", "keyphrase generation", "attention", "adaptive rewards", "copy"]
    doc2 = ["scam", "fraud", "poverty"]
    gold2 = ["fraud", "poverty", "scam"]
    macro = keyword_prf([doc1, doc2], [GOLD, gold2], top_k=5, **EXACT)
    # doc 1: P 3/5, R 3/4, F1 2/3; doc 2: P 3/5 (padded to 5), R 1, F1 3/4.
    assert macro["f1"] == pytest.approx((2 / 3 + 3 / 4) / 2, abs=1e-15)
    assert macro["precision"] == pytest.approx(3 / 5, abs=1e-15)
    micro = keyword_prf([doc1, doc2], [GOLD, gold2], top_k=5, average="micro", **EXACT)
    # Pooled: P = 6 / (5 + 5), R = 6 / (4 + 3), F1 = 12 / 17.
    assert (micro["precision"], micro["recall"], micro["f1"]) == pytest.approx((6 / 10, 6 / 7, 12 / 17), abs=1e-15)


def test_average_precision_at_k_divides_by_the_number_of_gold_keywords():
    # Hits at ranks 1 and 3 among 3 gold keywords: AP@5 = (1/1 + 2/3) / 3 = 5/9 and
    # AP@2 = (1/1) / 3 (trec_eval map_cut_2: over |G| = 3, not min(k, |G|) = 2).
    gold = [["fraud", "poverty", "scam"]]
    ranked = [["fraud", "family", "scam", "cinematography", "acting"]]
    assert map_at_k(ranked, gold, k=5, match="exact") == pytest.approx(5 / 9, abs=1e-15)
    assert map_at_k(ranked, gold, k=2, match="exact") == pytest.approx(1 / 3, abs=1e-15)
    result = weighted_keyword_prf(ranked, [[0.9, 0.8, 0.7, 0.6, 0.5]], gold, k=2, match="exact")
    assert result["map@2"] == pytest.approx(1 / 3, abs=1e-15)
