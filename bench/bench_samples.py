"""Opening a run folder of 10,000 generated responses in the Run step's Samples tab: does the window stay
interactive?

A run folder is written with verl's dump format (tests/helpers/rollout_dumps.py ``big_dumps``: 10 steps of 1,000
responses, GSM8K-like English with some loops, empty responses and switches to Chinese). Figures printed (asserts
nothing):
- load: reading and judging the folder on the worker thread (``digest_folder``), and the CLI's own path;
- GUI thread: the longest time the event loop was blocked while the folder loaded (a 5 ms timer measures the gaps),
  and the cost of showing the result (rows, verdicts, one model reset);
- filter: a step, a flag, a word, a phrase, a search that matches nothing; and clearing it;
- sort: every sortable column, both ways.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_samples.py [responses]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QElapsedTimer, Qt, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.helpers.rollout_dumps import big_dumps  # noqa: E402
from wizard.gui.run.insight import RunInsight, digest_folder  # noqa: E402
from wizard.gui.run.samples_model import COLUMNS  # noqa: E402


def ms(seconds: float) -> str:
    return f"{1000 * seconds:7.1f} ms"


def timed(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def make_folder(n: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="bench-samples-"))
    t = time.perf_counter()
    big_dumps(folder / "rollout", samples=n)
    size = sum(p.stat().st_size for p in (folder / "rollout").iterdir())
    print(f"wrote {n:,} responses in {len(list((folder / 'rollout').iterdir()))} dump files "
          f"({size / 2**20:.1f} MiB) in {time.perf_counter() - t:.1f} s: {folder}")
    return folder


def load_figures(folder: Path) -> None:
    t = time.perf_counter()
    d = digest_folder(str(folder), True)
    print(f"load (worker thread): read and judge           {ms(time.perf_counter() - t)}"
          f"  ({sum(len(s.samples) for s in d.training):,} responses, {len(d.training)} steps)")
    from wizard.adapters.files.run_folder import read_run_folder

    t = time.perf_counter()
    read_run_folder(folder)
    print(f"load: of which reading and parsing the dumps    {ms(time.perf_counter() - t)}")


def gui_figures(app: QApplication, folder: Path) -> RunInsight:
    from PySide6.QtWidgets import QWidget

    host = QWidget()
    insight = RunInsight(host)
    view = insight.samples
    view.resize(1200, 700)
    view.show()
    gaps, clock = [], QElapsedTimer()
    clock.start()
    last = [clock.elapsed()]

    def tick() -> None:
        now = clock.elapsed()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    timer.start()
    shown = []
    insight.digested.connect(lambda d: shown.append(time.perf_counter()))
    t = time.perf_counter()
    insight.open_folder(str(folder))
    while not shown:
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    reading = gaps[:-1] or [0]  # the last gap is the GUI thread showing the result (timed on its own below)
    print(f"GUI thread while the worker reads: longest gap {max(reading):7.1f} ms, median "
          f"{statistics.median(reading):.1f} ms (a 5 ms timer, {len(gaps)} ticks over {ms(shown[0] - t).strip()})")
    d = digest_folder(str(folder), True)
    t = time.perf_counter()
    view.set_steps("training", d.training)
    app.processEvents()
    print(f"GUI thread: show {len(view.model.rows):,} rows and verdicts          {ms(time.perf_counter() - t)}")
    host._keep = insight
    return insight


def filter_figures(app: QApplication, insight: RunInsight) -> None:
    view = insight.samples
    cases = [
        ("step 5", lambda: view.step.setCurrentIndex(view.step.findData(5))),
        ("every step", lambda: view.step.setCurrentIndex(0)),
        ("flag 'loop'", lambda: view.flag.setCurrentIndex(view.flag.findData("loop"))),
        ("any flag", lambda: view.flag.setCurrentIndex(view.flag.findData("any flag"))),
        ("every response", lambda: view.flag.setCurrentIndex(0)),
        ("search a word", lambda: view.set_search("friend")),
        ("search a phrase", lambda: view.set_search('"half of"')),
        ("search, no match", lambda: view.set_search("zzzqqq")),
        ("search cleared", lambda: view.set_search("")),
    ]
    for label, action in cases:
        t = time.perf_counter()
        action()
        app.processEvents()
        print(f"filter: {label:<20}                  {ms(time.perf_counter() - t)}  -> {view.count.text()}")
    for col in (0, 3, 4, 6, 2):
        for order in (Qt.AscendingOrder, Qt.DescendingOrder):
            cost = timed(lambda: (view.table.sortByColumn(col, order), app.processEvents()), repeat=3)
            way = "up" if order == Qt.AscendingOrder else "down"
            print(f"sort: {COLUMNS[col]:<13} {way:<4}                      {ms(cost)}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    app = QApplication.instance() or QApplication([])
    from wizard.gui.gc_guard import collect_on_the_gui_thread

    collect_on_the_gui_thread(app)  # as the app: no Python GC of Qt objects off the GUI thread
    folder = make_folder(n)
    load_figures(folder)
    insight = gui_figures(app, folder)
    filter_figures(app, insight)


if __name__ == "__main__":
    main()
