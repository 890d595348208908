"""What an adapter reports (limits, features), read in a process of its own.

``python -m wgslgen.check.adapter_probe [SELECTOR]`` prints one JSON line
``{"limits": {...}, "features": [...]}`` or ``{"error": "..."}``: the process that checks
limits never loads wgpu-native itself (a device lost or a driver crash stays out of it).
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    """Print the chosen adapter's limits and features as JSON."""
    from wgslgen.errors import WgslgenError
    from wgslgen.run.device import choose_adapter

    try:
        adapter = choose_adapter(argv[0] if argv else None)
    except WgslgenError as e:
        print(json.dumps({"error": str(e)}))
        return 1
    limits = {str(k): int(v) for k, v in adapter.limits.items() if isinstance(v, int)}
    print(json.dumps({"limits": limits, "features": sorted(str(f) for f in adapter.features)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
