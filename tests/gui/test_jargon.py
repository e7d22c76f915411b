"""verl's words the window uses are explained where they appear: passthrough, TP x DP x PP, the phases' tags, what
"the batch sends" means."""

import pytest

pytest.importorskip("PySide6")

from tests.conftest import SCRIPTS  # noqa: E402
from wizard.core.findings import Finding, Severity, Stage  # noqa: E402
from wizard.gui.placement.items import ReplicaOutline  # noqa: E402
from wizard.gui.widgets.findings_view import details_html  # noqa: E402

pytestmark = pytest.mark.gui


def test_an_import_says_what_passthrough_means(window):
    assert window.start_page.import_file(str(SCRIPTS / "examples__grpo_trainer__run_qwen2-7b_math.sh"))
    status = window.start_page.import_status
    assert "passthrough" not in status.text() and "kept exactly as written" in status.text()
    assert "passthrough" in status.toolTip() and "run.sh" in status.toolTip()


def test_replicas_and_bars_say_what_tp_and_the_phase_tags_are(window):
    board = window.page("placement")
    window.go_to(board)
    outlines = [i for i in board.board.scene.items() if isinstance(i, ReplicaOutline)]
    assert outlines and all("TP (tensor parallel)" in o.toolTip() for o in outlines)
    assert "sync = weight sync" in board.board.legend.toolTip()


def test_the_batch_sends_is_said_in_words():
    f = Finding(rule="memory.kv_concurrency", severity=Severity.WARNING, stage=Stage.RUNTIME, keys=[],
                message="Each rollout replica's KV cache holds 9,000 tokens = 3 sequences of 3000 tokens at once "
                        "(1.2 GiB), but the batch sends 256 at once; the engine queues and preempts the rest")
    shown = details_html(f)
    assert "the batch sends" not in shown and "puts 256 sequences on each replica at once" in shown
