"""The run of `opinion-metrics`: every subset (system, value of --by, --presence view) and
family evaluated once (in worker processes with --workers), then each system compared with
the baseline within its subset; what the command prints and writes comes from here.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any

from ..analysis.compare import DEFAULT_RESAMPLES
from ..embeddings.encoder import DEFAULT_MODEL
from ..families.registry import FAMILIES as DECLARATIONS
from ..io.arrow import streamed
from ..io.table import Table
from ..stats.significance import Difference, Pairs, significance
from ..view.text import options_used
from .inputs import (
    KEYWORD_FAMILIES,
    Results,
    Speak,
    UsageError,
    _arguments,
    _default_families,
    _Examples,
    _inputs,
    _labelled_rows,
    _presences,
    _semantic_installed,
    _takes_presence,
    attach_gold,
    side_by_side,
    system_split,
)
from .systems import (
    _by_values,
    _check_pairs,
    _compare,
    _compare_dimension,
    _models,
    _pair_rows,
    _spoken,
    _Subset,
    _system_columns,
    subset_rows,
)


def _compute(family: str, inputs: dict[str, Any], workers: int | None = None) -> dict[str, Any]:
    """The family's result: through states (`parallel.compute`) with --workers, pooled groups'
    keys, or columns streamed from a Parquet file; else the family function (with a --presence view,
    with its per-example values, which tell the examples left out at no cost: `_counted`)."""
    function, options = DECLARATIONS[family].function, dict(inputs["options"])
    keys = inputs.get("keys")
    columns = [inputs.get(name) for name in ("predictions", "references", "scores")]
    columns += [options.get(name) for name in ("texts", "prediction_sentiments")]
    stream = any(map(streamed, columns))
    if options.get("return_per_example"):  # the function's per-example values; pooled groups' intervals by key
        result = function(*_arguments(family, inputs), **options)
        if keys is not None and options.get("bootstrap") == "poisson" and options.get("confidence_level"):
            rest = {name: value for name, value in options.items() if name != "return_per_example"}
            return {**_compute(family, {**inputs, "options": rest}, workers), "per_example": result["per_example"]}
        return result
    processes = workers or 1
    if "workers" in options and (stream or keys is not None):  # sentiment's --workers: the chunks' processes
        processes = options.pop("workers")
    if (processes > 1 and "workers" not in options) or stream or keys is not None:
        from ..engines.parallel import compute

        references = inputs.get("references")
        return compute(
            family, inputs["predictions"], references, scores=inputs.get("scores"), workers=processes, keys=keys,
            **options,
        )  # fmt: skip
    if options.get("presence", "all") != "all":
        options["return_per_example"] = True
    return function(*_arguments(family, inputs), **options)


def _counted(inputs: dict[str, Any], per_example: dict[str, list[Any]] | None) -> int | None:
    """How many examples count in a --presence view (those with a gold keyword of its kind), from the
    per-example values (None where left out) or else from the rule itself; None: every example."""
    options = inputs["options"]
    presence = options.get("presence", "all")
    if presence == "all":
        return None
    if per_example:
        return sum(value is not None for value in next(iter(per_example.values())))
    from ..state.metric_state import statistics

    rule = {name: options[name] for name in ("presence", "normalize", "stemmer") if name in options}
    references = inputs["references"]
    _, included = statistics(
        "keyword_prf", rule, predictions=[[]] * len(references), references=references, texts=options["texts"]
    )
    return int(included.sum())


@dataclass
class Evaluation:
    """The results, and with --baseline the differences from the baseline per subset."""

    results: Results
    comparisons: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    # the same as the report shows them: Holm's correction over the systems, pairs, smallest p-value
    differences: dict[str, dict[str, dict[str, Difference]]] = field(default_factory=dict)
    # per (subset, family): the library's arguments and where its examples are in the files
    inputs: dict[tuple[str, str], tuple[dict[str, Any], _Examples]] = field(default_factory=dict)
    # per (subset, family), with --per-example: the family's per-example values
    per_example: dict[tuple[str, str], dict[str, list[Any]]] = field(default_factory=dict)
    # per subset and family, where a --presence view leaves examples out: how many
    left_out: dict[str, dict[str, int]] = field(default_factory=dict)
    # per subset: its view (`_Subset.group`); `within` names the views' columns ("movie", "presence")
    groups: dict[str, str] = field(default_factory=dict)
    within: str = ""


def evaluate_table(table: Table, args: argparse.Namespace, speak: Speak | None = None) -> Evaluation:
    """{subset: {family: results}}: one subset per model of a '*' pattern, value of `--by`
    and `--presence` view (or "all"); with `--baseline`, each subset's paired comparison
    with the base system's. Library errors are rewritten by `speak` into the CLI's words."""
    from tqdm.auto import tqdm

    gold = attach_gold(table, args) if args.gold else None
    models = _models(table, args)
    families = list(dict.fromkeys(args.metrics or _default_families(table, args, [s for _, s in models.values()])))
    if "all" in families:
        has_scores = all(scores in table.columns for _, scores in models.values())
        families = [family for family in KEYWORD_FAMILIES if family != "weighted_keyword_prf" or has_scores]
    if args.group:  # texts belong to single reviews
        pooled = {"--prediction-sentiments": args.prediction_sentiments, "--texts": args.texts}
        pooled["--presence"] = _presences(args) != ["all"]
        for option, value in pooled.items():
            if value:
                raise UsageError(f"{option} cannot be pooled with --group (it is per review)")
    n = len(next(iter(table.columns.values()), []))
    if n == 0:
        raise ValueError(f"{table.path.name}: no rows to evaluate")
    by_value = _by_values(table, args) if args.by else {"": list(range(n))}
    if system_split(args):  # a system column and --by another column: a row per system and value
        systems = _labelled_rows(table, system_split(args), "--system")
        models = {system: models[""] for system in systems}
    compare = _compare_dimension(args, models, by_value)
    if compare is not None and compare[0] == "value":
        by_value = _pair_rows(table, args, by_value, compare[1])
    elif args.id is not None and (compare is None or not system_split(args)):
        raise UsageError("--id pairs the rows of the systems compared: it needs --baseline")
    rows_of = subset_rows(table, args, list(models), by_value, compare[1] if compare is not None else None)
    presences = _presences(args)
    system = "model" if side_by_side(args) or system_split(args) else ("value" if args.by else None)
    runs = []  # (result name, family, subset)
    owners: dict[str, tuple[str, str, str]] = {}  # result name: the subset it names
    for model, columns in models.items():
        for value in by_value:
            if (model, value) not in rows_of:  # a system without rows of this value
                continue
            rows = rows_of[model, value]
            for presence in presences:
                for family in families:
                    if _takes_presence(family) or presence == presences[0]:
                        subset = _Subset(model, value, presence, columns, rows)
                        name = subset.name(_takes_presence(family) and len(presences) > 1)
                        named = owners.setdefault(name, (model, value, presence))
                        if named != (model, value, presence):
                            raise UsageError(
                                f"two result rows would both be named {name!r} (model, --by value, presence: "
                                f"{named} and {(model, value, presence)}); rename a model or a value without '/'"
                            )
                        runs.append((name, family, subset))
    evaluation = Evaluation({name: {} for name, _, _ in runs})
    views = [args.by if system == "model" and args.by else ""] + (["presence view"] if len(presences) > 1 else [])
    evaluation.within = "/".join(view for view in views if view)
    inputs = evaluation.inputs
    model = getattr(args, "model", None) or DEFAULT_MODEL
    if _semantic_installed() and {"semantic_keyword_prf", "keyword_diversity"} & set(families):
        # sentence-transformers and its model take tens of seconds to load, silently
        print(f"loading sentence-transformers and the model {model.split('/')[-1]} (about 30 s the first time)...",
              file=sys.stderr, flush=True)  # fmt: skip
    progress = tqdm(runs, desc="evaluating", unit="metric", disable=len(runs) < 2 or n < 1000, leave=False)
    for name, family, subset in progress:
        progress.set_postfix_str(f"{family} {name}")
        examples = _Examples(table, subset.rows, gold)
        examples.system = _system_columns(subset, args, len(presences) > 1 and _takes_presence(family))
        with _spoken(speak, args, gold, subset, examples):
            given = _inputs(family, examples, args, subset)
            if getattr(args, "per_example", None) is not None and family != "aspect_sentiment_score":
                options = {**given["options"], "return_per_example": True}
                result = _compute(family, {**given, "options": options})  # per-example values: one process
                evaluation.per_example[name, family] = result["per_example"]
            else:
                result = _compute(family, given, getattr(args, "workers", None))
            counted = _counted(given, result.pop("per_example", None))
            evaluation.results[name][family] = result
        if counted is not None:
            evaluation.left_out.setdefault(name, {})[family] = len(given["predictions"]) - counted
        evaluation.groups[name] = subset.group(system, _takes_presence(family) and len(presences) > 1)
        inputs[name, family] = (given, examples)
    if compare is not None:
        dimension, base = compare
        pairs: dict[tuple[str, str], Pairs] = {}
        holm_groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # the systems compared per metric
        for name, family, subset in runs:
            if getattr(subset, dimension) == base:
                continue
            base_subset = _Subset(**{**vars(subset), dimension: base})
            base_name = base_subset.name(_takes_presence(family) and len(presences) > 1)
            (a, examples_a), (b, examples_b) = inputs[base_name, family], inputs[name, family]
            with _spoken(speak, args, gold, subset, examples_b):
                _check_pairs(a, b, examples_a, examples_b, (base, getattr(subset, dimension)), args)
                compared, pairs[name, family] = _compare(family, a, b, args)
            evaluation.comparisons.setdefault(name, {})[family] = compared
            others = tuple(getattr(subset, other) for other in ("model", "value", "presence") if other != dimension)
            holm_groups.setdefault((family, others), []).append(name)
        n_resamples = getattr(args, "n_resamples", None) or DEFAULT_RESAMPLES
        for (family, _), names in holm_groups.items():
            found = significance(
                {name: evaluation.comparisons[name][family] for name in names},
                method=args.compare_method,
                n_resamples=n_resamples,
                pairs={name: pairs[name, family] for name in names},
            )
            for name, by_key in found.items():
                evaluation.differences.setdefault(name, {})[family] = by_key
    return evaluation


def run_details(evaluation: Evaluation) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, dict[str, Any]]]]:
    """Per subset and family: the number of examples that count (groups, once pooled; a --presence view
    leaves some out: `Evaluation.left_out`) and the options used."""
    counts: dict[str, dict[str, int]] = {}
    options: dict[str, dict[str, dict[str, Any]]] = {}
    for (name, family), (given, _) in evaluation.inputs.items():
        left_out = evaluation.left_out.get(name, {}).get(family, 0)
        counts.setdefault(name, {})[family] = len(given["predictions"]) - left_out
        options.setdefault(name, {})[family] = options_used(family, given["options"])
    return counts, options
