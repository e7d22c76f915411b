"""Make it fit, on real widgets: the advisor's alternatives searched off the GUI thread, one Apply lands a plan
that fits, and one undo takes it back."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402

from wizard.core.hardware import parse_gpu_spec  # noqa: E402
from wizard.core.hardware.cluster import Cluster  # noqa: E402
from wizard.core.plan.convert import apply_overrides  # noqa: E402
from wizard.gui.document import PlanDocument  # noqa: E402
from wizard.gui.placement import PlacementBoard  # noqa: E402

pytestmark = pytest.mark.gui
SEVEN_B = "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"


@pytest.fixture
def board(qtbot):
    doc = PlanDocument(autosave=False)
    doc.load_preset("grpo-1gpu-smoke")
    doc.set_gpus(parse_gpu_spec("1xH100-80GB"))
    doc.set_plan(apply_overrides(doc.plan, [SEVEN_B]))
    doc.undo_stack.clear()
    return shown(qtbot, doc, 1400, 800)


def shown(qtbot, doc, width: int, height: int) -> PlacementBoard:
    """The Placement board of ``doc``, shown at that size."""
    board = PlacementBoard(doc)
    qtbot.addWidget(board)
    board.resize(width, height)
    board.show()
    qtbot.waitExposed(board)
    return board


def memory_errors(doc) -> list[str]:
    return [f.rule for f in doc.findings if f.rule.startswith("memory.") and f.severity.value == "error"]


def test_make_it_fit_applies_an_alternative_that_fits_as_one_undo_step(board, qtbot):
    doc = board.doc
    assert doc.assessment.memory.verdict.fits is False and memory_errors(doc)
    # the predicted step beside the verdict, as what it would take: a plan that does not fit runs no step
    assert "a step would take about" in board.headline.text() and "s if it fit (predicted" in board.headline.text()
    board.advice_action.trigger()
    dialog = board.advice_dialog
    assert dialog.windowTitle() == "Make it fit"
    qtbot.waitUntil(lambda: dialog.table.rowCount() > 0, timeout=60_000)
    assert "Step times assume every response at max_response_length, the worst case" in dialog.intro.text()
    # changes of method come last, LoRA of the 7B among them; where a faster smaller model is listed after it, the
    # intro says why, so "fastest first" holds
    kinds = [dialog.table.item(r, 1).text() for r in range(dialog.table.rowCount())]
    assert "method" in kinds and kinds == sorted(kinds, key=lambda k: k == "method")
    methods = [r for r, k in enumerate(kinds) if k == "method"]
    assert any("LoRA" in dialog.table.item(r, 0).text() for r in methods)
    steps = [dialog.table.item(r, 3).text() for r in methods]
    if steps != sorted(steps, key=lambda t: float(t.split()[0])):
        assert "LoRA of this model is listed though a smaller model is faster" in dialog.intro.text()
    # side by side: what changes, its kind, the peak per GPU, the step time, the verdict; the keys in the tooltip
    first = [dialog.table.item(0, c).text() for c in range(dialog.table.columnCount())]
    assert first[1] == "tuning" and "of 79.6 GiB" in first[2] and first[3].endswith(" s") and first[4].split(";")[0] == "fits"
    assert "actor_rollout_ref." in dialog.table.item(0, 0).toolTip()
    dialog.table.selectRow(0)  # the user picks it (each tuning row asks host RAM nobody knows: none is preselected)
    assert dialog.apply_button.isEnabled()
    qtbot.mouseClick(dialog.apply_button, Qt.LeftButton)
    assert doc.assessment.memory.verdict.fits is True and not memory_errors(doc)
    assert "a step about" in board.headline.text()
    assert doc.undo_stack.count() == 1 and doc.undo_stack.undoText().startswith("Make it fit: ")
    assert board.advice_action.text() == "F&aster…"  # a plan that fits is offered faster ones
    doc.undo_stack.undo()
    assert doc.assessment.memory.verdict.fits is False and board.advice_action.text() == "Make it f&it…"


def test_the_findings_dock_offers_make_it_fit_on_a_memory_finding(qtbot):
    from wizard.gui.widgets.findings_view import FindingsView

    doc = PlanDocument(autosave=False)
    doc.load_preset("grpo-1gpu-smoke")
    doc.set_gpus(parse_gpu_spec("1xH100-80GB"))
    doc.set_plan(apply_overrides(doc.plan, [SEVEN_B]))
    view = FindingsView()
    qtbot.addWidget(view)
    view.set_findings(doc.findings)
    item = next(view.tree.topLevelItem(i) for i in range(view.tree.topLevelItemCount())
                if view.tree.topLevelItem(i).data(0, Qt.UserRole) is not None
                and view.tree.topLevelItem(i).data(0, Qt.UserRole).rule == "memory.gpu_oom")
    view.tree.setCurrentItem(item)
    assert view.fix_button.text().replace("&", "") == "Make it fit…" and view.fix_button.isEnabled()
    with qtbot.waitSignal(view.advice_requested, timeout=2000):
        qtbot.mouseClick(view.fix_button, Qt.LeftButton)


def step_seconds(board) -> float:
    import re

    return float(re.search(r"a step (?:would take )?about ([\d.]+) s", board.headline.text()).group(1))


def test_the_step_time_assumes_the_mean_response_the_user_types_as_one_undo_step(board, qtbot):
    doc = board.doc
    worst = step_seconds(board)
    assert board.responses.text() == "the maximum" and "worst case" in board.headline.toolTip()
    board.responses.selectAll()
    qtbot.keyClicks(board.responses, "128")
    qtbot.keyClick(board.responses, Qt.Key_Return)
    assert doc.response_tokens == 128 and "responses of 128 tokens" in board.headline.text()
    assert step_seconds(board) < worst and "responses average 128 tokens (as given)" in board.headline.toolTip()
    # Make it fit times its alternatives at the same assumption (the memory values carry it)
    assert doc.assessment.memory.values["wizard.response_tokens"] == 128
    board.advice_action.trigger()
    qtbot.waitUntil(lambda: board.advice_dialog.table.rowCount() > 0, timeout=60_000)
    assert "Step times assume responses averaging 128 tokens" in board.advice_dialog.intro.text()
    board.advice_dialog.close()
    assert doc.undo_stack.undoText() == "Responses average 128 tokens"
    doc.undo_stack.undo()
    assert doc.response_tokens is None and board.responses.text() == "the maximum" and step_seconds(board) == worst


def test_the_mean_response_is_taken_from_a_finished_run(board, qtbot, tmp_path):
    from pathlib import Path

    run = Path(__file__).resolve().parents[1] / "data" / "verl-run-h200"  # its last step averaged 326.7 tokens
    worst = step_seconds(board)
    with qtbot.waitSignal(board._run_reader.finished, timeout=30_000):
        board.read_response_length(str(run))
    assert board.doc.response_tokens == 327 and board.responses.value() == 327
    assert board.status.text() == f"Responses average 327 tokens: step 3 of {run}"
    assert step_seconds(board) < worst
    with qtbot.waitSignal(board._run_reader.failed, timeout=30_000):
        board.read_response_length(str(tmp_path))
    assert board.status.text().startswith("Could not take the response length: ") and "\n" not in \
        board.status.text()
    assert board.doc.response_tokens == 327  # a folder that is no run changes nothing


def test_stepping_the_response_length_is_one_undo_step_and_a_new_preset_drops_it(board, qtbot):
    doc = board.doc
    before = doc.undo_stack.count()
    board.responses.setFocus()
    for _ in range(3):
        qtbot.keyClick(board.responses, Qt.Key_Up)  # 64 a step
    qtbot.waitUntil(lambda: doc.response_tokens == 192, timeout=5_000)  # judged once the arrows rest
    assert doc.undo_stack.count() == before + 1
    board.responses.selectAll()
    qtbot.keyClicks(board.responses, "100000")
    qtbot.keyClick(board.responses, Qt.Key_Return)
    assert doc.response_tokens == 100_000 and doc.undo_stack.count() == before + 1  # still the one step
    # the prediction takes no response past data.max_response_length, and the verdict says the length it took
    assert "responses of 512 tokens" in board.headline.text()
    doc.undo_stack.undo()
    assert doc.response_tokens is None and board.responses.text() == "the maximum"
    doc.undo_stack.redo()
    doc.load_preset("grpo-1gpu-smoke")  # another run: what was stated for this one does not carry over
    assert doc.response_tokens is None and board.responses.text() == "the maximum"


def test_make_it_fit_on_a_ppo_plan_writes_the_critics_budget_as_verl_takes_it(qtbot):
    """The PPO preset on eight 40 GB GPUs: the alternative that fits lowers the critic's token budget, a key verl's
    YAML lacks; applied, the plan fits, composes (no error at all), and run.sh carries it with '++'."""
    doc = PlanDocument(autosave=False)
    doc.load_preset("ppo-8gpu")
    doc.set_gpus(parse_gpu_spec("8xA100-40GB"))
    doc.undo_stack.clear()
    board = PlacementBoard(doc)
    qtbot.addWidget(board)
    board.resize(1400, 800)
    board.show()
    assert doc.assessment.memory.verdict.fits is False
    board.advice_action.trigger()
    dialog = board.advice_dialog
    qtbot.waitUntil(lambda: dialog.table.rowCount() > 0, timeout=60_000)
    assert "critic token budget 32,768 -> " in dialog.table.item(0, 0).text()
    assert "++critic.ppo_infer_max_token_len_per_gpu=" in dialog.table.item(0, 0).toolTip()
    dialog.table.selectRow(0)  # every row offloads to a host whose RAM is unknown: the user picks one
    qtbot.mouseClick(dialog.apply_button, Qt.LeftButton)
    assert doc.assessment.memory.verdict.fits is True
    assert not [f.rule for f in doc.findings if f.severity.value == "error"]
    assert "++critic.ppo_infer_max_token_len_per_gpu=" in doc.files["run.sh"]


def searched_dialog(qtbot, machine, model: str):
    """Make it fit on the smoke preset with ``model`` on ``machine`` (set by ``doc.set_gpus`` or ``set_cluster``),
    once its alternatives are in."""
    doc = PlanDocument(autosave=False)
    doc.load_preset("grpo-1gpu-smoke")
    (doc.set_cluster if isinstance(machine, Cluster) else doc.set_gpus)(machine)
    doc.set_plan(apply_overrides(doc.plan, [model]))
    board = PlacementBoard(doc)
    qtbot.addWidget(board)
    board.resize(1400, 800)
    board.show()
    board.advice_action.trigger()
    dialog = board.advice_dialog
    qtbot.waitUntil(lambda: dialog.table.rowCount() > 0, timeout=60_000)
    return dialog


def test_where_nothing_fits_the_dialog_says_so_once_and_lists_the_changes_of_method(qtbot):
    """7B on one 24 GB GPU: the advisor's statement heads the dialog, cut before its own list of changes of method
    (the table lists them), which would otherwise read twice."""
    dialog = searched_dialog(qtbot, parse_gpu_spec("1xRTX-4090-24GB"), SEVEN_B)
    intro = dialog.intro.text()
    assert "Nothing on this 24 GiB GPU fits Qwen/Qwen2.5-7B-Instruct full fine-tuning" in intro
    assert "what fits on" not in intro and "These change the method and fit" in intro
    assert dialog.table.item(0, 1).text() == "method"


def test_where_the_host_stops_lora_the_dialog_says_why_it_is_not_listed(qtbot):
    """14B on one H100 of a node with 64 GiB of RAM: only a smaller model fits; LoRA would fit the GPU (on a bf16
    base), but its host copies (vLLM's pinned sleep, rank 0's read of the model) are past Ray's 95 %. The dialog says
    so above the list. (With the lent machine's 125 GiB, LoRA on a bf16 base fits: it is listed.)"""
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware.cluster import parse_cluster_spec

    node = parse_cluster_spec({"nodes": [{"gpus": 1, "gpu": "H100-80GB", "memory_gib": 64}]}, load_gpu_catalogue())
    dialog = searched_dialog(qtbot, node, "actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct")
    intro = dialog.intro.text()
    assert "LoRA would fit this 80 GiB GPU but not the host" in intro and "of 64 GiB of RAM a node" in intro
    assert all("LoRA" not in dialog.table.item(r, 0).text() for r in range(dialog.table.rowCount()))
    assert "Qwen2.5-3B" in dialog.table.item(0, 0).text()


def test_where_the_nodes_ram_is_unknown_the_table_says_what_an_offload_needs_of_it(qtbot):
    """14B on an H200 given by its GPU only: the alternatives that fit by FSDP2's CPU offload policy put the params
    and the optimizer on the CPU, pinned, which nothing judged; their verdict cells say how much."""
    dialog = searched_dialog(qtbot, parse_gpu_spec("1xH200-141GB"),
                             "actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct")
    rows = [(dialog.table.item(r, 0).text(), dialog.table.item(r, 4).text()) for r in range(dialog.table.rowCount())]
    offload = [v for what, v in rows if "CPU offload policy" in what]
    assert offload and all("host RAM about" in v and "GiB a node (unknown here)" in v for v in offload)
    # those cells say it in the warning colour and their tooltips how to have it checked; the row selected for
    # Apply is one that asks nothing of the unknown host where there is one (a 4 x 24 GB plan's first wanted 259 GiB)
    for r in range(dialog.table.rowCount()):
        if "unknown here" in dialog.table.item(r, 4).text():
            assert "nothing checked that a node holds" in dialog.table.item(r, 4).toolTip()
    chosen = dialog._selected()
    calm = [a for a in dialog.alternatives if a.fits and not a.host_note and a.kind == "tuning"]
    assert chosen is (calm[0] if calm else None)
    assert dialog.apply_button.isEnabled() == bool(calm) and dialog.unpicked.isVisibleTo(dialog) != bool(calm)


def test_faster_on_a_plan_with_nothing_faster_says_what_was_looked_for(qtbot):
    # the 0.5B smoke run without checkpointing fits a 24 GB GPU; LoRA would save 2 s of 14: not offered, and the
    # dialog says why it is empty
    doc = PlanDocument(autosave=False)
    doc.load_preset("grpo-1gpu-smoke")
    doc.set_plan(apply_overrides(doc.plan, ["actor_rollout_ref.model.enable_gradient_checkpointing=False",
                                            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"]))
    doc.set_gpus(parse_gpu_spec("1xRTX4090-24GB"))
    board = shown(qtbot, doc, 1180, 820)  # the window's default size
    assert doc.assessment.memory.verdict.fits is True and board.advice_action.text() == "F&aster…"
    board.advice_action.trigger()
    dialog = board.advice_dialog
    qtbot.waitUntil(lambda: "Nothing faster" in dialog.intro.text(), timeout=60_000)
    assert "no change that still fits saves 2 % of the step" in dialog.intro.text()
    assert dialog.table.rowCount() == 0 and not dialog.apply_button.isEnabled()


def test_every_alternative_s_words_are_shown_whole_in_their_row(qtbot):
    """The 8-GPU preset on 8 x 24 GB: long alternatives wrap; the rows were sized while the wrapped column was wider
    than it ended up (the other columns fit their contents after), and the first was cut to "... rollout TP ..."."""
    doc = PlanDocument(autosave=False)
    doc.load_preset("grpo-8gpu")
    doc.set_gpus(parse_gpu_spec("8xRTX-4090-24GB"))
    board = shown(qtbot, doc, 1180, 820)
    board.advice_action.trigger()
    table = board.advice_dialog.table
    qtbot.waitUntil(lambda: table.rowCount() > 0, timeout=60_000)
    qtbot.wait(50)
    assert [table.rowHeight(r) for r in range(table.rowCount())] == \
        [table.sizeHintForRow(r) for r in range(table.rowCount())]


def test_where_every_tuning_change_needs_unknown_host_ram_nothing_is_selected_and_one_line_says_why(board, qtbot):
    """7B on one H100 known by its GPU only: each change of tuning fits by FSDP2's CPU offload, whose host RAM
    nobody knows; LoRA, last ("changes of method last"), needs none, but is not what Apply should take alone."""
    board.advice_action.trigger()
    dialog = board.advice_dialog
    qtbot.waitUntil(lambda: dialog.table.rowCount() > 0, timeout=60_000)
    kinds = [dialog.table.item(r, 1).text() for r in range(dialog.table.rowCount())]
    verdicts = [dialog.table.item(r, 4).text() for r in range(dialog.table.rowCount())]
    assert "tuning" in kinds and all("unknown here" in v for k, v in zip(kinds, verdicts) if k == "tuning")
    assert dialog.table.selectionModel().selectedRows() == [] and not dialog.apply_button.isEnabled()
    assert dialog.unpicked.isVisibleTo(dialog) and "host RAM not known here" in dialog.unpicked.text()
    metrics = dialog.unpicked.fontMetrics()
    assert metrics.horizontalAdvance(dialog.unpicked.text()) <= dialog.unpicked.width()  # one line
    dialog.table.selectRow(kinds.index("tuning"))  # the user picks one: Apply takes it
    assert dialog.apply_button.isEnabled() and not dialog.unpicked.isVisibleTo(dialog)
    assert "offload_policy=True" in dialog.keys.text()


def test_a_plan_that_does_not_fit_gives_its_step_time_only_as_what_it_would_take_were_it_to_fit(qtbot):
    """A 7B full fine-tuning on one H100 does not fit; "As planned: step time: about 30.4 s" read as faster than
    every alternative that fits (68.9-88.0 s)."""
    dialog = searched_dialog(qtbot, parse_gpu_spec("1xH100-80GB"), "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct")
    assert dialog.intro.text().startswith("As planned it does not fit; if it did, its step time: about ")
