"""Frame time while dragging a role on the placement board over a 128 x 8 GPU cluster (goal: < 16 ms a frame).

Offscreen, through the real view: press on the rollout chip, a few hundred synthetic mouse moves across the
board and over the new-pool slots, each followed by the repaint it causes (``processEvents``), then release
outside any pool. Prints median / p95 / max per move, for the board as shown (identical nodes collapsed) and
with every node drawn (1024 tiles), and how long the throttled candidate estimate takes when it runs.

    .venv/bin/python bench/bench_placement_drag.py [--moves 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("XDG_STATE_HOME", tempfile.mkdtemp(prefix="bench-placement-"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def board_for(collapse: bool):
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware.cluster import parse_cluster_spec
    from wizard.gui import placement
    from wizard.gui.document import PlanDocument
    from wizard.gui.placement import PlacementBoard

    placement.scene.COLLAPSE_AT = 3 if collapse else 10**9
    doc = PlanDocument(autosave=False)
    doc.load_preset("grpo-2node")
    doc.set_cluster(parse_cluster_spec("128x8xH100-80GB", load_gpu_catalogue()))
    t = time.perf_counter()
    board = PlacementBoard(doc)
    board.resize(1500, 900)
    board.show()
    return board, time.perf_counter() - t


def drag(app, board, moves: int) -> tuple[list[float], list[float]]:
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest

    estimates: list[float] = []
    original = board._show_preview

    def timed_preview():
        t = time.perf_counter()
        original()
        estimates.append(time.perf_counter() - t)

    board._timer.timeout.disconnect()
    board._timer.timeout.connect(timed_preview)
    board.view.auto_fit = False  # at 1:1, as a user dragging would zoom in
    board.view.resetTransform()
    board.view.centerOn(board.scene.chips["rollout"].scenePos())
    app.processEvents()
    vp = board.view.viewport()
    start = board.chip_view_pos("rollout")
    ends = [QPoint(start.x() + 700, start.y() + 300), QPoint(start.x() + 300, start.y() + 200),
            QPoint(start.x() + 900, start.y() + 50)]
    QTest.mousePress(vp, Qt.LeftButton, Qt.NoModifier, start)
    assert board.scene.dragging, "the press did not pick up the chip"
    times, full = [], []
    for i in range(moves):
        end = ends[(i // 50) % len(ends)]
        k = (i % 50) / 49
        p = QPoint(int(start.x() + (end.x() - start.x()) * k), int(start.y() + (end.y() - start.y()) * k))
        t = time.perf_counter()
        QTest.mouseMove(vp, p)
        app.processEvents()  # Qt's own update path: the dirty parts of the viewport are painted
        times.append(time.perf_counter() - t)
        t = time.perf_counter()
        vp.repaint()  # the worst case: the whole viewport painted again
        full.append(time.perf_counter() - t)
        if i % 50 == 49:  # the mouse rests on the target: the throttled estimate runs (timed on its own)
            pause = time.perf_counter() + 0.1
            while time.perf_counter() < pause:
                app.processEvents()
    QTest.mouseRelease(vp, Qt.LeftButton, Qt.NoModifier, QPoint(vp.width() - 5, 5))
    app.processEvents()
    return times, full, estimates


def _stats(times: list[float]) -> str:
    ms = sorted(x * 1000 for x in times)
    p95 = ms[int(0.95 * (len(ms) - 1))]
    return f"median {statistics.median(ms):.2f} ms, p95 {p95:.2f} ms, max {ms[-1]:.2f} ms"


def report(name: str, build: float, times: list[float], full: list[float], estimates: list[float]) -> None:
    print(f"{name}: board built in {build * 1000:.0f} ms; {len(times)} moves")
    print(f"  frame (move + Qt's repaint of what changed): {_stats(times)} (goal < 16 ms)")
    print(f"  whole viewport repainted after each move (worst case): {_stats(full)}")
    if estimates:
        e = [x * 1000 for x in estimates]
        print(f"  candidate estimates (throttled, {len(e)} ran, once per target hovered): "
              f"median {statistics.median(e):.0f} ms, max {max(e):.0f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=300)
    args = parser.parse_args()
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    for collapse in (True, False):
        board, build = board_for(collapse)
        times, full, estimates = drag(app, board, args.moves)
        rows = len(board.scene.rows)
        report(f"128x8 H100, {'identical nodes collapsed' if collapse else 'every node drawn'} ({rows} row(s))",
               build, times, full, estimates)
        board.close()
        board.deleteLater()
        app.processEvents()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
