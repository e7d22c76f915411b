"""Wrapped words get the height their lines need, no more and no less, at the window's first size: the findings
beside the placement board (whole rows, none cut to "…"), the message under a field (no blank band under it),
and a stage's long name in the dataflow inspector (cut with "…", whole in its tooltip)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRect, Qt  # noqa: E402
from PySide6.QtGui import QFontMetrics  # noqa: E402
from PySide6.QtWidgets import QApplication, QStyle  # noqa: E402

from wizard.core.plan import apply_overrides  # noqa: E402
from wizard.gui.screenshots import settle  # noqa: E402
from wizard.usecases.hardware import read_gpu_spec  # noqa: E402

from tests.helpers.gui_steps import at  # noqa: E402

pytestmark = pytest.mark.gui
SEVEN_B = "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"
ROOT = Path(__file__).resolve().parents[2]


def seven_b_on_a_4090(window) -> None:
    window.doc.set_gpus(read_gpu_spec("1xRTX4090-24GB"))
    window.doc.set_plan(apply_overrides(window.doc.plan, [SEVEN_B]))


def cut_rows(view) -> list[str]:
    """The rows of a wrapped list whose words need more lines than the row has, at the width they are drawn: a
    top-to-bottom QListView paints every row as wide as its viewport less the spacing, whatever the row's own
    width, and the style keeps a margin each side of the text."""
    margin = view.style().pixelMetric(QStyle.PM_FocusFrameHMargin, None, view) + 1
    drawn = view.viewport().width() - 2 * view.spacing() - 2 * margin
    metrics = QFontMetrics(view.font())
    cut = []
    for i in range(view.count()):
        rect = view.visualItemRect(view.item(i))
        text = view.item(i).text()
        needs = metrics.boundingRect(QRect(0, 0, drawn, 1 << 20), Qt.TextWordWrap, text).height()
        if needs > rect.height():
            cut.append(f"{text[:40]}: {rect.height()} px high, needs {needs} px")
    return cut


def test_the_placement_findings_rows_hold_their_whole_words(window):
    seven_b_on_a_4090(window)  # three long memory errors beside the board
    board = at(window, "placement").board
    assert board.findings.count() >= 5
    assert cut_rows(board.findings) == []
    window.resize(1400, 900)  # another width: the rows wrap again
    settle(QApplication.instance())
    assert cut_rows(board.findings) == []


SCALED = """
import json, os, sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from wizard.gui.app import WizardWindow
from wizard.core.plan import apply_overrides
from wizard.usecases.hardware import read_gpu_spec
from tests.helpers.gui_steps import at
from tests.gui.test_wrapped_words import cut_rows
w = WizardWindow(restore=False)
w.ask_save = lambda: "discard"
w.show()
w.doc.set_gpus(read_gpu_spec("1xRTX4090-24GB"))
w.doc.set_plan(apply_overrides(w.doc.plan, ["actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"]))
board = at(w, "placement").board
print(json.dumps({"rows": board.findings.count(), "cut": cut_rows(board.findings)}))
"""


def test_the_placement_findings_rows_hold_their_whole_words_at_200_percent(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", QT_SCALE_FACTOR="2", XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", SCALED], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert shown["rows"] >= 5 and shown["cut"] == []


def blank_under_messages(page) -> dict[str, int]:
    """Per field with a message under it: the blank pixels between the message's last line and the next row."""
    out = {}
    for form in page.forms:
        layout = form.layout()
        for key, editor in form.editors.items():
            label = editor.error
            if not label.isVisibleTo(page):
                continue
            row, _role = layout.getItemPosition(layout.indexOf(label))
            below = layout.itemAt(row + 1, layout.ItemRole.FieldRole)
            next_top = below.geometry().top() if below is not None else form.height()
            lines = QFontMetrics(label.font()).boundingRect(QRect(0, 0, label.width(), 1 << 20), Qt.TextWordWrap,
                                                            label.text()).height()
            out[key] = next_top - (label.geometry().top() + lines)
    return out


def test_no_blank_band_under_the_data_steps_file_warnings(window):
    page = at(window, "data")  # the preset's files are not on this machine: a warning under each
    blank = blank_under_messages(page)
    assert {"data.train_files", "data.val_files"} <= set(blank)
    assert all(0 <= gap <= 12 for gap in blank.values()), blank


def test_no_blank_band_under_an_error_on_the_model_step(window):
    seven_b_on_a_4090(window)
    page = at(window, "model")
    blank = blank_under_messages(page)
    assert blank, "the 7B's out-of-memory error is under a Model field"
    assert all(0 <= gap <= 12 for gap in blank.values()), blank
    window.resize(900, 820)  # narrower: the message takes more lines and its row grows with them
    settle(QApplication.instance())
    assert all(0 <= gap <= 12 for gap in blank_under_messages(page).values())


def test_a_long_stage_name_ends_with_an_ellipsis_and_is_whole_in_its_tooltip(window):
    page = at(window, "dataflow")
    combo = page.editor.inspector.stage
    full = combo.currentText()
    assert full.startswith("Data — prompts from data.train_files")
    shown = combo.shown_text()
    assert shown != full and shown.endswith("…") and full.startswith(shown[:-1])
    room = combo.style().subControlRect(QStyle.CC_ComboBox, _option(combo), QStyle.SC_ComboBoxEditField,
                                        combo).width()
    assert combo.fontMetrics().horizontalAdvance(shown) <= room
    assert full in combo.tip() and "Delete and Connect act on" in combo.tip()


def _option(combo):
    from PySide6.QtWidgets import QStyleOptionComboBox

    opt = QStyleOptionComboBox()
    combo.initStyleOption(opt)
    return opt
