"""Where a step's time goes, the warm-up told apart, advice tied to the numbers, and the full run's forecast:
on the recorded H200 run (tests/data/verl-run-h200: step 1 62.6 s, steps 2-3 15.1 and 12.8 s) and made-up series."""

from pathlib import Path

import pytest

from wizard.core.plan.convert import apply_overrides, plan_from_overrides
from wizard.core.run.logfacts import dataset_size, startup_seconds, versions_in_log
from wizard.core.run.logparse import RunLog
from wizard.core.run.record import busy_by_step, step_in_progress, trace_lines
from wizard.core.run.timing.advice import advise
from wizard.core.run.timing.forecast import forecast, schedule_of
from wizard.core.run.timing.steps import fmt_s, summarize

RUN = Path(__file__).resolve().parents[1] / "data" / "verl-run-h200"


@pytest.fixture(scope="module")
def state():
    log = RunLog()
    for line in (RUN / "metrics.jsonl").read_text().splitlines():
        log.feed_jsonl(line)
    return log


@pytest.fixture(scope="module")
def lines():
    return (RUN / "run.log").read_text().splitlines()


def series(steps: dict[int, dict[str, float]]):
    log = RunLog()
    from wizard.core.run.logparse import StepMetrics

    for step, data in steps.items():
        log.add_metrics(StepMetrics(step, {f"timing_s/{k}": v for k, v in data.items()}))
    return log.series


def test_the_recorded_runs_steps_by_phase_with_step_one_as_warm_up(state):
    s = summarize(state.series)
    assert [round(t.total, 1) for t in s.steps] == [62.6, 15.1, 12.8]
    assert [t.warmup for t in s.steps] == [True, False, False] and s.steady == [2, 3]
    one = s.steps[0].phases
    assert round(one["generation"], 1) == 12.1 and round(one["other"], 1) == 30.2  # the warm-up is mostly "other"
    assert round(s.steps[1].phases["update"], 2) == 6.74
    assert s.shown_phases() == ("generation", "log-probs", "reference", "update", "weight sync", "other")
    assert s.step_s == pytest.approx((15.1265 + 12.7709) / 2, abs=1e-3)
    assert round(s.steps[2].gen_tokens_s) == 10049  # 1000 / timing_per_token_ms/gen
    assert round(s.update_tokens_s) == 3208
    assert s.share("update") == pytest.approx(0.496, abs=0.002)


def test_advice_on_the_recorded_run_names_the_update_and_the_warm_up(state):
    plan = plan_from_overrides(["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8"])
    advice = advise(summarize(state.series), state.series, plan)
    assert [f.rule for f in advice] == ["timing.warmup", "timing.update_bound"]
    assert advice[0].message.startswith("Step 1 took 63 s, 4.5× the steady 14 s of steps 2, 3: warm-up")
    update = advice[1]
    assert update.message == "Update takes 50 % of a step (6.9 s of 14 s) at 3.2k tokens/s."
    assert "use_dynamic_bsz=true" in update.fix and "ppo_micro_batch_size_per_gpu (now 8)" in update.fix
    assert update.fix_overrides == ["actor_rollout_ref.actor.use_dynamic_bsz=true"] and not update.fix_auto


def test_generation_bound_ties_the_advice_to_the_clipped_lengths():
    s = series({1: {"step": 10.0, "gen": 7.0, "update_actor": 2.0}, 2: {"step": 10.0, "gen": 7.0, "update_actor": 2.0}})
    s = dict(s, **{"response_length/clip_ratio": [(1, 0.4), (2, 0.45)]})
    plan = plan_from_overrides(["actor_rollout_ref.rollout.gpu_memory_utilization=0.4", "data.max_response_length=1024"])
    (gen,) = advise(summarize(s), s, plan)
    assert gen.rule == "timing.generation_bound"
    assert gen.message == ("Generation takes 70 % of a step (7.0 s of 10 s); 45 % of responses run to the "
                           "1024-token limit, and generation lasts as long as the longest response.")
    assert "gpu_memory_utilization (now 0.4)" in gen.fix and "max_response_length (now 1024)" in gen.fix


def test_generation_advice_quotes_the_runs_values_never_a_guessed_default():
    """A run folder without its plan: the advice once said 'verl's default 0.5' and 'TP 2' for a run that used
    others; a value the run set with ++ (kept verbatim in the plan's passthrough) is the run's own."""
    s = series({1: {"step": 10.0, "gen": 7.0, "update_actor": 2.0}, 2: {"step": 10.0, "gen": 7.0, "update_actor": 2.0}})
    (unknown,) = advise(summarize(s), s, None)
    assert "verl's default" not in unknown.fix and "gpu_memory_utilization if" in unknown.fix
    forced = plan_from_overrides(["++actor_rollout_ref.rollout.gpu_memory_utilization=0.7",
                                  "actor_rollout_ref.rollout.tensor_model_parallel_size=1"])
    (gen,) = advise(summarize(s), s, forced)
    assert "gpu_memory_utilization (now 0.7)" in gen.fix and "tensor_model_parallel_size (now 1)" in gen.fix
    (default,) = advise(summarize(s), s, plan_from_overrides([]))
    assert "gpu_memory_utilization (verl's default 0.5)" in default.fix  # a known plan that leaves it unset


