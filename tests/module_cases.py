"""Example inputs and options of each evaluate module (metrics/<name>): what the distributed
test (tests/state/test_distributed.py) and the module harness (tests/surfaces/test_module_harness.py)
run."""

CASES = {
    "keyword_diversity": (
        {"predictions": [["Star Wars", "star wars!", "space opera"], ["jedi"], [], ["droid", "droid army"]]},
        {"return_per_example": True},
    ),
    "keyword_prf": (
        {
            "predictions": [["war", "jedi"], ["droid"], [], ["ring", "hobbit"], ["space opera"]],
            "references": [["jedi", "empire"], ["droid"], ["x"], ["hobbit"], ["space opera", "jedi"]],
        },
        {"match": "token", "average": "micro", "return_per_example": True},
    ),
    "weighted_keyword_prf": (
        {
            "predictions": [["war", "jedi"], ["droid"], ["ring", "hobbit"], ["a"]],
            "scores": [[0.9, 0.2], [0.5], [0.3, 0.8], [1.0]],
            "references": [["jedi", "empire"], ["droid"], ["hobbit"], []],
        },
        {"k": 3},
    ),
    "aspect_sentiment_score": (
        {"predictions": [[0, 4], [3, 0], [5, 5], [0, 0]], "references": [[0, 5], [3, 2], [4, 5], [0, 1]]},
        {"aspects": ["food", "hotel"]},
    ),
    "sentiment_appropriateness": (
        {
            "predictions": [["great acting"], ["boring plot", "slow"], ["space"]],
            "references": [["masterpiece"], ["dull"], []],
            "texts": ["Loved it.", None, "Fine."],
        },
        {},
    ),
    "sentiment_tuple_prf": (
        {
            "predictions": [
                [["pizza", "over cooked", "NEG"], ["the staff", "friendly", "POS"]],
                [],
                [["wine", "pricey", "NEG"]],
            ],
            "references": [
                [["pizza", "over cooked", "negative"]],
                [["service", "slow", "NEG"]],
                [["NULL", "pricey", "neg"]],
            ],
        },
        {"match": "overlap", "return_per_example": True},
    ),
    "semantic_keyword_prf": (
        {
            "predictions": [["space opera", "jedi knight"], ["scam"], ["pizza"]],
            "references": [["space opera", "jedi"], ["fraud"], ["food"]],
        },
        {"threshold": 0.6},
    ),
}
