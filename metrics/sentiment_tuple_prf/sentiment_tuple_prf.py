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
"""Precision, recall and F1 of aspect-based sentiment tuples (pairs, triplets, quads)."""

import datasets
import evaluate

from opinion_metrics import sentiment_tuple_prf
from opinion_metrics.core.tuple_shapes import MappingKeys, tuple_features
from opinion_metrics.evaluate_support import TUPLES, CheckedArrowInputs
from opinion_metrics.io.rows import arrow_to_lists

_CITATION = """\
@software{opinion_metrics,
  title = {opinion-metrics: evaluation metrics for opinion mining on reviews},
  year = {2026},
  url = {https://github.com/opinion-metrics/opinion-metrics}
}
"""

_DESCRIPTION = """\
Precision, recall and F1 of the tuples of aspect-based sentiment analysis: aspect-opinion
pairs (AOPE), triplets (ASTE, TASD) and quads (ASQP, ACOS). Predicted and gold tuples are
matched one to one: each gold tuple is credited once and a repeated prediction is dropped,
so a model cannot gain by repeating itself. Exactly ("exact", the default) or with partial
credit by the tokens spans share ("overlap"), for the whole tuple and for each element alone
(aspect_f1, opinion_f1, aspect_opinion_f1). counting="membership" reproduces the field's
scorers (ABSA-QUAD's compute_f1_scores) for published numbers; format= reads a generative
model's text.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of tuples, or `list` of `str` with `format`): the predicted
        tuples of each example, each a list in the order of `elements` (text spans, None or
        "NULL" for an implicit span, labels) or a mapping keyed by element name (spans as
        lists of 0-based token positions: {"aspect": [1], "opinion": [3, 4], "sentiment": "POS"}).
    references (`list` of `list` of tuples): the gold tuples of each example, the same way.
    elements (`str` or `list`, default "aste"): the tuple's elements in order: "aope" (aspect,
        opinion), "aste" (aspect, opinion, sentiment), "tasd" (aspect, category, sentiment),
        "asqp" (aspect, category, sentiment, opinion), "acos" (aspect, category, opinion,
        sentiment), or element names.
    match (`str`, default "exact"): "exact" (every element equal once prepared) or "overlap"
        (labels equal and spans sharing a token; precision credit = shared tokens / predicted
        span tokens, recall credit = shared / gold, averaged over the spans).
    average (`str`, default "micro"): "micro" (pooled counts, as every ABSA scorer) or "macro"
        (mean of per-example values).
    counting (`str`, default "one_to_one"): "one_to_one" (a maximum one-to-one assignment,
        repeated tuples dropped) or "membership" (ABSA-QUAD's and Generative-ABSA's
        compute_f1_scores: a prediction that is in the gold list is a hit, each repeat too;
        strings compared as given, stripped; recall can exceed 1).
    projections (`list`, default None): the element lists also scored alone, as lists or
        "_"-joined names; None: each span element and, with both, aspect and opinion; []: none.
    label_map (`dict` or `str`, default None): labels renamed after strip and casefold; None:
        pos, neg, neu as positive, negative, neutral.
    normalize (`str` or callable, default "default"): how text spans are prepared before they
        are split into tokens: "default" (NFKC, casefold, punctuation removed), "ascii", "none".
    format (`str`, default None): "paraphrase" (ABSA-QUAD: "category is great because aspect is
        opinion", "[SSEP]" between tuples) or "tuples" (generative ABSA: "(a, b, c); (d, e, f)"):
        predictions are generated text; a segment that cannot be read counts as a predicted
        tuple that matches nothing, and `unparsed` says how many there were.
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
    precision (`float`): in [0, 1], matched predicted tuples (credits) / predicted tuples.
    recall (`float`): in [0, 1] (membership: can exceed 1), matched gold tuples / gold tuples.
    f1 (`float`): the harmonic mean of precision and recall.
    <elements>_precision, <elements>_recall, <elements>_f1 (`float`): the same on the tuples
        projected on those elements: aspect_f1, opinion_f1, aspect_opinion_f1 by default.
    unparsed (`float`, with `format`): segments of generated text that could not be read.
Examples:
    >>> tuple_prf = evaluate.load("sentiment_tuple_prf")
    >>> pizza = ["pizza", "over cooked", "NEG"]
    >>> predictions = [[pizza, pizza, ["the staff", "friendly", "POS"]]]
    >>> references = [[["pizza", "over cooked", "negative"], ["staff", "friendly", "positive"]]]
    >>> results = tuple_prf.compute(predictions=predictions, references=references)
    >>> results["precision"], results["recall"], results["aspect_f1"]
    (0.5, 0.5, 0.5)
    >>> results = tuple_prf.compute(predictions=predictions, references=references, match="overlap")
    >>> results["precision"], results["recall"], round(results["f1"], 4)
    (0.875, 1.0, 0.9333)
    >>> generated = ["food quality is bad because pizza is over cooked [SSEP] service is great"]
    >>> gold = [[["pizza", "food quality", "negative", "over cooked"]]]
    >>> results = tuple_prf.compute(predictions=generated, references=gold, elements="asqp", format="paraphrase")
    >>> results["precision"], results["recall"], results["unparsed"]
    (0.5, 1.0, 1.0)
"""

