"""The placement board's words for a newcomer: what a GPU without a model shows, a pool's name and shape, which bar
is which phase."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QGraphicsSimpleTextItem  # noqa: E402

from wizard.core.hardware import parse_gpu_spec  # noqa: E402
from wizard.gui.document import PlanDocument  # noqa: E402
from wizard.gui.placement import PlacementBoard  # noqa: E402
from wizard.gui.placement.items import NO_GPU_MODEL  # noqa: E402

pytestmark = pytest.mark.gui


def board_for(qtbot, preset: str, gpus: str | None, width: int = 1500) -> PlacementBoard:
    doc = PlanDocument(autosave=False)
    doc.load_preset(preset)
    if gpus:
        doc.set_gpus(parse_gpu_spec(gpus))
    board = PlacementBoard(doc)
    qtbot.addWidget(board)
    board.resize(width, 800)
    board.show()
    qtbot.waitExposed(board)
    return board


def texts(board) -> list[str]:
    return [i.text() for i in board.scene.items() if isinstance(i, QGraphicsSimpleTextItem)]


def test_without_a_gpu_model_a_tile_says_what_to_name_and_its_title_stands_alone(qtbot):
    board = board_for(qtbot, "grpo-1gpu-smoke", None)
    tile = next(iter(board.scene.tiles.values()))
    assert tile.corner_word() == ""  # not "memory unknown" drawn over "GPU 0"
    assert tile.summary() == "memory unknown" and tile.no_estimate == NO_GPU_MODEL
    assert any("GPU model and memory unknown" in t for t in texts(board))
    assert not any("memory ?" in t for t in texts(board))


def test_a_pool_wrapped_onto_two_lines_is_named_once_in_words(qtbot):
    board = board_for(qtbot, "ppo-8gpu", "8xH100-80GB", width=800)  # 8 GPUs wrap onto more lines
    regions = board.scene.regions_of("global_pool")
    titles = [r.title for r in regions if r.title]
    assert board.scene.lines == len(regions) > 1 and titles == ["global_pool · 8 GPUs"]
    assert all("trainer.n_gpus_per_node" in r.toolTip() and "actor" in r.toolTip() for r in regions)


def test_the_node_line_says_which_bar_is_which_phase(qtbot):
    board = board_for(qtbot, "ppo-8gpu", "8xH100-80GB")
    facts = next(t for t in texts(board) if "H100-80GB" in t)
    assert "bars: load sync gen" in facts and facts.endswith("upd")
    assert board.scene.tiles[("node0", 0)].corner_word() == "fits"
