"""The hostile cases issue 29 found still open: a huge `top_k` / `k` is a clear error (an
OverflowError deep inside before); valid ratings as a pandas or polars Series of lists,
torch tensors or a DataFrame are accepted by the library and the modules (`compute` and
`add_batch`); the Trainer helpers take plain lists (of any lengths) and tensors of ids.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO

from opinion_metrics import aspect_sentiment_score, keyword_prf, semantic_keyword_prf, weighted_keyword_prf
from opinion_metrics.core.validation import parse_top_k
from opinion_metrics.trainer import aspect_compute_metrics, keyphrase_compute_metrics

torch = pytest.importorskip("torch")
pandas = pytest.importorskip("pandas")


@pytest.mark.parametrize("huge", [2**53 + 1, 10**30, 10**400, 10**5000], ids=["2**53+1", "1e30", "1e400", "1e5000"])
def test_a_huge_cut_off_is_a_clear_error_on_every_family(huge):
    message = r"must be at most 2\*\*53 = 9,007,199,254,740,992, got"
    with pytest.raises(ValueError, match="top_k " + message):
        keyword_prf([["a"]], [["a"]], top_k=huge)
    with pytest.raises(ValueError, match="k " + message):
        weighted_keyword_prf([["a"]], [[0.5]], [["a"]], k=huge)  # OverflowError in the nDCG ranks before
    with pytest.raises(ValueError, match="top_k " + message):
        weighted_keyword_prf([["a"]], [[0.5]], [["a"]], top_k=huge)
    with pytest.raises(ValueError, match="top_k " + message):
        semantic_keyword_prf([["a"]], [["a"]], top_k=huge, model=object())  # before any model is asked
    assert keyword_prf([["a", "b"]], [["a"]], top_k=2**53)["precision"] == 2.0**-53


def test_a_huge_cut_off_typed_as_text_is_a_clear_error():
    with pytest.raises(ValueError, match="top_k must be at most 2\\*\\*53 .* a number of 5000 digits"):
        parse_top_k("9" * 5000)  # int() refuses 4,300 digits with a message of its own
    assert parse_top_k("9007199254740992") == 2**53


PREDICTED = [[0, 4, 5, 0, 0, 0], [3, 0, 0, 0, 0, 2]]
GOLD = [[0, 4, 5, 0, 0, 0], [3, 0, 1, 0, 0, 2]]


def rating_forms():
    polars = pytest.importorskip("polars")
    return {
        "pandas Series of lists": (pandas.Series(PREDICTED), pandas.Series(GOLD)),
        "pandas Series of arrays": (pandas.Series([np.array(row) for row in PREDICTED]), pandas.Series(GOLD)),
        "polars Series of lists": (polars.Series(PREDICTED), polars.Series(GOLD)),
        "DataFrame": (pandas.DataFrame(PREDICTED), pandas.DataFrame(GOLD)),
        "2-d tensor": (torch.tensor(PREDICTED), torch.tensor(GOLD)),
        "list of tensors": ([torch.tensor(row) for row in PREDICTED], [torch.tensor(row) for row in GOLD]),
    }


def test_valid_ratings_in_any_common_container_are_accepted_everywhere():
    evaluate = pytest.importorskip("evaluate")
    module = evaluate.load(str(REPO / "metrics" / "aspect_sentiment_score"))
    expected = aspect_sentiment_score(PREDICTED, GOLD)
    for name, (predicted, gold) in rating_forms().items():
        assert aspect_sentiment_score(predicted, gold) == expected, name
        assert module.compute(predictions=predicted, references=gold) == pytest.approx(expected), name
        module.add_batch(predictions=predicted, references=gold)
        assert module.compute() == pytest.approx(expected), name


def test_bad_ratings_in_a_tensor_are_named_as_ratings():
    evaluate = pytest.importorskip("evaluate")
    module = evaluate.load(str(REPO / "metrics" / "aspect_sentiment_score"))
    with pytest.raises(
        ValueError, match=r"predictions: example 1 must be a list of ratings \(one integer per aspect\)"
    ):
        module.add_batch(predictions=[[0] * 6, "0,1,2"], references=GOLD)
    with pytest.raises(ValueError, match=r"predictions: example 1, aspect 2: rating must be an integer, got float 2.5"):
        module.add_batch(predictions=torch.tensor([[0.0] * 6, [0, 0, 2.5, 0, 0, 0]]), references=GOLD)
    with pytest.raises(
        ValueError, match=r"predictions: example 0, aspect 'a': rating must be an integer, got bool True"
    ):
        aspect_sentiment_score(torch.tensor([[True, False]]), [[1, 0]], aspects=["a", "b"])  # named the row before


def test_scores_as_tensors_per_example_are_read_by_position():
    scores = [torch.tensor([0.9, 0.4]), torch.tensor([0.7])]
    predictions, references = [["war", "jedi"], ["empire"]], [["war"], ["empire"]]
    expected = weighted_keyword_prf(predictions, [[0.9, 0.4], [0.7]], references)
    assert weighted_keyword_prf(predictions, scores, references) == pytest.approx(expected)


class WordTokenizer:
    words = ["<pad>", "war", "jedi", ";", "empire"]
    pad_token_id = 0

    def batch_decode(self, ids, skip_special_tokens=True):
        return [" ".join(self.words[i] for i in row if i) for row in np.asarray(ids).tolist()]


def test_the_trainer_helpers_take_plain_lists_and_tensors_of_ids():
    """A plain list of generated ids was taken for (logits, hidden states): its first row was
    read as the whole batch."""
    compute_metrics = keyphrase_compute_metrics(WordTokenizer())
    generated = [[1, 3, 2], [4]]  # rows of different lengths, as generate(...).tolist() per batch gives them
    labels = [[1, 3, 4], [4, -100, -100]]
    expected = keyword_prf([["war", "jedi"], ["empire"]], [["war", "empire"], ["empire"]])
    assert compute_metrics((generated, labels)) == expected
    assert compute_metrics(([torch.tensor(row) for row in generated], torch.tensor(labels))) == expected
    padded = np.array([[1, 3, 2], [4, 0, 0]])
    assert compute_metrics(((padded, np.zeros((2, 3, 4))), labels)) == expected  # (ids, other outputs)
    with pytest.raises(ValueError, match=r"predictions: example 1 must be a list of token ids \(integers\)"):
        compute_metrics(([[1], ["war"]], labels))
    aspects = aspect_compute_metrics(outputs="regression", aspects=["food", "hotel"])
    expected = aspects((np.array([[0.2, 3.6], [4.9, 0.4]]), np.array([[0, 4], [5, 0]])))
    assert aspects(([[0.2, 3.6], [4.9, 0.4]], [[0, 4], [5, 0]])) == expected
    assert aspects((torch.tensor([[0.2, 3.6], [4.9, 0.4]]), torch.tensor([[0, 4], [5, 0]]))) == expected
