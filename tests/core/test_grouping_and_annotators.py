"""pool_by_group (SPEC section 3) and multiple annotators (SPEC section 8)."""

import pytest

from opinion_metrics import agreement, keyword_prf, merge_references, pool_by_group, weighted_keyword_prf


def test_pool_by_group_merges_predictions_and_references_in_first_occurrence_order():
    pooled = pool_by_group(
        [["War", "jedi"], ["jedi!", "droid"], ["ring"]],
        [["jedi"], ["jedi", "empire"], ["hobbit"]],
        ["SW4", "SW4", "LOTR"],
    )
    assert pooled.groups == ["SW4", "LOTR"]
    assert pooled.predictions == [["War", "jedi", "droid"], ["ring"]]
    assert pooled.references == [["jedi", "empire"], ["hobbit"]]
    assert pooled.scores is None


def test_pooled_scores_are_the_maximum_per_keyword():
    pooled = pool_by_group([["a", "b"], ["B", "c"]], [["a"], ["a"]], [1, 1], scores=[[0.1, 0.2], [0.9, 0.3]])
    assert pooled.predictions == [["a", "b", "c"]]
    assert pooled.scores == [[0.1, 0.9, 0.3]]


def test_global_evaluation_is_pooling_then_one_example_per_group():
    predictions, references, groups = [["a", "x"], ["a", "b"]], [["a", "b", "c"], ["a", "b", "c"]], ["m", "m"]
    pooled = pool_by_group(predictions, references, groups)
    assert keyword_prf(pooled.predictions, pooled.references) == pytest.approx(
        {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3}
    )
    scored = pool_by_group(predictions, references, groups, scores=[[1.0, 0.5], [0.5, 0.5]])
    assert weighted_keyword_prf(scored.predictions, scored.scores, scored.references)["weighted_precision"] == 0.75


def test_pool_by_group_errors():
    with pytest.raises(ValueError, match="groups: example 1 must be hashable, got list"):
        pool_by_group([["a"], ["b"]], [["a"], ["b"]], ["g", ["h"]])
    with pytest.raises(ValueError, match="predictions has 2, groups has 1"):
        pool_by_group([["a"], ["b"]], [["a"], ["b"]], ["g"])


ANNOTATIONS = [
    [["Great battery", "small screen"], ["great battery!", "price"], ["battery", "Small Screen"]],
    [["cheap"], ["cheap", "fast"], []],
]


def test_merge_union_and_intersection():
    assert merge_references(ANNOTATIONS) == [
        ["Great battery", "small screen", "price", "battery"],
        ["cheap", "fast"],
    ]
    assert merge_references(ANNOTATIONS, "intersection") == [[], []]
    assert merge_references([a[:2] for a in ANNOTATIONS], "intersection") == [["Great battery"], ["cheap"]]


def test_agreement_is_pairwise_dice():
    # Example 0 sets: A={great battery, small screen}, B={great battery, price}, C={battery, small screen}
    # Example 1 sets: A={cheap}, B={cheap, fast}, C={}
    micro = agreement(ANNOTATIONS)
    assert micro[0][1] == pytest.approx(2 * (1 + 1) / (4 + 3))
    assert micro[0][2] == pytest.approx(2 * (1 + 0) / (4 + 1))
    assert micro[1][2] == pytest.approx(0.0)
    assert micro[1][0] == micro[0][1] and micro[0][0] == 1.0
    macro = agreement(ANNOTATIONS, average="macro")
    assert macro[0][1] == pytest.approx((2 / 4 + 2 / 3) / 2)
    assert macro[1][2] == pytest.approx((0 / 4 + 0 / 2) / 2)


def test_annotator_errors():
    with pytest.raises(ValueError, match="example 1 has 1 annotators, expected 2"):
        merge_references([[["a"], ["b"]], [["a"]]])
    with pytest.raises(ValueError, match="mode must be one of"):
        merge_references(ANNOTATIONS, "majority")
    with pytest.raises(ValueError, match=r"annotator 1\): example 0, keyword 0 must be a str, got int 3"):
        agreement([[["a"], [3]]])
