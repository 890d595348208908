"""``python -m wgslgen``."""

import sys

from wgslgen.cli import main

sys.exit(main())
