"""The Run page's Samples and Time tabs, Open run folder… and Report, driven through real widgets: the recorded
H200 run (tests/data/verl-run-h200, with generations in verl's dump format added), the project's own smoke run
with verl's own dumps (tests/data/verl-run-h200-dumps), a step whose text holds escape sequences, a live run
whose stand-in target Python prints verl's lines and dumps generations where the smoke overrides say, and the
Review step's forecast of a smoke run of the same plan. No timing is asserted."""

import json
import shlex
import shutil
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import Qt  # noqa: E402

from tests.helpers.rollout_dumps import recorded_run_dumps  # noqa: E402
from wizard.core.run.record import RunMeta, plan_fingerprint, start_meta  # noqa: E402
from wizard.core.run.smoke import smoke_plan  # noqa: E402
from wizard.gui.document import PlanDocument  # noqa: E402
from wizard.gui.run.panel import RunPanel  # noqa: E402

pytestmark = pytest.mark.gui
RUN = Path(__file__).resolve().parents[1] / "data" / "verl-run-h200"


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "h200"
    shutil.copytree(RUN, folder)
    recorded_run_dumps(folder / "rollout")
    return folder


@pytest.fixture
def panel(qtbot):
    doc = PlanDocument(autosave=False)
    doc.load_preset("grpo-1gpu-smoke")
    p = RunPanel(doc)
    qtbot.addWidget(p)
    p.resize(1300, 850)
    p.show()
    yield p
    p.shutdown()


def opened(qtbot, panel, folder):
    with qtbot.waitSignal(panel.insight.digested, timeout=30_000):
        panel.insight.open_folder(str(folder))
    return panel


def test_opening_the_recorded_run_fills_every_tab(qtbot, panel, run_dir):
    opened(qtbot, panel, run_dir)
    assert panel.status.text() == f"{run_dir}: 1,279 log lines, 3 timed step(s), 192 generated responses."
    assert panel.log.line_count == 1279 and "timing_s/gen" in panel.plots.series_names()
    assert (panel.progress.value(), panel.progress.maximum()) == (3, 3) and panel.folder.text() == str(run_dir)
    # the step box keeps the next run's count; beside it, the opened run's own
    assert panel.steps.value() == 5 and panel.steps_note.isVisible()
    assert panel.steps_note.text() == "for the next run (the opened one: 3 of 3)"
    samples = panel.insight.samples
    assert samples.count.text() == "192 of 192 responses" and samples.stack.currentIndex() == 1
    assert samples.verdict_lines()[0].startswith("step 1: 64 responses to 16 prompts (4 each): 31 % of responses "
                                                 "hit the 512-token limit; in all 16 groups every response scored")
    assert "warning" in samples.verdict.text() and "20 of 64 responses (31 %) hit the 512-token limit" in \
        samples.verdict.text()


def test_samples_filter_by_step_and_flag_search_sort_and_read(qtbot, panel, run_dir):
    opened(qtbot, panel, run_dir)
    view = panel.insight.samples
    view.step.setCurrentIndex(view.step.findData(3))
    view.flag.setCurrentIndex(view.flag.findData("cut"))
    assert view.count.text() == "20 of 192 responses" and len(view.verdict_lines()) == 1
    assert all("cut" in view.model.row_at(i).flags for i in range(20))
    view.flag.setCurrentIndex(0)
    view.table.sortByColumn(4, Qt.DescendingOrder)  # score, highest first
    assert [view.model.row_at(i).sample.score for i in range(3)] == [1.0, 1.0, 0.0]
    view.select_row(0)
    detail = view.detail.toPlainText()
    assert detail.startswith("step 3, response #") and "score: 1   ground truth:" in detail
    assert "the answer is ####" in detail and "--- prompt ---\nuser\nwhat is" in detail
    qtbot.keyClicks(view.search, '"the answer is ####"')  # typing searches after a pause; a quoted phrase whole
    qtbot.waitUntil(lambda: view.count.text() == "2 of 192 responses", timeout=5_000)
    view.set_search("no such words anywhere")
    assert view.count.text() == "0 of 192 responses"
    view.kind.setCurrentIndex(1)  # validation: this run had none
    assert view.count.text() == "0 of 0 responses"


