"""The Run page's log view under a flood: 200k lines appended the way a run delivers them, then more past the cap.

Figures printed (asserts nothing):
- entry cost: ``log_entry`` per line (runs on the worker thread, not the GUI thread);
- append: GUI-thread time per tick (``flush`` + one paint) for a batch of lines, and the share of each second
  the GUI thread spends on the log at that rate (the rest is free for typing);
- memory: RSS growth for 200k kept lines, and whether it stays flat once lines start leaving the view;
- filter switch, search count and find-next over the full 200k lines.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_log_view.py [lines] [lines_per_tick]
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402

from wizard.gui.run.log_view import TICK_MS, LogView, log_entry  # noqa: E402

P = "\x1b[36m(TaskRunnerV1 pid=466)\x1b[0m "
W = "\x1b[36m(WorkerDict pid=1201, ip=10.0.0.2)\x1b[0m "


def synthetic(n: int, seed: int = 0) -> list[str]:
    """A verl-like mix: Ray-prefixed chatter, logger lines, warnings, a traceback now and then, metric lines."""
    rnd = random.Random(seed)
    out = []
    step = 0
    while len(out) < n:
        r = rnd.random()
        if r < 0.55:
            out.append(f"{P}{' ' * 20}'actor_rollout_ref.key_{rnd.randrange(900)}': {rnd.random()},")
        elif r < 0.80:
            out.append(f"{W}INFO:2026-12-02 14:07:12,343:worker chatter {rnd.randrange(10**6)} about step {step}")
        elif r < 0.90:
            out.append(f"{P}WARNING:2026-12-02 14:07:12,343:slow batch {rnd.random():.3f}s")
        elif r < 0.93:
            out.append("Traceback (most recent call last):")
            out.append('  File "/x/verl/trainer/main_ppo.py", line 42, in run')
            out.append("ValueError: something went wrong in a worker")
        elif r < 0.98:
            out.append(f"Training Progress:  {step % 100}%|###       | {step}/1000 [00:10<01:40,  0.10s/it]")
        else:
            step += 1
            vals = " - ".join(f"m/{k}:np.float64({rnd.random()})" for k in range(60))
            out.append(f"{P}step:{step} - {vals}")
    return out[:n]


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def feed(app, view: LogView, raw: list[str], per_tick: int) -> list[float]:
    """Per tick: make a batch's entries (the worker's part, not timed), queue them, then time the tick's GUI
    work (flush + paint). The entries are made here so the memory figure counts the kept strings."""
    costs = []
    for i in range(0, len(raw), per_tick):
        view.append([log_entry(line) for line in raw[i:i + per_tick]])
        t = time.perf_counter()
        view.flush()
        app.processEvents()
        costs.append(time.perf_counter() - t)
    return costs


def describe(name: str, costs: list[float], per_tick: int) -> None:
    ms = [c * 1000 for c in costs]
    ticks_per_s = 1000 / TICK_MS
    busy = statistics.mean(ms) * ticks_per_s / 10  # percent of each second
    print(f"{name}: {len(costs)} ticks of {per_tick:,} lines: mean {statistics.mean(ms):.1f} ms, "
          f"p95 {sorted(ms)[int(0.95 * len(ms)) - 1]:.1f} ms, max {max(ms):.1f} ms per tick; at {per_tick * ticks_per_s:,.0f} "
          f"lines/s the GUI thread spends {busy:.0f}% of each second on the log")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    per_tick = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000
    app = QApplication.instance() or QApplication([])
    from wizard.gui.gc_guard import collect_on_the_gui_thread

    collect_on_the_gui_thread(app)  # as the app: no Python GC of Qt objects off the GUI thread
    raw = synthetic(n + n // 2)
    t = time.perf_counter()
    for line in raw:
        log_entry(line)
    dt = time.perf_counter() - t
    print(f"log_entry (worker thread): {len(raw) / dt:,.0f} lines/s ({dt / len(raw) * 1e6:.1f} us per line)")

    view = LogView(cap=n)
    view.resize(1100, 600)
    view.show()
    app.processEvents()
    before = rss_mib()
    t = time.perf_counter()
    costs = feed(app, view, raw[:n], per_tick)
    total = time.perf_counter() - t
    after = rss_mib()
    print(f"append {n:,} lines: {total:.2f} s in all, entries made outside the timed part "
          f"({n / sum(costs):,.0f} lines/s through the GUI thread)")
    describe("  filling", costs, per_tick)
    print(f"  memory: RSS {before:.0f} -> {after:.0f} MiB (+{after - before:.0f} MiB for {n:,} lines, "
          f"{(after - before) * 1024 * 1024 / n:.0f} bytes per line)")
    costs = feed(app, view, raw[n:], per_tick)
    over = rss_mib()
    describe(f"  past the cap ({len(raw) - n:,} more)", costs, per_tick)
    print(f"  memory past the cap: RSS {over:.0f} MiB ({over - after:+.0f} MiB); lines kept {view.line_count:,}, "
          f"dropped {view.dropped:,}")

    for label in ("Errors only", "Warnings and errors", "All lines"):
        t = time.perf_counter()
        view.set_filter(label)
        app.processEvents()
        print(f"filter '{label}': {(time.perf_counter() - t) * 1000:.0f} ms "
              f"({len(view.model.shown):,} lines shown)")
    t = time.perf_counter()
    view.search.setText("worker chatter 4242")
    print(f"search count over {view.line_count:,} lines: {(time.perf_counter() - t) * 1000:.0f} ms "
          f"({view.match_label.text()})")
    t = time.perf_counter()
    view.find_next()
    app.processEvents()
    print(f"find next: {(time.perf_counter() - t) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
