"""Steps that host the canvases: the dataflow editor (and, later, the placement board)."""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout

from wizard.gui.dataflow import DataflowEditor
from wizard.gui.document import PlanDocument
from wizard.gui.page import Page


class DataflowPage(Page):
    step, title = "Dataflow", "What feeds what"
    subtitle = ("The stages of one training step and the data between them. Link a critic's values into the "
                "advantage for PPO/GAE; cut the KL link to drop the reference model. Every edit changes the verl "
                "keys behind it (and Ctrl+Z undoes it).")

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.editor = DataflowEditor(doc)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.editor)

    def keys(self) -> set[str]:
        return set()  # the Algorithm and Model steps hold the fields; the graph shows them


class RunPage(Page):
    step, title = "Run", "Run a smoke test"
    subtitle = ("Start the plan on this machine for a few steps, follow its log, metrics and GPUs, and stop it "
                "cleanly. When it fails, the cause and the fix are shown above the log.")

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        from wizard.gui.run_page import RunPanel

        self.panel = RunPanel(doc)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.panel)


class PlacementPage(Page):
    step, title = "Placement", "What runs where"
    subtitle = ("Your GPUs with the memory each phase needs (generation, log-probs, update), the pools verl 0.9.1 "
                "builds and the roles on them. Drag a role to another pool; moves verl cannot run are refused "
                "with the reason.")

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        from wizard.gui.placement import PlacementBoard

        self.board = PlacementBoard(doc)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.board)

    def keys(self) -> set[str]:
        return set()