_TEXT = datasets.List(datasets.List(datasets.Value("string")))
_SPAN = datasets.List(datasets.Value("int64"))
_LABEL = datasets.Value("string")
_FEATURES = {
    "text": datasets.Features({"predictions": _TEXT, "references": _TEXT}),
    "positions": datasets.Features(
        {
            side: datasets.List({"aspect": _SPAN, "opinion": _SPAN, "category": _LABEL, "sentiment": _LABEL})
            for side in ("predictions", "references")
        }
    ),
    "mappings": datasets.Features(
        {
            side: datasets.List({name: _LABEL for name in ("aspect", "opinion", "category", "sentiment")})
            for side in ("predictions", "references")
        }
    ),
    "generated": datasets.Features({"predictions": datasets.Value("string"), "references": _TEXT}),
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SentimentTuplePRF(CheckedArrowInputs, evaluate.Metric):
    input_kinds = {"predictions": TUPLES, "references": TUPLES}

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=list(_FEATURES.values()),
            codebase_urls=["https://github.com/opinion-metrics/opinion-metrics"],
            reference_urls=["https://aclanthology.org/2021.emnlp-main.726/"],
        )

    def _infer_feature_from_batch(self, batch):
        return _FEATURES[tuple_features(batch)]

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of examples (every row validated; errors name the example)."""
        if self.writer is not None:  # every batch in the features of the first (one Arrow type per column)
            kind = tuple_features({"predictions": predictions, "references": references})
            if _FEATURES[kind] != self.selected_feature_format:
                raise ValueError(f"this batch holds {kind} tuples, unlike the batches added before it")
        else:  # a new set of batches: the keys of its mappings (Arrow reads a key left out as None)
            self._keys = MappingKeys()
        self._keys.add(predictions, references)
        super().add_batch(predictions=predictions, references=references, **kwargs)

    _keys = None  # the keys of the mappings added since the last compute

    def _compute(
        self,
        predictions,
        references,
        elements="aste",
        match="exact",
        average="micro",
        counting="one_to_one",
        projections=None,
        label_map=None,
        normalize="default",
        format=None,
        zero_division=0.0,
        confidence_level=None,
        n_resamples=1000,
        random_state=0,
        bootstrap="multinomial",
        return_per_example=False,
    ):
        keys, self._keys = self._keys, None
        if keys is not None:
            keys.check(elements)
        return sentiment_tuple_prf(
            arrow_to_lists(predictions),
            arrow_to_lists(references),
            elements=elements,
            match=match,
            average=average,
            counting=counting,
            projections=projections,
            label_map=label_map,
            normalize=normalize,
            format=format,
            zero_division=zero_division,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            random_state=random_state,
            bootstrap=bootstrap,
            return_per_example=return_per_example,
        )
