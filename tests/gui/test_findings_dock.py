"""The findings dock at the window's default size, and where environment findings go (the Environment step, never
the plan)."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from wizard.adapters.verl_env.doctor import DoctorReport, doctor_findings  # noqa: E402
from wizard.core.findings import Finding, Severity, Stage  # noqa: E402
from wizard.core.plan.emit import emit_overrides  # noqa: E402
from wizard.gui import steps  # noqa: E402
from wizard.gui.widgets.findings_view import MESSAGE_COL, ROWS  # noqa: E402

LONG = ("the words of a finding name the numbers and the keys involved, and they run on for a while so that "
        "a list that gives its width to a fix column cuts them")


def many_findings() -> list[Finding]:
    """Ten findings where the two errors come last by stage: a list grouped by stage showed them below the fold."""
    notes = [Finding(rule=f"advice.example_{i}", severity=Severity.INFO, stage=Stage.ADVICE,
                     keys=["trainer.total_epochs"], message=f"note {i}: {LONG}", fix="leave it") for i in range(5)]
    warnings = [Finding(rule=f"startup.example_{i}", severity=Severity.WARNING, stage=Stage.COMPOSE,
                        keys=["data.train_files"], message=f"warning {i}: {LONG}",
                        fix="a fix with a very long text " * 4) for i in range(3)]
    errors = [Finding(rule=f"runtime.example_{i}", severity=Severity.ERROR, stage=Stage.RUNTIME,
                      keys=["actor_rollout_ref.actor.ppo_mini_batch_size"], message=f"error {i}: {LONG}",
                      fix="set actor_rollout_ref.actor.ppo_mini_batch_size=8") for i in range(2)]
    return notes + warnings + errors


def settle(window, qtbot) -> None:
    qtbot.waitExposed(window)
    QApplication.processEvents()


def test_the_dock_shows_eight_findings_errors_first_at_the_default_size(window, qtbot):
    assert (window.width(), window.height()) == (1180, 820)
    window.doc.set_plan(window.doc.plan, source_findings=many_findings())
    settle(window, qtbot)
    view = window.findings
    items = view.items()
    assert len(items) >= 10 and "2 errors" in view.summary.text()
    row = view.tree.visualItemRect(items[0]).height()
    assert row > 0 and view.tree.viewport().height() >= ROWS * row  # at least eight whole lines
    first = items[0].data(0, Qt.UserRole)
    assert first.severity is Severity.ERROR and items[1].data(0, Qt.UserRole).severity is Severity.ERROR
    assert view.tree.currentItem() is items[0]  # the first error is selected...
    assert view.tree.viewport().rect().contains(view.tree.visualItemRect(items[0]))  # ...and in sight
    assert "error 0" in view.details.text() and "Fix:" in view.details.text()  # and explained in full beside it
    # the message gets the list's width (no fix column takes it)
    assert view.tree.header().sectionSize(MESSAGE_COL) >= 0.6 * view.tree.viewport().width()


def test_the_dock_can_be_made_taller(window, qtbot):
    settle(window, qtbot)
    before = window.findings_dock.height()
    window.resizeDocks([window.findings_dock], [before + 120], Qt.Vertical)
    QApplication.processEvents()
    assert window.findings_dock.height() >= before + 100


def probe_report(python: str = "/usr/bin/python3") -> DoctorReport:
    """What the doctor says of an environment without vLLM and flash-attn (the planning machine's, not the plan's)."""
    facts = {"python": {"version": "3.12.3"}, "packages": {"verl": "0.9.1", "torch": "2.13.0", "ray": "2.49.0"}}
    return DoctorReport(python=python, facts=facts, findings=doctor_findings(facts, python))


def marks(window) -> dict[int, str]:
    return {i: window.steps.item(i).text() for i in range(window.steps.count())}


def test_an_environment_finding_is_the_environment_steps_and_never_a_plan_fix(window, qtbot):
    settle(window, qtbot)
    before_marks, before_plan = marks(window), window.doc.plan
    page = window.page("environment")
    report = probe_report()
    assert {f.rule for f in report.findings} >= {"env.flash_attn", "env.rollout.missing"}
    page.show_report(report)  # as the probe answers
    # shown on the Environment step, with the fix for the machine
    assert "flash-attn is not installed" in page.result.text() and "no vLLM/SGLang" in page.result.text()
    # only the Environment step is marked; Rollout (whose key the vLLM finding names) is not
    env = steps.index("environment")
    after = marks(window)
    assert "✖" in after[env]
    assert {i: t for i, t in after.items() if i != env} == {i: t for i, t in before_marks.items() if i != env}
    # in the dock: no plan fix offered, and "show" leads to the Environment step
    view = window.findings
    item = next(i for i in view.items() if i.data(0, Qt.UserRole).rule == "env.flash_attn")
    view.tree.setCurrentItem(item)
    assert not view.fix_button.isEnabled() and "environment" in view.details.text().lower()
    if view.select_first_fixable():
        assert not view._selected().rule.startswith("env.")
    view.tree.setCurrentItem(item)
    qtbot.mouseClick(view.go_button, Qt.LeftButton)
    assert window.current_page() is page
    # and nothing turns it into a training setting
    assert window.doc.apply_fix(item.data(0, Qt.UserRole)) is False
    assert window.doc.plan == before_plan
    assert not any("attn_implementation" in o for o in emit_overrides(window.doc.plan).overrides)
    assert all(not f.fix_overrides for f in report.findings)  # the doctor offers none in the first place


def test_the_summary_counts_every_line_once_by_its_severity(window, qtbot):
    import re

    settle(window, qtbot)
    view = window.findings
    for findings in ([], many_findings(), many_findings()[:5]):  # none; errors, warnings and notes; notes only
        window.doc.set_plan(window.doc.plan, source_findings=findings)
        lines = [i.data(0, Qt.UserRole).severity for i in view.items()]
        plain = re.sub(r"<[^>]+>", "", view.summary.text())
        said = {word: int(n) for n, word in re.findall(r"(\d+) (error|warning|note)s?\b", plain)}
        shown = {"error": lines.count(Severity.ERROR), "warning": lines.count(Severity.WARNING),
                 "note": lines.count(Severity.INFO)}
        assert said == {k: v for k, v in shown.items() if v}, plain  # every line counted, by its own word
        assert ("to fix before running" in plain) == bool(shown["error"])
        assert plain.startswith("No errors; ") != bool(shown["error"]) and "things" not in plain
