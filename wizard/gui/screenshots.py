"""``verl-wizard --screenshots DIR``: every step rendered to PNG, for the docs and for review.

``--size WxH`` (default: the window's own 1180x820, what a user first sees), ``--dark``, ``--preset NAME``,
``--gpus SPEC`` (the plan's GPUs), ``--cluster SPEC`` (machines shown on the Hardware step and used for the
plan, as if a cluster spec had been opened) and ``--doctor PYTHON`` (that environment probed, as the Environment
step's button does). ``QT_SCALE_FACTOR=2`` renders at 200 %. With ``--run-folder RUN_DIR``, the Run step's tabs
with that run opened instead (log, metrics, samples, time)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from wizard.gui.app import WizardWindow
from wizard.gui.gc_guard import collect_on_the_gui_thread
from wizard.gui.theme import apply_theme
from wizard.usecases.hardware import read_gpu_spec


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


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, like the CLI's, in the flag's own words
        flag, _, said = message.removeprefix("argument ").partition(": ")
        if said == "expected one argument":
            message = f"{flag} needs a {'folder' if flag in ('--screenshots', '--run-folder') else 'value'}"
        elif said and flag.startswith("--"):
            message = said if said.startswith(flag) else f"{flag}: {said}"
        raise ValueError(message)


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size needs WIDTHxHEIGHT, e.g. 1180x820, not {text!r}") from None
    if not (320 <= width <= 8000 and 240 <= height <= 8000):
        raise argparse.ArgumentTypeError(f"--size {text}: between 320x240 and 8000x8000")
    return width, height


def _gpus(text: str):
    try:
        return read_gpu_spec(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--gpus {text}: {exc}") from None


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The ``--screenshots`` command line; ValueError with a one-line reason."""
    p = _Parser(prog="verl-wizard --screenshots", add_help=False)
    p.add_argument("--screenshots", metavar="DIR", required=True)
    p.add_argument("--dark", action="store_true")
    p.add_argument("--size", type=_size, default=DEFAULT_SIZE)
    p.add_argument("--preset", metavar="NAME")
    p.add_argument("--gpus", type=_gpus, metavar="SPEC")
    p.add_argument("--cluster", metavar="SPEC")
    p.add_argument("--doctor", metavar="PYTHON")
    p.add_argument("--run-folder", metavar="RUN_DIR")
    return p.parse_args(argv)


def preset_and_gpus(window: WizardWindow, args: argparse.Namespace) -> None:
    """``--preset NAME``, ``--gpus SPEC``, ``--cluster SPEC`` and ``--doctor PYTHON`` for screenshots of a given plan."""
    if args.preset:
        from wizard.adapters.files.resources import preset_names

        if args.preset not in preset_names():
            raise ValueError(f"no preset {args.preset!r}; presets: {', '.join(preset_names())}")
        for i in range(window.start_page.presets.count()):
            if window.start_page.presets.item(i).data(Qt.UserRole) == args.preset:
                window.start_page.presets.setCurrentRow(i)
    if args.gpus:
        window.doc.set_gpus(args.gpus)
        window.start_page.gpus.setText(str(args.gpus))
    if args.cluster:
        from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
        from wizard.core.hardware import ClusterSpecError, Discovery, parse_cluster_spec

        try:
            machines = parse_cluster_spec(args.cluster, load_gpu_catalogue())
        except ClusterSpecError as exc:
            raise ValueError(f"cannot read cluster spec {args.cluster!r}: {exc}") from None
        hardware = window.page("hardware")
        hardware.show_discovery(Discovery(cluster=machines))
        hardware.use_discovery()
    if args.doctor:
        from wizard.adapters.verl_env.doctor import run_doctor

        window.page("environment").python.setText(args.doctor)
        window.page("environment").show_report(run_doctor(args.doctor, timeout=60, check_ray=False))


def screenshots_main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
    except ValueError as exc:
        print(f"verl-wizard: error: {exc}", file=sys.stderr)
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance() or QApplication(["verl-wizard"])
    collect_on_the_gui_thread(app)
    if args.dark:
        apply_theme(app, "dark")
    window = WizardWindow(restore=False)
    window.ask_save = lambda: "discard"
    try:
        preset_and_gpus(window, args)
        paths = (save_run_screenshots(window.doc, args.screenshots, args.run_folder) if args.run_folder
                 else save_screenshots(window, args.screenshots, args.size))
    except ValueError as exc:
        print(f"verl-wizard: error: {exc}", file=sys.stderr)
        return 2
    finally:
        window.close()
    for path in paths:
        print(f"wrote {path}")
    return 0
