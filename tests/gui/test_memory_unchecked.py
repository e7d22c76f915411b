"""Where no memory verdict exists, the window says so once, with its one reason, in its own words: among the
findings (the note ``verl-wizard plan`` prints), on Review, in the Placement headline, and on Make it fit, which
then has nothing to advise. A GPU count the machines cannot hold is that reason before an unknown GPU memory."""

import json

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from wizard.cli import main  # noqa: E402
from wizard.gui.widgets.findings_view import details_html  # noqa: E402
from wizard.gui.wording import CLI_ADVICE  # noqa: E402

from tests.helpers.gui_steps import at  # noqa: E402

pytestmark = pytest.mark.gui
PER_NODE = "trainer.n_gpus_per_node"


def type_into(field, text: str) -> None:
    field.setFocus()
    field.selectAll()
    QTest.keyClicks(field, text)
    QTest.keyClick(field, Qt.Key_Return)


def shown_rows(window) -> list[str]:
    """The findings dock's lines as drawn: severity, when, message."""
    return [" | ".join(item.text(c) for c in range(3)) for item in window.findings.items()]


def test_two_gpus_typed_and_four_a_node_set_says_the_count_not_the_gpu_model(window):
    type_into(window.start_page.gpus, "2xRTX4090-24GB")
    hardware = at(window, "hardware")
    editor = next(form.editors[PER_NODE] for form in hardware.forms if PER_NODE in form.editors)
    type_into(editor.widget, "4")
    assert window.doc.plan.hardware.n_gpus_per_node == 4 and str(window.doc.gpus) == "2xRTX-4090-24GB"
    board = at(window, "placement").board
    headline = board.headline.text()
    assert headline.startswith("No memory estimate: the config asks for 4 GPUs and the cluster has 2")
    assert "memory is unknown" not in headline and "name the GPU model" not in headline
    assert "GPUs per node on the Hardware step" in headline and not CLI_ADVICE.search(headline)
    # the GPUs say why they hold no role, not only "unused"
    words = {tile.no_estimate for tile in board.scene.tiles.values()}
    assert words == {"not used: global_pool needs 4 GPUs on a node"}
    # the findings' note says the same reason, in the window's words
    note = next(row for row in shown_rows(window) if "No memory estimate" in row)
    assert note.startswith("ℹ Note") and "asks for 4 GPUs and the cluster has 2" in note
    assert not any(CLI_ADVICE.search(details_html(f)) for f in window.doc.findings)
    # nothing to advise on: the action says why instead of opening an empty dialog
    assert not board.advice_action.isEnabled()
    assert "asks for 4 GPUs and the cluster has 2" in board.advice_action.toolTip()


def test_the_default_plan_says_among_its_findings_and_on_review_that_memory_was_not_checked(window, capsys):
    rows = shown_rows(window)
    note = next(row for row in rows if "No memory estimate" in row)
    assert note.startswith("ℹ Note") and "the GPUs' memory is unknown" in note and not CLI_ADVICE.search(note)
    assert "GPUs field of the Start step" in note
    summary = window.findings.summary.text()
    assert "note" in summary and "things worth a look" not in summary
    review = at(window, "review")
    verdict = review.verdict.text()
    assert "verl 0.9.1 would accept this config" in verdict and "Memory not checked" in verdict
    assert "the GPUs' memory is unknown" in verdict and not CLI_ADVICE.search(verdict)
    # the same note `verl-wizard plan` prints for the same plan (one builder), before the window's words
    main(["plan", "--preset", "grpo-1gpu-smoke", "--no-data", "--format", "json"])
    cli = {f["rule"]: f["message"] for f in json.loads(capsys.readouterr().out)["findings"]}
    mine = {f.rule: f.message for f in window.doc.findings}
    assert cli["memory.unknown"] == mine["memory.unknown"]


def test_make_it_fit_without_an_estimate_is_off_says_why_and_never_advises_a_flag(window):
    board = at(window, "placement").board
    action = board.advice_action
    assert not action.isEnabled()
    assert action.toolTip().startswith("Nothing to advise on yet: no memory estimate")
    assert "name the GPU model" in action.toolTip() and not CLI_ADVICE.search(action.toolTip())
    board.open_advice()  # a way in that skips the action (a script, a shortcut): still the window's words
    intro = board.advice_dialog.intro.text()
    assert intro.startswith("No memory estimate to advise on") and "GPUs field of the Start step" in intro
    assert not CLI_ADVICE.search(intro) and "command line" not in intro
    board.advice_dialog.reject()
    type_into(window.start_page.gpus, "1xH100-80GB")  # a GPU model: there is an estimate to search from
    assert action.isEnabled() and "Nothing to advise" not in action.toolTip()
