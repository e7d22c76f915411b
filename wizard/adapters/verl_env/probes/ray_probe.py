"""Ask a running Ray cluster what it has, with Ray's own API, in the target Python.

Usage: python ray_probe.py ADDRESS   ->  one JSON line {"ray_version", "nodes": ray.nodes(), "resources"}
or {"fatal": "..."}. Standalone (verl-wizard need not be installed here); the caller bounds it with a timeout.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    out = sys.stdout
    address = sys.argv[1]
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ.pop("RAY_ADDRESS", None)
    try:
        import ray
    except ImportError as exc:
        out.write(json.dumps({"fatal": f"ray is not installed in {sys.executable} ({exc})"}) + "\n")
        return 3
    sys.stdout = sys.stderr  # Ray's own chatter must not mix with the answer
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False, configure_logging=False)
        doc = {"ray_version": ray.__version__, "nodes": ray.nodes(), "resources": ray.cluster_resources()}
    except Exception as exc:  # noqa: BLE001 - every failure is an answer for the user
        text = " ".join(str(exc).split())[:400] or type(exc).__name__
        out.write(json.dumps({"fatal": f"{type(exc).__name__}: {text}", "ray_version": ray.__version__}) + "\n")
        return 4
    finally:
        try:
            ray.shutdown()
        except Exception:  # noqa: BLE001
            pass
    out.write(json.dumps(doc, default=str) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