def test_the_time_tab_draws_each_step_with_the_warm_up_apart(qtbot, panel, run_dir):
    opened(qtbot, panel, run_dir)
    timing = panel.insight.timing
    bars = timing.bars()
    assert list(bars) == ["generation", "log-probs", "reference", "update", "weight sync", "other"]
    assert [round(v, 1) for v in bars["other"]] == [30.2, 0.1, 0.1] and [round(v, 1) for v in bars["update"]] == \
        [7.6, 6.7, 7.1]
    assert [s.warmup for s in timing.summary.steps] == [True, False, False]
    text = timing.text.text()
    assert "A steady step takes 14 s</b> (median of steps 2, 3)" in text and "update <b>50 %</b>" in text
    assert "Step 1 took 63 s, 4.5× the steady 14 s" in text and "use_dynamic_bsz=true" in text
    assert "The full run: 8 steps (1 epoch × 8 steps of 16 prompts from 128 rows), about 6 min 41 s" in text
    assert "GPU busy: not sampled for this run" in text


def test_report_writes_the_file_copies_it_and_keeps_secrets_out(qtbot, panel, run_dir, qapp, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_plantedPLANTEDplantedPLANTED99")
    with open(run_dir / "run.log", "a") as fh:
        fh.write("downloading with hf_plantedPLANTEDplantedPLANTED99\n")
    opened(qtbot, panel, run_dir)
    assert panel.insight.report_button.isEnabled()
    with qtbot.waitSignal(panel.insight._reporter.finished, timeout=30_000):
        panel.insight.report_button.click()
    text = (run_dir / "report.md").read_text()
    assert qapp.clipboard().text() == text and text.startswith("# verl run report: grpo_smoke_qwen2.5_0.5b")
    assert "hf_planted" not in text and "downloading with ${HF_TOKEN}" in text
    assert panel.status.text().startswith(f"Wrote {run_dir / 'report.md'} and copied it")


def test_an_unreadable_folder_is_one_line(qtbot, panel, tmp_path):
    with qtbot.waitSignal(panel.insight._reader.failed, timeout=30_000):
        panel.insight.open_folder(str(tmp_path / "missing"))
    assert panel.status.text() == f"Could not read the run folder: {tmp_path / 'missing'}: no such folder"


# --- the project's own smoke run on the H200, with verl's own generation dumps ------------------------------

REAL = Path(__file__).resolve().parents[1] / "data" / "verl-run-h200-dumps"
RAW = "".join(chr(c) for c in (*range(0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0)))  # C0 but \n, DEL, C1


@pytest.fixture
def real_dir(tmp_path):
    folder = tmp_path / "smoke"
    shutil.copytree(REAL, folder)
    return folder


def test_the_real_runs_128_responses_are_listed_every_one_cut(qtbot, panel, real_dir):
    opened(qtbot, panel, real_dir)
    assert panel.status.text() == f"{real_dir}: 1,262 log lines, 2 timed step(s), 128 generated responses."
    view, model = panel.insight.samples, panel.insight.samples.model
    assert view.count.text() == "128 of 128 responses" and model.rowCount() == 128
    flags = [model.data(model.index(i, 6)) for i in range(128)]
    assert all(f.startswith("cut") and f.endswith("same score") for f in flags)
    assert [line.split(": ", 1)[1] for line in view.verdict_lines()] == [
        "64 responses to 16 prompts (4 each): 100 % of responses hit the 512-token limit; in all 16 groups every "
        "response scored the same (0), so GRPO's advantage is 0 there" + tail
        for tail in ("; 1 switches language; mean score 0", "; mean score 0")]
    verdict = view.verdict.text()
    assert "this step taught the policy nothing" in verdict and "64 of 64 responses (100 %) hit the 512-token" in verdict
    view.flag.setCurrentIndex(view.flag.findData("cut"))
    view.step.setCurrentIndex(view.step.findData(2))
    assert view.count.text() == "64 of 128 responses"
    view.select_row(0)
    detail = view.detail.toPlainText()
    assert detail.startswith("step 2, response #0 (prompt 16095184-") and "score: 0   ground truth: 38" in detail
    assert "  cut: reached the length limit (data.max_response_length)" in detail
    assert "--- response (2,926 characters) ---\nw\\r#" in detail  # random bytes: a carriage return shown, not obeyed
    cells = [model.data(model.index(i, c)) for i in range(64) for c in (2, 3)]
    assert not any(ch in text for text in cells for ch in RAW)
    assert not any(ch in detail for ch in RAW.replace("\t", ""))  # the detail keeps line breaks and tabs


def test_the_time_tab_shows_the_real_runs_warm_up_apart(qtbot, panel, real_dir):
    import pyqtgraph as pg

    opened(qtbot, panel, real_dir)
    timing = panel.insight.timing
    assert [(s.step, round(s.total, 1), s.warmup) for s in timing.summary.steps] == [(1, 126.2, True),
                                                                                     (2, 82.4, False)]
    bars = timing.bars()
    assert [round(v, 1) for v in bars["generation"]] == [12.1, 6.1] and [round(v, 1) for v in bars["other"]] == \
        [26.4, 0.1]  # step 1's warm-up is mostly time outside verl's phases
    labels = [i for i in timing.plot.getPlotItem().items if isinstance(i, pg.TextItem)]
    assert [(label.toPlainText(), label.pos().x()) for label in labels] == [("warm-up", 1.0)]
    text = timing.text.text()
    assert "A steady step takes 82 s</b> (median of step 2)" in text
    assert "Step 1 took 2 min 6 s, 1.5× the steady 82 s of step 2: warm-up" in text
    assert "The full run: 4 steps (1 epoch × 4 steps of 16 prompts from 64 rows), about 11 min on 1 GPU" in text


def test_a_responses_control_characters_are_shown_in_the_table_its_tooltip_and_the_detail(qtbot, panel, tmp_path):
    from tests.helpers.rollout_dumps import hostile_step

    opened(qtbot, panel, hostile_step(tmp_path / "run" / "rollout").parent.parent)
    view, model = panel.insight.samples, panel.insight.samples.model
    assert view.count.text() == "5 of 5 responses"
    cells = [model.data(model.index(i, c)) for i in range(5) for c in range(7)]
    assert "sure \\x1b[2J\\x1b]0;pwned\\x07 the answer is #### 2" in cells and "\\x9b2J\\rnothing here, #### 3" in cells
    assert "user ⏎ what is 1 + 1 ?\\x1b[2J\\x1b]0;pwned\\x07 ⏎ assistant ⏎ " in cells and "2\\x07" in cells
    tips = [model.data(model.index(i, 3), Qt.ToolTipRole) for i in range(5)]
    assert "<p>&lt;b&gt;bold&lt;/b&gt; &amp;lt;i&amp;gt; #### 5</p>" in tips  # shown as written, not as bold
    view.select_row(0)
    detail = view.detail.toPlainText()
    assert "--- response (40 characters) ---\nsure \\x1b[2J\\x1b]0;pwned\\x07 the answer is #### 2" in detail
    assert "ground truth: 2\\x07" in detail and "--- prompt ---\nuser\nwhat is 1 + 1 ?\\x1b[2J\\x1b]0;pwned\\x07\nassistant" in detail
    for text in (*cells, *tips, detail):
        assert not any(c in text for c in "\x00\x07\x1b\x9b\r"), repr(text)


# --- a live run ---------------------------------------------------------------------------------------------

LIVE = """
    import json, sys, time
    args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    rollout = args["trainer.rollout_data_dir"].strip("'")
    import os
    os.makedirs(rollout, exist_ok=True)
    P = "(TaskRunnerV1 pid=466) "
    def out(text):
        print(text, flush=True)
    out(P + "INFO:2026-12-03 15:44:32,052:train and validate dataloader initialized, train dataset size: 64, "
        "val dataset size: 8")
    out(P + "INFO:2026-12-03 15:44:33,001:Total training steps: 2")
    out(P + "INFO:2026-12-03 15:46:33,013:all initialize finished, ready to fit")
    for step in (1, 2):
        with open(f"{rollout}/{step}.jsonl", "w") as fh:
            for g in range(4):
                for i in range(4):
                    fh.write(json.dumps({"input": f"user\\nwhat is {g} + 1 ?\\nassistant\\n",
                                         "output": f"the answer is #### {g + 1}" if i == step else "no idea",
                                         "gts": str(g + 1), "score": 1.0 if i == step else 0.0, "step": step,
                                         "uid": f"u{g}-{step}_{i}_0"}) + "\\n")
        total = 30.0 if step == 1 else 10.0
        out(P + f"step:{step} - timing_s/step:{total} - timing_s/gen:4.0 - timing_s/update_actor:5.0 - "
            f"response_length/clip_ratio:0.0 - response_length/mean:6.0 - critic/score/mean:0.25")
        go = os.path.join(os.path.dirname(rollout), f"go-{step}")  # the test's go-ahead: it saw this step live
        deadline = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.02)
    out(P + "'Final validation metrics: None'")
"""


def stand_in(tmp_path: Path, code: str) -> Path:
    path = tmp_path / f"python-{uuid.uuid4().hex[:6]}"
    path.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -c {shlex.quote(textwrap.dedent(code))} \"$@\"\n")
    path.chmod(0o755)
    return path


