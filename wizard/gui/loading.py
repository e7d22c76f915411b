"""The progressive start: what the window shows while the checker loads, and what is loaded meanwhile.

``verl-wizard`` opens with the Start step usable at once. Everything the first check needs (every step's
module, Hydra's override parser, verl's default config composed and cached) is imported and warmed on
a worker thread meanwhile (:func:`preload`, run by a ``wizard.gui.workers.Worker``); the window builds the
remaining steps when it is done. bench/bench_gui.py prints both times and the longest stall of the GUI
thread while loading.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout

from wizard.gui.steps import STEPS, Step
from wizard.gui.widgets.page import Page


class Placeholder(Page):
    """A step whose page is still loading: its name and title, no content yet."""

    def __init__(self, step: Step) -> None:
        super().__init__(None)
        self.step, self.title, self.subtitle = step.texts
        self.label = QLabel("Loading…")
        self.label.setWordWrap(True)
        QVBoxLayout(self).addWidget(self.label, 0, Qt.AlignCenter)

    def failed(self, reason: str) -> None:
        self.label.setText(f"This step could not load: {reason}")


def preload(preset: str) -> None:
    """Import and warm, off the GUI thread, what the first check of ``preset`` needs (all cached). What fails
    here fails again when the window builds the steps on the GUI thread, which says why."""
    for step in STEPS:
        step.load()
    import wizard.gui.widgets.findings_view  # noqa: F401
    from wizard.usecases.assessment import assess_plan
    from wizard.usecases.board import board_machine
    from wizard.usecases.plans import preset_plan

    plan = preset_plan(preset, None)
    assess_plan(plan, cluster=board_machine(plan), local_files=True, advise=False)  # as the document will judge it
