"""What Ray, Spark (`opinion_metrics.ray`, `opinion_metrics.spark`) and the CLI's `--workers`
(`parallel`) share: the request checked once, a `MetricState` per block, pooled groups, a gold
table joined by key (`support`), and the semantic family's keyword vectors (`vectors`).
Imports `state`, `families` and below.
"""
