"""`compute_metrics` factories for `transformers.Trainer` and `Seq2SeqTrainer`.

Model outputs become metric inputs here, explicitly (argmax, rounding, decoding, tag
spans), never silently inside a metric. Nothing here imports transformers: the factories
take what Trainer passes (an `EvalPrediction`, a `(predictions, label_ids)` tuple, or one
batch with `compute_result` under `batch_eval_metrics=True`).

One module per helper kind: `aspects` (ratings), `keyphrases` (generated keyphrases),
`tagging` (BIO / BIOES token tags), `tuples` (generated sentiment tuples); `batched` is the
mechanism they share (`StateMetrics`: whole evaluation sets, or batch by batch on
`MetricState`s), `inputs` reads what Trainer passes.
"""

from .aspects import ASPECT_OUTPUTS, aspect_compute_metrics, ratings_from_logits, ratings_from_regression
from .batched import FamilyScore, StateMetrics
from .inputs import Evaluated, token_ids
from .keyphrases import KEYPHRASE_METRICS, keyphrase_compute_metrics, split_keyphrases
from .tagging import keyphrase_tagging_compute_metrics, tag_spans
from .tuples import tuple_compute_metrics

__all__ = [
    "ASPECT_OUTPUTS",
    "KEYPHRASE_METRICS",
    "Evaluated",
    "FamilyScore",
    "StateMetrics",
    "aspect_compute_metrics",
    "keyphrase_compute_metrics",
    "keyphrase_tagging_compute_metrics",
    "ratings_from_logits",
    "ratings_from_regression",
    "split_keyphrases",
    "tag_spans",
    "token_ids",
    "tuple_compute_metrics",
]
