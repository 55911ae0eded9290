# Copyright 2026 The opinion-metrics Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Aspect presence F1 x rating R2 for aspect-based rating of reviews."""

import datasets
import evaluate

from opinion_metrics.evaluate_support import RATINGS, CheckedArrowInputs
from opinion_metrics.families.aspect_sentiment_score import DEFAULT_ASPECTS, aspect_sentiment_score
from opinion_metrics.io.rows import arrow_to_ratings

_CITATION = """\
@misc{quynhon_ai_hackathon_2022,
  title = {Quy Nhon AI Hackathon 2022: Review Analytics},
  year = {2022},
  note = {Aspect-based rating of tourism reviews; metric: per-aspect F1 x R2}
}
"""

_DESCRIPTION = """\
Scores aspect-based rating of reviews: each review gets one integer per aspect, 0 when the
aspect is absent, otherwise a star rating (1-5 by default). Per aspect, F1 measures
whether presence is detected and R2 how close the ratings are where prediction and gold
both rate the aspect, relative to the fixed rating range (not the variance, unlike
scikit-learn's r2_score). The score is the mean over aspects of F1 x R2; 1.0 is perfect.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `int`): per review, one rating per aspect: 0 (absent) or
        an integer in [min_rating, max_rating]. 4.0 is accepted; 4.5, NaN, None are not.
    references (`list` of `list` of `int`): the gold ratings, same shape.
    aspects (`list` of `str`, default the six tourism aspects: entertainment, accommodation,
        restaurant, food_and_beverage, transportation, shopping): aspect names in column
        order; their number sets the expected row length.
    min_rating (`int`, default 1), max_rating (`int`, default 5): the rating range.
    zero_division (`float`, default 1.0): F1 of an aspect absent from both predictions and
        references (the official scorer's 1.0).
    confidence_level (`float`, default None): e.g. 0.95 adds `<key>_ci_low` / `<key>_ci_high`,
        bootstrap percentile intervals over examples.
    n_resamples (`int`, default 1000): bootstrap resamples of the intervals.
    random_state (`int`, default 0): seed of the resamples (None: fresh randomness).
    bootstrap (`str`, default "multinomial"): "multinomial" (draw examples with replacement) or
        "poisson" (each example weighs Poisson(1) draws keyed by its position: the intervals
        of an `opinion_metrics.MetricState` fed in order, or of states made apart with keys).
Returns:
    score (`float`): in [0, 1], the mean over aspects of F1 x R2.
    f1_<aspect> (`float`): in [0, 1], presence F1 (ratings != 0).
    r2_<aspect> (`float`): in [0, 1], 1 - RSS / (n * (max_rating - min_rating)^2) over the n
        reviews where both sides rate the aspect; 1.0 when n = 0.
    score_<aspect> (`float`): in [0, 1], f1_<aspect> x r2_<aspect>.
Examples:
    >>> aspect_score = evaluate.load("aspect_sentiment_score")
    >>> results = aspect_score.compute(
    ...     predictions=[[0, 4], [3, 0]], references=[[0, 5], [3, 2]], aspects=["food", "hotel"]
    ... )
    >>> results["score"], results["f1_hotel"], results["r2_hotel"]
    (0.8125, 0.6666666666666666, 0.9375)
"""

_RATINGS = datasets.List(datasets.Value("int32"))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class AspectSentimentScore(CheckedArrowInputs, evaluate.Metric):
    input_kinds = {"predictions": RATINGS, "references": RATINGS}

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": _RATINGS, "references": _RATINGS}),
            codebase_urls=["https://github.com/opinion-metrics/opinion-metrics"],
            reference_urls=["https://en.wikipedia.org/wiki/F-score"],
        )

    def _compute(
        self,
        predictions,
        references,
        aspects=DEFAULT_ASPECTS,
        min_rating=1,
        max_rating=5,
        zero_division=1.0,
        confidence_level=None,
        n_resamples=1000,
        random_state=0,
        bootstrap="multinomial",
    ):
        return aspect_sentiment_score(
            arrow_to_ratings(predictions),
            arrow_to_ratings(references),
            aspects=aspects,
            min_rating=min_rating,
            max_rating=max_rating,
            zero_division=zero_division,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            random_state=random_state,
            bootstrap=bootstrap,
        )
