"""``python -m wgslgen``: the console script's entry point."""

import sys

from wgslgen.console import main

sys.exit(main())
