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


def board_of(qtbot, script: Path, gpus: str, size=(1500, 800)):
    """(the document, its Placement board shown) for a launch script on ``gpus``."""
    doc = PlanDocument(autosave=False)
    doc.set_plan(load_source(str(script)).to_plan(name=script.stem))
    doc.set_gpus(parse_gpu_spec(gpus))
    board = PlacementBoard(doc)
    qtbot.addWidget(board)
    board.resize(*size)
    board.show()
    qtbot.waitExposed(board)
    return doc, board


def test_the_board_draws_the_moe_megatron_plan_on_two_nodes(qtbot):
    _, board = board_of(qtbot, SCRIPT, "2x8xH100-80GB")
    tiles = board.scene.tiles
    assert {("node0", 0), ("node1", 7)} <= set(tiles)
    assert all(t.corner_word() == "fits" for t in tiles.values())
    assert "memory unknown" not in tiles[("node1", 7)].summary(), tiles[("node1", 7)].summary()


def test_a_plan_that_fits_while_samples_are_short_does_not_show_oom_on_its_gpus(qtbot):
    # the 32B TP 4 PP 2 example on one node of 8 H100s: the headline says it fits while samples average <= 2,811
    # tokens; its tiles said "OOM" in red beside it. They read "if short", in the tight colour
    from wizard.core.memory import SHORT
    from wizard.gui.theme import canvas_colours

    doc, board = board_of(qtbot, SCRIPT.parent / "grpo_qwen2.5-32b_tp4_pp2.sh", "8xH100-80GB", (1180, 820))
    tile = board.scene.tiles[("node0", 0)]
    assert tile.verdict == SHORT and tile.corner_word() == "if short"
    assert "fits while samples are short" in tile.toolTip()
    assert canvas_colours().verdict[SHORT] == canvas_colours().verdict["tight"]
    # on 40 GB GPUs it does not fit at any length: those tiles still say OOM
    doc.set_gpus(parse_gpu_spec("8xA100-40GB"))
    qtbot.waitUntil(lambda: board.scene.tiles[("node0", 0)].corner_word() == "OOM", timeout=60000)
