"""Keyword embeddings: the encoder that embeds each distinct keyword once and keeps its vectors
(`encoder`: `KeywordEncoder`, `load_model`, the half-precision recheck band), the forward pass
through a sentence-transformers model's own modules (`forward`), and the cosines of each
example's own pairs (`cosines`). Imports `core`.
"""
