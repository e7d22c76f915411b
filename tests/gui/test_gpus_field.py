"""The Start step's GPUs field reads what ``--gpus`` reads and refuses what it refuses, in place and in the window's
words; nothing the window shows about GPUs advises a command-line flag."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from wizard.cli import main  # noqa: E402
from wizard.gui.widgets.findings_view import details_html  # noqa: E402
from wizard.gui.wording import CLI_ADVICE, window_text  # noqa: E402

pytestmark = pytest.mark.gui


def type_gpus(window, text: str) -> None:
    field = window.start_page.gpus
    field.clear()
    QTest.keyClicks(field, text)
    QTest.keyClick(field, Qt.Key_Return)


def cli_refusal(capsys, spec: str) -> str:
    assert main(["plan", "--gpus", spec, "--", "trainer.n_gpus_per_node=8"]) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("spec, said", [
    ("8xFOO", "unknown GPU model 'FOO'"),
    ("8xH100-80G", "unknown GPU model 'H100-80G'; did you mean H100-80GB"),
])
def test_a_model_the_cli_refuses_is_refused_under_the_field_and_the_plan_keeps_its_gpus(window, capsys, spec, said):
    before = window.doc.gpus
    type_gpus(window, spec)
    shown = window.start_page.gpus_error
    assert shown.isVisible() and said in shown.text()
    assert said in cli_refusal(capsys, spec)  # the same reason from the same parser
    assert not CLI_ADVICE.search(shown.text())  # the window's words: no `verl-wizard detect --catalogue`
    assert window.doc.gpus == before
    assert "border" in window.start_page.gpus.styleSheet()  # the field itself is marked
    type_gpus(window, "8xH100-80GB")
    assert not shown.isVisible() and str(window.doc.gpus) == "8xH100-80GB"


def test_the_field_completes_gpu_models_from_the_catalogue(window):
    field = window.start_page.gpus
    field.clear()
    QTest.keyClicks(field, "8xH1")
    offered = field.completer().model().stringList()
    assert "8xH100-80GB" in offered and all(o.startswith("8x") for o in offered)


def test_without_a_gpu_model_the_window_says_where_to_name_it_not_which_flag(window):
    type_gpus(window, "8")  # a count, no model: the memory is unknown
    board = window.page("placement")
    window.go_to(board)
    headline = board.board.headline.text()
    assert "memory is unknown" in headline and "GPUs field of the Start step" in headline
    assert not CLI_ADVICE.search(headline)
    for finding in window.doc.findings:
        assert not CLI_ADVICE.search(details_html(finding)), finding.rule


@pytest.mark.parametrize("cli", [
    "plan for other hardware with --cluster FILE or --gpus 8xH100-80GB",
    "x; `verl-wizard detect --catalogue` lists them",
    "add a data_source column (e.g. 'openai/gsm8k'); `verl-wizard data convert --data-source NAME` writes one",
    "sure no other process uses the GPUs (verl-wizard detect lists them)",
    "Run the verl pre-flight (verl-wizard check --verl) for an exact verdict",
])
def test_command_line_advice_has_window_words(cli):
    assert not CLI_ADVICE.search(window_text(cli))