def test_a_live_run_shows_its_generations_and_timing_as_they_come(qtbot, panel, tmp_path):
    panel.python.setText(str(stand_in(tmp_path, LIVE)))
    panel.folder.setText(str(tmp_path / "live"))
    panel.steps.setValue(2)
    assert panel.start()
    qtbot.waitUntil(lambda: "step 1" in " ".join(panel.insight.samples.verdict_lines()), timeout=60_000)
    assert panel.is_running  # step 1's generations show while the run goes on
    (tmp_path / "live" / "go-1").touch()
    qtbot.waitUntil(lambda: "step 2" in " ".join(panel.insight.samples.verdict_lines()), timeout=60_000)
    (tmp_path / "live" / "go-2").touch()
    qtbot.waitUntil(lambda: not panel.is_running, timeout=60_000)
    qtbot.waitUntil(lambda: panel.insight.samples.count.text() == "32 of 32 responses", timeout=30_000)
    lines = panel.insight.samples.verdict_lines()
    assert lines[0] == ("step 1: 16 responses to 4 prompts (4 each): scores differ within all 4 groups; no response "
                        "cut, empty, looping or in another language; mean score 0.25")
    qtbot.waitUntil(lambda: panel.insight.timing.summary is not None and
                    len(panel.insight.timing.summary.steps) == 2, timeout=30_000)
    assert panel.insight.timing.summary.steps[0].warmup
    meta = RunMeta.from_json(json.loads((tmp_path / "live" / "run.json").read_text()))
    assert meta.exit_code == 0 and meta.ended and meta.steps == 2
    assert meta.fingerprint == plan_fingerprint(panel.doc.plan)
    assert meta.rollout_dir == str(tmp_path / "live" / "rollout")


