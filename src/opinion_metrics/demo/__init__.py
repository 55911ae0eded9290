"""The Gradio demo Spaces: one app per metric family and one that shows the keyword
families side by side and compares systems with a baseline. `spaces/<name>/app.py` only calls
`build_app(name)` (or `build_combined_app()`).

- `parsing`: the text boxes and uploaded files (bounded size), into metric inputs;
- `families`: each family's controls (built from `opinion_metrics.families`), prefilled
  example, output meanings and library call;
- `plots`: the matplotlib figures;
- `handlers`: what each event computes (tables, plots, errors in the Space's words);
- `ui`: the Gradio layout and events.

Everything but `ui` is tested without a browser; gradio and matplotlib are imported only
when an app or a plot is built.
"""

from .combined import build_combined_app
from .comparing import compare_families, compare_systems_tab
from .controls import COMBINED, FAMILIES, Family, Option, evaluate_family
from .controls import keyword_options as _keyword_options
from .handlers import run
from .parsing import collect_inputs, parse_keyword_lines, parse_rating_lines, read_upload
from .plots import plot_ndcg_by_rank
from .ui import build_app

__all__ = [
    "COMBINED",
    "FAMILIES",
    "Family",
    "Option",
    "_keyword_options",
    "build_app",
    "build_combined_app",
    "collect_inputs",
    "compare_families",
    "compare_systems_tab",
    "evaluate_family",
    "parse_keyword_lines",
    "parse_rating_lines",
    "plot_ndcg_by_rank",
    "read_upload",
    "run",
]
