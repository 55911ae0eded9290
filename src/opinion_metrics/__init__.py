"""Evaluation metrics for opinion mining on reviews (definitions: docs/definitions.md)."""

from .analysis.compare import compare_systems
from .analysis.explain import explain
from .core.annotators import agreement, merge_references
from .core.grouping import PooledCorpus, pool_by_group
from .core.normalization import make_normalizer, normalize_keyword
from .core.tuple_text import parse_tuples
from .families.aspect_sentiment_score import aspect_sentiment_score
from .families.keyword_diversity import keyword_diversity
from .families.keyword_prf import keyword_prf
from .families.semantic_keyword_prf import semantic_keyword_prf
from .families.sentiment_appropriateness import sentiment_appropriateness
from .families.sentiment_tuple_prf import sentiment_tuple_prf
from .families.weighted_keyword_prf import map_at_k, ndcg_at_k, weighted_keyword_prf
from .state.metric_state import MetricState

__version__ = "0.3.0"
# Every definition, formula and worked example (linked from the CLI, the Spaces and the cards).
DEFINITIONS_URL = "https://github.com/opinion-metrics/opinion-metrics/blob/main/docs/definitions.md"

__all__ = [
    "MetricState",
    "PooledCorpus",
    "agreement",
    "aspect_sentiment_score",
    "compare_systems",
    "explain",
    "keyword_diversity",
    "keyword_prf",
    "make_normalizer",
    "map_at_k",
    "merge_references",
    "ndcg_at_k",
    "normalize_keyword",
    "parse_tuples",
    "pool_by_group",
    "semantic_keyword_prf",
    "sentiment_appropriateness",
    "sentiment_tuple_prf",
    "weighted_keyword_prf",
]
