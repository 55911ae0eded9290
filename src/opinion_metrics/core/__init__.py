"""What every lexical family shares, in the order a call runs through it: `validation` (the
checks, with messages that name the example), `normalization`, `encoding` (numbering keywords,
scores and rows; frozen rows), `preparation` (a corpus as integer ids, kept across calls by
`corpus_cache`), `cutoffs` (top-k), `presence`, then the match relation (`containment`,
`relations`, `documents`: each document's own pairs) and `matching` (maximum one-to-one
matchings). `grouping` pools examples, `annotators` merges gold lists. Imports `io` and `_native`.
"""
