"""``verl-wizard --screenshots DIR``: every step rendered to PNG, for the docs and for review.

``--size WxH`` (default: the window's own 1180x820, what a user first sees), ``--dark``, ``--preset NAME``,
``--gpus SPEC`` (the plan's GPUs), ``--cluster SPEC`` (machines shown on the Hardware step and used for the
plan, as if a cluster spec had been opened) and ``--doctor PYTHON`` (that environment probed, as the Environment
step's button does). ``QT_SCALE_FACTOR=2`` renders at 200 %. With ``--run-folder RUN_DIR``, the Run step's tabs
with that run opened instead (log, metrics, samples, time)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from wizard.core.hardware.gpus import parse_gpu_spec
from wizard.gui.app import WizardWindow
from wizard.gui.theme import apply_theme


DEFAULT_SIZE = (1180, 820)  # the window's size when it opens


def settle(app: QApplication, rounds: int = 6) -> None:
    """Let a page built on first show lay out, its canvas fit the final size and the scroll bars follow."""
    for _ in range(rounds):
        app.processEvents()
        time.sleep(0.01)


def save_screenshots(window: WizardWindow, folder: str, size: tuple[int, int] = DEFAULT_SIZE) -> list[str]:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    window.resize(*size)
    window.show()
    app = QApplication.instance()
    for i, page in enumerate(window.pages):
        window.go_to(i)
        settle(app)
        if getattr(page, "discovery", None) is not None:  # --cluster: the Hardware step's picture, not its buttons
            page.show_topology()
            settle(app)
        path = out / f"{i + 1:02d}-{page.step.lower().replace(' & ', '-').replace(' ', '-')}.png"
        window.grab().save(str(path))
        paths.append(str(path))
    return paths


def save_run_screenshots(doc, folder: str, run_dir: str, timeout_s: float = 120) -> list[str]:
    """The Run step's panel (1280 x 860, as the README's other run pictures) with ``run_dir`` opened:
    ``run-<tab>.png`` for its Log, Metrics, Samples and Time tabs."""
    from wizard.gui.run.panel import RunPanel

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance()
    panel = RunPanel(doc)
    panel.resize(1280, 860)
    panel.show()
    failed: list[str] = []
    panel.insight._reader.failed.connect(failed.append)
    panel.insight.open_folder(run_dir)
    deadline = time.monotonic() + timeout_s
    while panel.insight.reading and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    if failed or panel.insight.reading:
        panel.shutdown()
        raise ValueError(failed[0] if failed else f"{run_dir}: not read within {timeout_s:.0f} s")
    samples = panel.insight.samples
    rows = [samples.model.row_at(i) for i in range(len(samples.model.shown))]
    flagged = next((i for i, r in enumerate(rows) if "cut" in r.flags),  # the flag a newcomer meets first
                   next((i for i, r in enumerate(rows) if r.flags), 0))
    samples.select_row(flagged)
    paths = []
    for name, tab in (("log", panel.log), ("metrics", panel.plots), ("samples", samples),
                      ("time", panel.insight.timing)):
        panel.tabs.setCurrentWidget(tab)
        for _ in range(5):  # the plots draw on their timers
            app.processEvents()
            time.sleep(0.05)
        path = out / f"run-{name}.png"
        panel.grab().save(str(path))
        paths.append(str(path))
    panel.shutdown()
    panel.close()
    return paths


def preset_and_gpus(window: WizardWindow, argv: list[str]) -> None:
    """``--preset NAME`` and ``--gpus SPEC`` for screenshots of a given plan."""
    def value(flag: str) -> str | None:
        return _value(argv, flag)

    preset, gpus, cluster, python = value("--preset"), value("--gpus"), value("--cluster"), value("--doctor")
    if preset:
        from wizard.adapters.files.resources import preset_names

        if preset not in preset_names():
            raise ValueError(f"no preset {preset!r}; presets: {', '.join(preset_names())}")
        for i in range(window.start_page.presets.count()):
            if window.start_page.presets.item(i).data(Qt.UserRole) == preset:
                window.start_page.presets.setCurrentRow(i)
    if gpus:
        window.doc.set_gpus(parse_gpu_spec(gpus))
        window.start_page.gpus.setText(gpus)
    if cluster:
        from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
        from wizard.core.hardware.cluster import ClusterSpecError, parse_cluster_spec
        from wizard.core.hardware.topology import Discovery

        try:
            machines = parse_cluster_spec(cluster, load_gpu_catalogue())
        except ClusterSpecError as exc:
            raise ValueError(f"cannot read cluster spec {cluster!r}: {exc}") from None
        hardware = window.page("hardware")
        hardware.show_discovery(Discovery(cluster=machines))
        hardware.use_discovery()
    if python:
        from wizard.adapters.verl_env.doctor import run_doctor

        window.page("environment").python.setText(python)
        window.page("environment").show_report(run_doctor(python, timeout=60, check_ray=False))


def size_of(argv: list[str]) -> tuple[int, int]:
    if "--size" not in argv:
        return DEFAULT_SIZE
    i = argv.index("--size")
    text = argv[i + 1] if i + 1 < len(argv) else ""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size needs WIDTHxHEIGHT, e.g. 1180x820, not {text!r}") from None
    if not (320 <= width <= 8000 and 240 <= height <= 8000):
        raise ValueError(f"--size {text}: between 320x240 and 8000x8000")
    return width, height


def _value(argv: list[str], flag: str) -> str | None:
    if flag not in argv:
        return None
    i = argv.index(flag)
    if i + 1 >= len(argv):
        raise ValueError(f"{flag} needs a value")
    return argv[i + 1]


def screenshots_main(argv: list[str]) -> int:
    idx = argv.index("--screenshots")
    if idx + 1 >= len(argv):
        print("verl-wizard: error: --screenshots needs a folder", file=sys.stderr)
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance() or QApplication(["verl-wizard"])
    if "--dark" in argv:
        apply_theme(app, "dark")
    try:
        size = size_of(argv)
    except ValueError as exc:
        print(f"verl-wizard: error: {exc}", file=sys.stderr)
        return 2
    window = WizardWindow(restore=False)
    try:
        preset_and_gpus(window, argv)
    except ValueError as exc:
        print(f"verl-wizard: error: {exc}", file=sys.stderr)
        window.ask_save = lambda: "discard"
        window.close()
        return 2
    try:
        run_dir = _value(argv, "--run-folder")
        paths = (save_run_screenshots(window.doc, argv[idx + 1], run_dir) if run_dir
                 else save_screenshots(window, argv[idx + 1], size))
    except ValueError as exc:
        print(f"verl-wizard: error: {exc}", file=sys.stderr)
        window.ask_save = lambda: "discard"
        window.close()
        return 2
    for path in paths:
        print(f"wrote {path}")
    window.ask_save = lambda: "discard"
    window.close()
    return 0
