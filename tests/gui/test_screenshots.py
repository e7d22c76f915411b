"""``verl-wizard --screenshots DIR``: every step as a PNG, and a clear answer for a bad flag."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QImage  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from wizard.gui import steps  # noqa: E402
from wizard.gui.main import main  # noqa: E402


def test_every_step_is_rendered_with_the_chosen_preset(qtbot, tmp_path, capsys):
    assert main(["--screenshots", str(tmp_path), "--preset", "ppo-8gpu", "--gpus", "8xH100-80GB"]) == 0
    pngs = sorted(tmp_path.glob("*.png"))
    assert [p.name for p in pngs][:2] == ["01-start.png", "02-environment.png"]
    assert len(pngs) == len(steps.STEPS) and capsys.readouterr().out.count("wrote ") == len(steps.STEPS)
    image = QImage(str(pngs[0]))
    assert (image.width(), image.height()) == (1180, 820)  # what a user first sees


def test_size_dark_and_cluster_flags(qtbot, tmp_path):
    from wizard.gui.theme import apply_theme

    try:
        assert main(["--screenshots", str(tmp_path), "--dark", "--size", "1000x700", "--preset", "grpo-2node",
                     "--cluster", "2x8xH100-80GB nvlink"]) == 0
    finally:
        apply_theme(QApplication.instance(), "system")
    image = QImage(str(tmp_path / "03-hardware.png"))
    assert (image.width(), image.height()) == (1000, 700)
    assert image.pixelColor(image.width() // 2, 5).lightness() < 100  # the dark theme, from the menu bar down


@pytest.mark.parametrize("argv, reason", [
    (["--screenshots"], "--screenshots needs a folder"),
    (["--screenshots", "x", "--preset", "nope"], "no preset 'nope'"),
    (["--screenshots", "x", "--gpus", "8x"], "cannot read GPU spec '8x'"),
    (["--screenshots", "x", "--size", "big"], "--size needs WIDTHxHEIGHT"),
    (["--screenshots", "x", "--cluster", "2xNOPE"], "cannot read cluster spec '2xNOPE'"),
])
def test_a_bad_flag_is_one_line_and_exit_2(qtbot, tmp_path, monkeypatch, capsys, argv, reason):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("verl-wizard: error:") and reason in err and err.count("\n") == 1


def test_the_run_steps_tabs_with_a_run_folder_opened(qtbot, tmp_path, capsys):
    import shutil
    from pathlib import Path

    from tests.helpers.rollout_dumps import recorded_run_dumps

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "verl-run-h200", run)
    recorded_run_dumps(run / "rollout")
    assert main(["--screenshots", str(tmp_path / "shots"), "--run-folder", str(run)]) == 0
    names = sorted(p.name for p in (tmp_path / "shots").glob("*.png"))
    assert names == ["run-log.png", "run-metrics.png", "run-samples.png", "run-time.png"]
    assert (QImage(str(tmp_path / "shots" / "run-time.png")).width(), ) == (1280,)
    assert main(["--screenshots", str(tmp_path / "x"), "--run-folder", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err
