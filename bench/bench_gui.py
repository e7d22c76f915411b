"""GUI costs a user feels: cold start to the first interactive page, and an edit to updated findings.

    .venv/bin/python bench/bench_gui.py [--runs 5]

Cold start is measured in fresh processes (offscreen), from starting the process, the way ``verl-wizard``
opens its window (``WizardWindow(progressive=True)``):
- first interactive page: the window with the Start step shown and its events processed, against a bare
  PySide6 window on the same machine (goal: at most 2x);
- ready: the checker loaded on its worker thread, every step built and the preset's findings shown;
- the longest the GUI thread left events waiting while loading (a 5 ms timer's largest gap).
The edit cost is one typed value committed through the real field: the undoable edit, the whole check
(with the model's facts), the re-rendered run.sh/YAML and every page's redraw.
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
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
from wizard.gui.app import WizardWindow
w = WizardWindow(progressive=True); w.show(); app.processEvents()
shown = time.perf_counter()
gaps, last = [0.0], [shown]
def tick():
    now = time.perf_counter(); gaps.append(now - last[0]); last[0] = now
timer = QTimer(); timer.timeout.connect(tick); timer.start(5)
while not w.is_loaded:
    app.processEvents(); time.sleep(0.001)
assert w.doc.findings is not None and w.findings.tree.topLevelItemCount() > 0
print(shown, time.perf_counter(), max(gaps))
"""


def cold(codes: list[str], runs: int) -> list[list[list[float]]]:
    """For each program, per run: milliseconds from spawning the process to each time it prints (then any
    other figure it prints, in seconds, as ms). The programs take turns, so drift hits them alike."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_STATE_HOME=tempfile.mkdtemp())
    # Compiled modules, as an installed copy has them (pip compiles at install; PySide6's are compiled):
    # one untimed run writes the .pyc files that PYTHONDONTWRITEBYTECODE would otherwise forbid.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for code in codes:
        subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=300)
    out: list[list[list[float]]] = [[] for _ in codes]
    for _ in range(runs):
        for code, results in zip(codes, out):
            t0 = time.perf_counter()  # CLOCK_MONOTONIC: the same clock in the child
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                  timeout=300)
            if proc.returncode != 0:
                raise SystemExit(proc.stderr[-2000:])
            printed = proc.stdout.split()
            results.append([(float(t) - t0) * 1000 for t in printed[:2]] + [float(x) * 1000 for x in printed[2:]])
    return out


def edits(n: int, shown: str | None = None) -> list[float]:
    """``n`` edits of data.train_batch_size typed in its field, each timed until every page has followed; with
    ``shown``, that step is on screen (the Placement step: its board redraws from the same assessment)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp()
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from wizard.gui.gc_guard import collect_on_the_gui_thread

    collect_on_the_gui_thread(app)  # as the app: no Python GC of Qt objects off the GUI thread
    from wizard.gui.app import WizardWindow

    w = WizardWindow(restore=False)
    w.show()
    app.processEvents()
    if shown:
        w.go_to(w.page(shown))
        app.processEvents()
    editor = w.page("data").forms[1].editors["data.train_batch_size"]
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
    bare_runs, runs = cold([BARE, WIZARD], args.runs)
    bare = [run[0] for run in bare_runs]
    first, ready, stall = ([run[i] for run in runs] for i in range(3))
    print(line("cold start, bare PySide6 window", bare))
    print(line("cold start, verl-wizard first interactive page", first))
    print(f"{'ratio (goal <= 2x)':44} {statistics.median(first) / statistics.median(bare):.2f}x")
    print(line("cold start, verl-wizard ready (findings shown)", ready))
    print(line("longest GUI stall while loading", stall))
    print(line("edit -> findings, run.sh and pages updated", edits(30)))
    print(line("the same, with the Placement step shown", edits(30, "placement")))


if __name__ == "__main__":
    main()
