"""explain for sentiment_tuple_prf: per example the assigned pairs with their credits (the ones the
value counts), the tuples left unmatched, the repeats dropped and what the parser could not read."""

from opinion_metrics import explain, sentiment_tuple_prf


def test_the_pairs_and_credits_are_the_ones_the_value_counts():
    predicted = [
        [("thin crust", "food quality", "POS"), ("thin crust", "food quality", "positive"), ("wine", "drinks", "NEG")]
    ]
    gold = [[("crust", "food quality", "positive"), ("thin crust pizza slice", "food quality", "positive")]]
    options = {"elements": "tasd", "match": "overlap"}
    record = explain("sentiment_tuple_prf", predicted, gold, **options)[0]
    # A tie ((1/2, 1) with "crust", (1, 1/2) with the longer aspect): the larger precision credit.
    assert record["matches"] == [{"prediction": predicted[0][0], "reference": gold[0][1], "precision_credit": 1.0,
                                  "recall_credit": 0.5}]  # fmt: skip
    assert record["repeated"] == [predicted[0][1]]  # the same tuple once prepared
    assert record["unmatched_predictions"] == [predicted[0][2]] and record["unmatched_references"] == [gold[0][0]]
    values = sentiment_tuple_prf(predicted, gold, **options, return_per_example=True)["per_example"]
    assert record["values"] == {key: column[0] for key, column in values.items()}
    assert record["values"]["precision"] == 1.0 / 2  # the credit over the two tuples kept


def test_the_fields_counting_pairs_every_prediction_found_in_the_gold_list():
    pizza = ["pizza", "cold", "NEG"]
    records = explain(
        "sentiment_tuple_prf", [[pizza, pizza, ["staff", "rude", "NEG"]]], [[pizza]], counting="membership"
    )
    assert records[0]["matches"] == [{"prediction": pizza, "reference": pizza}] * 2
    assert (
        records[0]["unmatched_predictions"] == [["staff", "rude", "NEG"]] and records[0]["unmatched_references"] == []
    )
    assert records[0]["values"]["precision"] == 2 / 3


def test_what_the_parser_could_not_read_is_shown():
    text = ["food quality is bad because pizza is cold [SSEP] service was slow"]
    records = explain("sentiment_tuple_prf", text, [[("pizza", "food quality", "negative", "cold")]], elements="asqp",
                      format="paraphrase")  # fmt: skip
    assert records[0]["unreadable"] == ["service was slow"]
    assert records[0]["predictions"] == [("pizza", "food quality", "negative", "cold")]
    assert records[0]["values"]["unparsed"] == 1.0 and records[0]["values"]["precision"] == 0.5
