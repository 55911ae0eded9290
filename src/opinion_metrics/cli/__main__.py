"""`python -m opinion_metrics.cli`: the same as `opinion-metrics`."""

import sys

from .command import main

sys.exit(main())
