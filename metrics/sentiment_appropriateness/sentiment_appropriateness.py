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
"""Sentiment Appropriateness Score: does the predicted keywords' sentiment fit the review?"""

import datasets
import evaluate

from opinion_metrics.evaluate_support import KEYWORDS, SENTIMENTS, TEXTS, CheckedArrowInputs
from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness
from opinion_metrics.io.rows import arrow_to_lists, optional_column

_CITATION = """\
@software{opinion_metrics,
  title = {opinion-metrics: evaluation metrics for opinion mining on reviews},
  year = {2026},
  url = {https://huggingface.co/spaces/opinion-metrics/sentiment_appropriateness}
}
@inproceedings{hutto2014vader,
  title = {VADER: A Parsimonious Rule-based Model for Sentiment Analysis of Social Media Text},
  author = {Hutto, C. J. and Gilbert, Eric},
  booktitle = {Proceedings of ICWSM},
  year = {2014}
}
"""

_DESCRIPTION = """\
Sentiment Appropriateness Score (SAS): 1 - |s_pred - s_ref|, where s_pred is the mean
sentiment of an example's predicted keywords and s_ref the mean sentiment of its gold
keywords (sas_from_keywords) or the sentiment of the review text (sas_from_text).
Sentiment is VADER's, mapped into [0, 1]. Values near 1 mean the keywords carry the
emotional tone of the reference.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `str`): predicted keywords per example.
    references (`list` of `list` of `str`, optional): gold keywords per example ([] when there
        are none); adds sas_from_keywords.
    texts (`list` of `str`, optional): the review text per example (None for a missing one);
        adds sas_from_text.
    prediction_sentiments (`list` of `list` of `float`, optional): one sentiment in [0, 1] per
        predicted keyword, for models that output their own; replaces VADER on predictions.
    mapping (`str`, default "weighted"): "weighted" (1.0 pos + 0.5 neu + 0.0 neg, the source
        notebooks') or "compound" ((compound + 1) / 2).
    normalize (`str` or callable, default "default"), stemmer (`str`, default None): keyword
        preparation (empty and duplicate keywords dropped); VADER reads each kept keyword as
        written (stripped), since it uses case and punctuation.
    sentiment (callable, default None): a custom str -> [0, 1] function replacing VADER.
    workers (`int`, default None): processes for VADER on long texts (None: chosen by size).
    confidence_level (`float`, default None): e.g. 0.95 adds `<key>_ci_low` / `<key>_ci_high`,
        bootstrap percentile intervals over examples.
    n_resamples (`int`, default 1000): bootstrap resamples of the intervals.
    random_state (`int`, default 0): seed of the resamples (None: fresh randomness).
    bootstrap (`str`, default "multinomial"): "multinomial" (draw examples with replacement) or
        "poisson" (each example weighs Poisson(1) draws keyed by its position: the intervals
        of an `opinion_metrics.MetricState` fed in order, or of states made apart with keys).
    return_per_example (`bool`, default False): also return "per_example" (None where an
        example is left out).
Returns:
    sas_from_keywords (`float`): in [0, 1], over examples with predictions and references.
    sas_from_text (`float`): in [0, 1], over examples with predictions and a text.
    A key that cannot be computed for any example is absent.
Examples:
    >>> sas = evaluate.load("sentiment_appropriateness")
    >>> results = sas.compute(
    ...     predictions=[["great acting", "moving story"], ["boring plot"]],
    ...     references=[["masterpiece", "beautiful"], ["dull", "waste of time"]],
    ...     texts=["A moving, beautiful film.", "Dull and far too long."],
    ... )
    >>> {name: round(value, 4) for name, value in results.items()}
    {'sas_from_keywords': 0.8269, 'sas_from_text': 0.8858}
"""

_KEYWORDS = datasets.List(datasets.Value("string"))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SentimentAppropriateness(CheckedArrowInputs, evaluate.Metric):
    input_kinds = {
        "predictions": KEYWORDS,
        "references": KEYWORDS,
        "texts": TEXTS,
        "prediction_sentiments": SENTIMENTS,
    }
    optional_inputs = frozenset({"references", "texts", "prediction_sentiments"})

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": _KEYWORDS,
                    "references": _KEYWORDS,
                    "texts": datasets.Value("string"),
                    "prediction_sentiments": datasets.List(datasets.Value("float64")),
                }
            ),
            codebase_urls=["https://github.com/opinion-metrics/opinion-metrics"],
            reference_urls=["https://github.com/cjhutto/vaderSentiment"],
        )

    def _compute(
        self,
        predictions,
        references=None,
        texts=None,
        prediction_sentiments=None,
        mapping="weighted",
        sentiment=None,
        normalize="default",
        stemmer=None,
        workers=None,
        confidence_level=None,
        n_resamples=1000,
        random_state=0,
        bootstrap="multinomial",
        return_per_example=False,
    ):
        return sentiment_appropriateness(
            arrow_to_lists(predictions),
            optional_column(references, share_duplicates=True),
            texts=optional_column(texts),
            prediction_sentiments=optional_column(prediction_sentiments),
            mapping=mapping,
            sentiment=sentiment,
            normalize=normalize,
            stemmer=stemmer,
            workers=workers,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            random_state=random_state,
            bootstrap=bootstrap,
            return_per_example=return_per_example,
        )
