"""Mergeable metric states (`metric_state.MetricState`): a family's column sums (and Poisson
resample sums) that merge by addition; `layout` says what each statistic can be, `wire` writes
and checks the byte format, `options` names the objects a state cannot hold. Imports
`families`, `stats`, `io`.
"""
