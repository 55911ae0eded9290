"""Resampling and significance: bootstrap intervals over per-example statistics (`resampling`),
Poisson weights keyed by example and the key sketch of mergeable states (`poisson`), paired
tests and Holm's correction (`significance`). Imports `core.validation` only.
"""
