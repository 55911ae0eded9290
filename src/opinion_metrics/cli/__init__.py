"""The command line, `opinion-metrics`: a file of examples in, one table per family and one row
per system out (docs/cli.md).

    parser      the arguments, generated from the family registry
    inputs      which columns hold what, and each family's library inputs
    systems     the systems of a file (columns side by side, a system column, --by values) and
                their pairing for --baseline
    evaluation  the run: every (system, value, presence view) and family, and the comparisons
    outputs     --output, --per-example and plots, written atomically
    command     the entry point, `main`: read, evaluate, print, report errors in the user's words
"""

from .command import main
from .parser import build_parser

__all__ = ["build_parser", "main"]
