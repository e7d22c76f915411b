"""Coverage of verl's checks: of the checks verl 0.9.1 makes before the first step (resources/verl-checks/0.9.1.json,
generated from verl's source), how many that depend only on config values a rule mirrors, per file, and why the
rest are excluded (resources/verl-checks/mapping.yaml).

Prints figures; asserts nothing. Run: .venv/bin/python bench/bench_verl_checks.py [--list excluded|mirrored|all]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wizard.adapters.files.resources import load_verl_checks  # noqa: E402
from wizard.core.check.coverage import join, report  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", choices=("excluded", "mirrored", "all"), help="also list the checks, one a line")
    args = parser.parse_args(argv)
    inventory, mapping = load_verl_checks()
    cov = join(inventory, mapping)
    print(f"verl {inventory['verl_version']} (inventory by {inventory['generated_by']})")
    print("\n".join(report(cov)))
    for problem in cov.problems:
        print("MAPPING:", problem)
    if args.list:
        for e in cov.entries:
            if args.list == "all" or (args.list == "mirrored") == e.mirrored:
                what = ", ".join(e.rules) if e.rules else f"excluded ({e.excluded}): {e.why}"
                print(f"{e.check['file']}:{e.check['line']} {e.check['kind']} [{what}] {e.check['message'][:90]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
