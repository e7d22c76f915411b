"""``verl-wizard --screenshots DIR``: every step rendered to PNG, for the docs and for review."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from wizard.core.hardware.gpus import parse_gpu_spec
from wizard.gui.app import WizardWindow
from wizard.gui.theme import apply_theme


def save_screenshots(window: WizardWindow, folder: str) -> list[str]:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    window.resize(1440, 960)  # room for the canvases; the window opens at 1180x820 for people
    window.show()
    app = QApplication.instance()
    for i, page in enumerate(window.pages):
        window.go_to(i)
        app.processEvents()
        path = out / f"{i + 1:02d}-{page.step.lower().replace(' & ', '-').replace(' ', '-')}.png"
        window.grab().save(str(path))
        paths.append(str(path))
    return paths


def preset_and_gpus(window: WizardWindow, argv: list[str]) -> None:
    """``--preset NAME`` and ``--gpus SPEC`` for screenshots of a given plan."""
    def value(flag: str) -> str | None:
        if flag not in argv:
            return None
        i = argv.index(flag)
        if i + 1 >= len(argv):
            raise ValueError(f"{flag} needs a value")
        return argv[i + 1]

    preset, gpus = value("--preset"), value("--gpus")
    if preset:
        from wizard.adapters.resources import preset_names

        if preset not in preset_names():
            raise ValueError(f"no preset {preset!r}; presets: {', '.join(preset_names())}")
        for i in range(window.start_page.presets.count()):
            if window.start_page.presets.item(i).data(Qt.UserRole) == preset:
                window.start_page.presets.setCurrentRow(i)
    if gpus:
        window.doc.set_gpus(parse_gpu_spec(gpus))
        window.start_page.gpus.setText(gpus)


def screenshots_main(argv: list[str]) -> int:
    idx = argv.index("--screenshots")
    if idx + 1 >= len(argv):
        print("verl-wizard: error: --screenshots needs a folder", file=sys.stderr)
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance() or QApplication(["verl-wizard"])
    if "--dark" in argv:
        apply_theme(app, "dark")
    window = WizardWindow(restore=False)
    try:
        preset_and_gpus(window, argv)
    except ValueError as exc:
        print(f"verl-wizard: error: {exc}", file=sys.stderr)
        return 2
    for path in save_screenshots(window, argv[idx + 1]):
        print(f"wrote {path}")
    window.ask_save = lambda: "discard"
    window.close()
    return 0
