"""Evaluation metrics for opinion mining on reviews (definitions: docs/definitions.md)."""

from .annotators import agreement, merge_references
from .aspects import aspect_sentiment_score
from .comparison import compare_systems
from .diversity import keyword_diversity
from .explain import explain
from .grouping import PooledCorpus, pool_by_group
from .keyword_prf import keyword_prf
from .preparation import make_normalizer, normalize_keyword
from .semantic import semantic_keyword_prf
from .sentiment import sentiment_appropriateness
from .state import MetricState
from .weighted_keyword_prf import map_at_k, ndcg_at_k, weighted_keyword_prf

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
    "pool_by_group",
    "semantic_keyword_prf",
    "sentiment_appropriateness",
    "weighted_keyword_prf",
]
