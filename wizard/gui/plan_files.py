"""The main window's plan files: open (a plan, a verl script or YAML), recent files, save, and the
crashed session offered back. A mixin of :class:`wizard.gui.app.WizardWindow`, which provides
``doc``, ``start_page``, ``status``, ``recent_menu``, ``go_to`` and ``finish_loading``."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from wizard.adapters.files.session_store import add_recent, recent_files, save_plan_file


class PlanFiles:
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a plan, a verl launch script or a YAML config",
                                              str(Path.home()), "Plans and verl configs (*.json *.sh *.yaml *.yml)")
        if path:
            self.open_file(path)

    def open_file(self, path: str) -> bool:
        if not self.finish_loading():
            return False
        self.go_to(self.start_page)
        return self.start_page.import_file(path)

    def _opened(self, path: str) -> None:
        add_recent(path)
        self._fill_recent()
        self._update_title()

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        items = recent_files()
        for path in items:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self.open_file(p))
        self.recent_menu.setEnabled(bool(items))

    def save(self) -> bool:
        if not self.finish_loading():
            return False
        if not self.doc.path:
            return self.save_as()
        return self.save_to(self.doc.path)

    def save_as(self) -> bool:
        if not self.finish_loading():
            return False
        start = self.doc.path or str(Path.cwd() / f"{self.doc.plan.name or 'plan'}.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save the plan", start, "verl-wizard plan (*.json)")
        return self.save_to(path) if path else False

    def save_to(self, path: str) -> bool:
        from wizard.adapters.files.disk import WriteError

        if not self.finish_loading():
            return False
        try:
            backup = save_plan_file(self.doc.plan.model_dump(mode="json"), path)
        except WriteError as exc:
            QMessageBox.warning(self, "Cannot save the plan", str(exc))
            return False
        self.doc.path = path
        self.doc.undo_stack.setClean()
        add_recent(path)
        self._fill_recent()
        self._update_title()
        self.status.showMessage(f"Saved {path}" + (f" (previous file kept as {backup})" if backup else ""), 8000)
        return True

    # -- session ------------------------------------------------------------------------------
    def _want_restore(self, previous: dict, restore: bool | None) -> bool:
        if restore is not None:
            return restore
        name = (previous.get("plan") or {}).get("name") or "an unnamed plan"
        answer = QMessageBox.question(
            self, "Recover your last session?",
            f"verl-wizard did not close cleanly last time. Recover the plan you were editing ({name})?",
        )
        return answer == QMessageBox.Yes

    def _restore_session(self, previous: dict, chosen: set[str] = frozenset()) -> None:
        """Take back the autosaved plan and GPUs, except what the user chose after answering (while the
        steps loaded): a preset picked then replaces the recovered plan, GPUs typed then shape it."""
        from wizard.usecases.plans import plan_with_gpus
        from wizard.core.hardware import parse_gpu_spec
        from wizard.core.plan import load_plan

        try:
            plan = load_plan(previous["plan"])
            gpus = parse_gpu_spec(previous["gpus"]) if previous.get("gpus") else None
        except (KeyError, TypeError, ValueError):
            return  # an autosave we cannot read is not worth an error dialog
        if "preset" in chosen and ("gpus" in chosen or gpus is None):
            return  # all of it chosen anew
        stack = self.doc.undo_stack
        stack.beginMacro("Recovered session")
        try:
            if "gpus" not in chosen and gpus is not None:
                self.doc.set_gpus(gpus)  # first: the recovered plan keeps its own hardware edits
            if "preset" not in chosen:
                if "gpus" in chosen and self.doc.gpus is not None:
                    plan = plan_with_gpus(plan, self.doc.gpus)  # the recovered plan, on the GPUs typed since
                self.doc.set_plan(plan, [], "Recovered session")
                tokens = previous.get("response_tokens")
                if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
                    self.doc.set_response_tokens(tokens, "Recovered session")
        finally:
            stack.endMacro()

    def ask_save(self) -> str:
        """'save', 'discard' or 'cancel' for unsaved edits at close (tests replace this)."""
        answer = QMessageBox.question(
            self, "Save the plan?", "The plan has changes that are not saved in a plan file. Save them?",
            QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel, QMessageBox.Save)
        return {QMessageBox.Save: "save", QMessageBox.Discard: "discard"}.get(answer, "cancel")
