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
"""Approximate-match keyword precision, recall and F1."""

import datasets
import evaluate

from opinion_metrics import keyword_prf
from opinion_metrics.evaluate_support import KEYWORDS, TEXTS, CheckedArrowInputs
from opinion_metrics.io.rows import arrow_to_lists, optional_column

_CITATION = """\
@software{opinion_metrics,
  title = {opinion-metrics: evaluation metrics for opinion mining on reviews},
  year = {2026},
  url = {https://huggingface.co/spaces/opinion-metrics/keyword_prf}
}
"""

_DESCRIPTION = """\
Keyword precision, recall and F1 for keyword / keyphrase extraction, with approximate
matching: a predicted keyword matches a gold keyword when, after normalization, they are
equal or one contains the other ("substring", the default), when one's tokens are a
contiguous run of the other's ("token"), or only when equal ("exact"). By default matches
are one-to-one (a maximum bipartite matching), and scores are averaged over examples
("macro") or pooled ("micro").
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `str`): predicted keywords per example, in rank order.
    references (`list` of `list` of `str`): gold keywords per example, most important first.
    texts (`list` of `str`, optional): the text each example's keywords were extracted from
        (None for a missing one); needed by `presence`.
    presence (`str`, default "all"): "all" keywords, or only those that occur in the example's
        text ("present") or do not ("absent"), on both sides; needs `texts`.
    match (`str`, default "substring"): "exact", "substring" (equal, or either contains the
        other, character-level) or "token" (contiguous token sub-sequence).
    normalize (`str` or callable, default "default"): "default" (Unicode NFKC, casefold,
        dashes, underscores and "/" as spaces, other punctuation and symbols removed, white
        space collapsed), "ascii" (the source
        notebooks' normalize_kw), "none" (only stripped), or a callable str -> str.
        Keywords empty after normalization are dropped; duplicates keep their first rank.
    stemmer (`str`, default None): None or "porter" (each token stemmed, needs nltk).
    one_to_one (`bool`, default True): count a maximum one-to-one matching; False counts
        every prediction (gold keyword) matching some gold keyword (prediction).
    average (`str`, default "macro"): "macro" (mean of per-example values) or "micro"
        (pooled counts).
    top_k (`int` or `str`, default None): None or "M" (all predictions; precision divides
        by their number), k (the first k; precision divides by k, trec_eval's P_k), "O" (the
        first |G|; precision divides by |G|: R-precision). Recall divides by |G|.
    zero_division (`float`, default 0.0): value of a ratio with a zero denominator, in [0, 1].
    confidence_level (`float`, default None): e.g. 0.95 adds `<key>_ci_low` / `<key>_ci_high`,
        bootstrap percentile intervals over examples.
    n_resamples (`int`, default 1000): bootstrap resamples of the intervals.
    random_state (`int`, default 0): seed of the resamples (None: fresh randomness).
    bootstrap (`str`, default "multinomial"): "multinomial" (draw examples with replacement) or
        "poisson" (each example weighs Poisson(1) draws keyed by its position: the intervals
        of an `opinion_metrics.MetricState` fed in order, or of states made apart with keys).
    return_per_example (`bool`, default False): also return "per_example", a dict of lists.
Returns:
    precision (`float`): in [0, 1].
    recall (`float`): in [0, 1].
    f1 (`float`): in [0, 1], the harmonic mean of precision and recall.
Examples:
    >>> keyword_prf = evaluate.load("keyword_prf")
    >>> predictions = [["social satire", "dark comedy", "pizza"], ["space opera"]]
    >>> references = [["satire", "class struggle", "comedy"], ["space opera", "jedi"]]
    >>> keyword_prf.compute(predictions=predictions, references=references)
    {'precision': 0.8333333333333333, 'recall': 0.5833333333333333, 'f1': 0.6666666666666666}
    >>> keyword_prf.compute(predictions=predictions, references=references, match="exact", average="micro")
    {'precision': 0.25, 'recall': 0.2, 'f1': 0.22222222222222224}
"""

_KEYWORDS = datasets.List(datasets.Value("string"))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class KeywordPRF(CheckedArrowInputs, evaluate.Metric):
    input_kinds = {"predictions": KEYWORDS, "references": KEYWORDS, "texts": TEXTS}
    optional_inputs = frozenset({"texts"})

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": _KEYWORDS, "references": _KEYWORDS, "texts": datasets.Value("string")}
            ),
            codebase_urls=["https://github.com/opinion-metrics/opinion-metrics"],
            reference_urls=["https://aclanthology.org/W12-3717/"],
        )

    def _compute(
        self,
        predictions,
        references,
        texts=None,
        presence="all",
        match="substring",
        normalize="default",
        stemmer=None,
        one_to_one=True,
        average="macro",
        top_k=None,
        zero_division=0.0,
        confidence_level=None,
        n_resamples=1000,
        random_state=0,
        bootstrap="multinomial",
        return_per_example=False,
    ):
        return keyword_prf(
            arrow_to_lists(predictions),
            arrow_to_lists(references, share_duplicates=True),
            texts=optional_column(texts),
            presence=presence,
            match=match,
            normalize=normalize,
            stemmer=stemmer,
            one_to_one=one_to_one,
            average=average,
            top_k=top_k,
            zero_division=zero_division,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            random_state=random_state,
            bootstrap=bootstrap,
            return_per_example=return_per_example,
        )