# --- the Review step ----------------------------------------------------------------------------------------

def test_review_shows_the_forecast_of_a_smoke_run_of_this_plan(qtbot, window, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    window.doc.load_preset("grpo-1gpu-smoke")
    plan = window.doc.plan
    folder = tmp_path / "runs" / "launch-1"
    shutil.copytree(RUN, folder)
    meta = start_meta(plan, smoke_plan(plan), steps=3, python="py", started="t", wizard_version="0")
    (folder / "run.json").write_text(json.dumps(meta.to_json()))
    review = window.page("review")
    with qtbot.waitSignal(review._finder.finished, timeout=30_000):
        window.go_to(review)
    assert review.forecast.isVisible()
    text = review.forecast.text()
    assert f"From the smoke run in {folder}" in text and "The full run:" in text
    window.doc.set_plan(plan.model_copy(update={"name": "other"}))  # the name is no part of the run
    assert review.forecast.isVisible()
    from wizard.core.plan.convert import apply_overrides

    window.doc.set_plan(apply_overrides(plan, ["data.train_batch_size=32"]))  # another plan: no forecast
    assert not review.forecast.isVisible()


def test_a_folder_with_validation_generations_only_shows_them(qtbot, panel, tmp_path):
    from tests.helpers.rollout_dumps import varied_step

    varied_step(tmp_path / "run" / "validation", step=3)
    (tmp_path / "run" / "run.log").write_text("(TaskRunnerV1 pid=1) step:3 - val-core/openai/gsm8k/acc/mean@1:0.5\n")
    opened(qtbot, panel, tmp_path / "run")
    view = panel.insight.samples
    assert view.current_kind() == "validation" and view.count.text() == "32 of 32 responses"
    assert view.verdict_lines()[0].startswith("step 3: 32 responses to 8 prompts (4 each)")
