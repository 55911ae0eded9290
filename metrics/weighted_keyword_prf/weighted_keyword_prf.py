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
"""Score-weighted keyword precision, recall, F1, graded nDCG@k and MAP@k."""

import datasets
import evaluate

from opinion_metrics import weighted_keyword_prf
from opinion_metrics.evaluate_support import KEYWORDS, SCORES, TEXTS, CheckedArrowInputs
from opinion_metrics.io.rows import arrow_to_lists, optional_column

_CITATION = """\
@software{opinion_metrics,
  title = {opinion-metrics: evaluation metrics for opinion mining on reviews},
  year = {2026},
  url = {https://huggingface.co/spaces/opinion-metrics/weighted_keyword_prf}
}
@article{jarvelin2002cumulated,
  title = {Cumulated gain-based evaluation of IR techniques},
  author = {J{\\"a}rvelin, Kalervo and Kek{\\"a}l{\\"a}inen, Jaana},
  journal = {ACM Transactions on Information Systems},
  volume = {20}, number = {4}, pages = {422--446}, year = {2002}
}
"""

_DESCRIPTION = """\
Score-aware evaluation of ranked, scored keyword predictions. Weighted precision is the
share of the model's confidence placed on matched keywords, weighted recall the matched
confidence per gold keyword; nDCG@k rewards matches near the top, graded by how important
(how early) the matched gold keyword is; MAP@k is the binary-relevance mean average
precision. Matching is approximate (substring by default) and, by default, one-to-one.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `str`): predicted keywords per example, in rank order.
    scores (`list` of `list` of `float`): one confidence per predicted keyword, parallel to
        `predictions`, each a finite number in [0, 1] (see `clip_scores`).
    references (`list` of `list` of `str`): gold keywords per example, most important first.
    texts (`list` of `str`, optional): the text each example's keywords were extracted from
        (None for a missing one); needed by `presence`.
    presence (`str`, default "all"): "all" keywords, or only those that occur in the example's
        text ("present") or do not ("absent"), on both sides; needs `texts`.
    match (`str`, default "substring"): "exact", "substring" or "token".
    normalize (`str` or callable, default "default"): "default", "ascii", "none" or a callable.
    stemmer (`str`, default None): None or "porter".
    one_to_one (`bool`, default True): the matched score is that of a maximum-weight
        one-to-one matching; False sums the scores of all predictions matching some gold keyword.
    average (`str`, default "macro"): "macro" or "micro" (pools matched score, total score
        and gold counts) for the weighted precision / recall / F1.
    top_k (`int` or `str`, default None): cut-off for weighted P/R/F1: None or "M", k, or "O"
        (the first |G|); weighted precision divides by the score sum of the kept predictions.
    k (`int`, default 5): rank cut-off of nDCG@k and MAP@k. AP@k divides the sum of the
        precisions at hit ranks below k by |G| (trec_eval's map_cut_k).
    relevance (`str`, default "graded"): "graded" (gold keyword j, 0-based, weighs
        1 / log2(j + 2)) or "binary".
    clip_scores (`bool`, default False): clip finite scores into [0, 1] (e.g. negative
        cosine similarities) instead of raising ValueError. NaN and inf always raise.
    zero_division (`float`, default 0.0): value of a ratio with a zero denominator, in [0, 1].
    confidence_level (`float`, default None): e.g. 0.95 adds `<key>_ci_low` / `<key>_ci_high`,
        bootstrap percentile intervals over examples.
    n_resamples (`int`, default 1000): bootstrap resamples of the intervals.
    random_state (`int`, default 0): seed of the resamples (None: fresh randomness).
    bootstrap (`str`, default "multinomial"): "multinomial" (draw examples with replacement) or
        "poisson" (each example weighs Poisson(1) draws keyed by its position: the intervals
        of an `opinion_metrics.MetricState` fed in order, or of states made apart with keys).
    return_per_example (`bool`, default False): also return "per_example" (lists; nDCG and
        MAP are None for examples without gold keywords).
Returns:
    weighted_precision (`float`): in [0, 1].
    weighted_recall (`float`): in [0, 1] with one_to_one=True; with False it can exceed 1
        (several predictions credit the same gold keyword).
    weighted_f1 (`float`): in [0, 1] with one_to_one=True; with False it can exceed 1.
    ndcg@{k} (`float`): in [0, 1], mean over examples with gold keywords.
    map@{k} (`float`): in [0, 1], mean over examples with gold keywords.
Examples:
    >>> weighted_keyword_prf = evaluate.load("weighted_keyword_prf")
    >>> results = weighted_keyword_prf.compute(
    ...     predictions=[["scam", "family", "poverty", "cinematography", "fraud"]],
    ...     scores=[[0.9, 0.8, 0.7, 0.6, 0.5]],
    ...     references=[["fraud", "poverty", "scam"]],
    ... )
    >>> {name: round(value, 4) for name, value in results.items()}
    {'weighted_precision': 0.6, 'weighted_recall': 0.7, 'weighted_f1': 0.6462, 'ndcg@5': 0.7295, 'map@5': 0.7556}
"""

_KEYWORDS = datasets.List(datasets.Value("string"))
_SCORES = datasets.List(datasets.Value("float64"))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class WeightedKeywordPRF(CheckedArrowInputs, evaluate.Metric):
    input_kinds = {"predictions": KEYWORDS, "scores": SCORES, "references": KEYWORDS, "texts": TEXTS}
    optional_inputs = frozenset({"texts"})

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": _KEYWORDS,
                    "scores": _SCORES,
                    "references": _KEYWORDS,
                    "texts": datasets.Value("string"),
                }
            ),
            codebase_urls=["https://github.com/opinion-metrics/opinion-metrics"],
            reference_urls=["https://en.wikipedia.org/wiki/Discounted_cumulative_gain"],
        )

    def _compute(
        self,
        predictions,
        scores,
        references,
        texts=None,
        presence="all",
        match="substring",
        normalize="default",
        stemmer=None,
        one_to_one=True,
        average="macro",
        top_k=None,
        k=5,
        relevance="graded",
        clip_scores=False,
        zero_division=0.0,
        confidence_level=None,
        n_resamples=1000,
        random_state=0,
        bootstrap="multinomial",
        return_per_example=False,
    ):
        return weighted_keyword_prf(
            arrow_to_lists(predictions),
            arrow_to_lists(scores),
            arrow_to_lists(references, share_duplicates=True),
            texts=optional_column(texts),
            presence=presence,
            match=match,
            normalize=normalize,
            stemmer=stemmer,
            one_to_one=one_to_one,
            average=average,
            top_k=top_k,
            k=k,
            relevance=relevance,
            clip_scores=clip_scores,
            zero_division=zero_division,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            random_state=random_state,
            bootstrap=bootstrap,
            return_per_example=return_per_example,
        )
