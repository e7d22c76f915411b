"""The Placement step draws a Megatron plan: every GPU of both nodes with its estimate and the verdict's word."""

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from wizard.adapters.files.sources import load_source  # noqa: E402
from wizard.core.hardware import parse_gpu_spec  # noqa: E402
from wizard.gui.document import PlanDocument  # noqa: E402
from wizard.gui.placement import PlacementBoard  # noqa: E402

pytestmark = pytest.mark.gui

SCRIPT = Path(__file__).resolve().parents[1] / "data" / "megatron" / "grpo_qwen3-30b-a3b_ep8.sh"


def test_the_board_draws_the_moe_megatron_plan_on_two_nodes(qtbot):
    doc = PlanDocument(autosave=False)
    doc.set_plan(load_source(str(SCRIPT)).to_plan(name=SCRIPT.stem))
    doc.set_gpus(parse_gpu_spec("2x8xH100-80GB"))
    board = PlacementBoard(doc)
    qtbot.addWidget(board)
    board.resize(1500, 800)
    board.show()
    qtbot.waitExposed(board)
    tiles = board.scene.tiles
    assert {("node0", 0), ("node1", 7)} <= set(tiles)
    assert all(t.corner_word() == "fits" for t in tiles.values())
    assert "memory unknown" not in tiles[("node1", 7)].summary(), tiles[("node1", 7)].summary()
