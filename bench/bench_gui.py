"""GUI costs a user feels: cold start to the first interactive page, and an edit to updated findings.

    .venv/bin/python bench/bench_gui.py [--runs 5]

Cold start is measured in fresh processes (offscreen): from interpreter start to the first page shown and
the event loop idle, against a bare PySide6 window on the same machine (goal: at most 2x). The edit cost is
one typed value committed through the real field: the undoable edit, the whole check (with the model's
facts), the re-rendered run.sh/YAML and every page's redraw.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

BARE = """
import time, sys
from PySide6.QtWidgets import QApplication, QWidget
app = QApplication([])
w = QWidget(); w.resize(1180, 820); w.show(); app.processEvents()
print(time.perf_counter())
"""

WIZARD = """
import time, sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from wizard.gui.app import WizardWindow
w = WizardWindow(restore=False); w.show(); app.processEvents()
print(time.perf_counter())
"""


def cold(code: str, runs: int) -> list[float]:
    out = []
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_STATE_HOME=tempfile.mkdtemp())
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-2000:])
        out.append((time.perf_counter() - t0) * 1000)
    return out


def edits(n: int) -> list[float]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp()
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from wizard.gui.app import WizardWindow

    w = WizardWindow(restore=False)
    w.show()
    app.processEvents()
    editor = w.data_page.forms[1].editors["data.train_batch_size"]
    times = []
    for i in range(n):
        editor.widget.setText(str(16 if i % 2 else 32))
        t0 = time.perf_counter()
        editor._commit()  # what leaving the field does
        app.processEvents()
        times.append((time.perf_counter() - t0) * 1000)
    w.ask_save = lambda: "discard"
    w.close()
    return times


def line(label: str, xs: list[float]) -> str:
    return f"{label:44} median {statistics.median(xs):8.1f} ms  min {min(xs):8.1f} ms  max {max(xs):8.1f} ms  (n={len(xs)})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    bare = cold(BARE, args.runs)
    wizard = cold(WIZARD, args.runs)
    print(line("cold start, bare PySide6 window", bare))
    print(line("cold start, verl-wizard first page", wizard))
    print(f"{'ratio (goal <= 2x)':44} {statistics.median(wizard) / statistics.median(bare):.2f}x")
    print(line("edit -> findings, run.sh and pages updated", edits(30)))


if __name__ == "__main__":
    main()
