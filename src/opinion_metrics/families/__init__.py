"""The metric families, one module each, named as the family; each turns its inputs into
per-example statistics and reduces them (`averaging`). `registry` declares every family (its
function, inputs, options from `options`, outputs): the CLI, the evaluate modules, the Spaces,
states and engines are generated from it. Imports `core`, `stats`, `embeddings`, `io`.
"""