def test_weight_sync_and_idle_gpus_are_explained():
    s = series({1: {"step": 4.0, "gen": 1.0, "update_actor": 1.0, "update_weights": 1.5}})
    plan = plan_from_overrides(["actor_rollout_ref.actor.fsdp_config.param_offload=true"])
    summary = summarize(s, gpu_busy={1: 30.0})
    rules = {f.rule: f for f in advise(summary, s, plan)}
    assert "param_offload=true" in rules["timing.sync_bound"].message
    assert rules["timing.gpus_idle"].message.startswith("The GPUs were busy 30 % of the steady steps' time")


def test_one_step_is_not_called_warm_up_and_nothing_finished_gives_no_advice():
    s = summarize(series({1: {"step": 20.0, "gen": 5.0}}))
    assert s.warmup is None and s.step_s == 20.0
    empty = summarize({})
    assert empty.steps == [] and advise(empty, {}) == []


def test_the_forecast_of_the_recorded_run(state, lines):
    plan = plan_from_overrides((RUN / "command.sh").read_text().split()[7:-1])  # the overrides of the command
    s = summarize(state.series)
    assert dataset_size(lines) == 128 and startup_seconds(lines) == pytest.approx(240.961)
    fc = forecast(s, schedule_of(plan, smoke_only=True), dataset_size=128, startup_s=startup_seconds(lines))
    assert fc.steps == 8 and fc.schedule == "1 epoch × 8 steps of 16 prompts from 128 rows"
    assert fc.n_gpus == 1 and fc.gpu_hours == pytest.approx(fc.total_s / 3600)
    assert fc.line() == ("The full run: 8 steps (1 epoch × 8 steps of 16 prompts from 128 rows), about 6 min 41 s on "
                         "1 GPU (0.11 GPU-hours): 1 min 52 s of training + 4 min 1 s of start-up + 49 s of first-step "
                         "warm-up.")
    assert any("only the smoke run's command" in a for a in fc.assumptions)


def test_the_plans_own_schedule_and_validations_count(state):
    base = plan_from_overrides(["data.train_batch_size=16", "trainer.total_epochs=3", "trainer.test_freq=5",
                                "trainer.n_gpus_per_node=8", "trainer.nnodes=2"])
    s = summarize(state.series)
    fc = forecast(s, schedule_of(base), dataset_size=1000, startup_s=None)
    assert fc.steps == 3 * 62 and fc.n_gpus == 16
    assert fc.validations == 1 + 186 // 5 + 1  # before training (verl's default), every 5 steps, the last step
    assert any("validations not counted" in a for a in fc.assumptions)  # the smoke run timed none
    assert any("start-up not counted" in a for a in fc.assumptions)
    capped = forecast(s, schedule_of(apply_overrides(base, ["trainer.total_training_steps=40"])),
                      dataset_size=1000, startup_s=None)
    assert capped.steps == 40 and capped.schedule == "trainer.total_training_steps=40"
    assert forecast(s, schedule_of(base), dataset_size=None, startup_s=None).startswith("the training set's size")
    assert "smaller than one batch" in forecast(s, schedule_of(base), dataset_size=8, startup_s=None)
    assert forecast(summarize({}), schedule_of(base), dataset_size=10, startup_s=None) == \
        "no training step has finished yet"


def test_gpu_samples_by_step():
    state = RunLog()
    rows = trace_lines(0.5, step_in_progress(state), [(0, 3, 1 << 30), (1, None, None)])
    state.feed("(TaskRunnerV1 pid=1) INFO:2026-12-03 15:48:33,013:all initialize finished, ready to fit")
    rows += trace_lines(1.5, step_in_progress(state), [(0, 90, 60 << 30), (1, 70, 60 << 30)])
    rows += trace_lines(2.5, step_in_progress(state), [(0, 100, 60 << 30), (1, 80, 60 << 30)])
    assert rows[0] == "0.5,0,0,3,1024" and rows[1] == "0.5,0,1,,"
    assert busy_by_step(["time_s,step,gpu,util_percent,memory_mib", *rows, "garbage"]) == ({1: 85.0}, 2)


def test_versions_the_log_shows(lines):
    assert versions_in_log(lines) == {"Python": "3.12", "NCCL": "2.28.9+cuda13.0"}


@pytest.mark.parametrize("seconds, text", [(3.24, "3.2 s"), (48.2, "48 s"), (401, "6 min 41 s"), (1500, "25 min"),
                                           (8040, "2 h 14 min"), (3 * 86400 + 4 * 3600, "3 d 4 h"), (None, "?")])
def test_durations_in_words(seconds, text):
    assert fmt_s(seconds) == text
