"""Health alarms from metric series, built the way RunLog builds them from console lines."""

import math

from wizard.core.findings import Severity
from wizard.core.run.health import Thresholds, health
from wizard.core.run.logparse import RunLog


def series_from(lines):
    state = RunLog()
    for line in lines:
        state.feed(line)
    return state.series


def steps(name, values, start=1):
    return [f"(TaskRunnerV1 pid=7) step:{i} - {name}:np.float64({v})" for i, v in enumerate(values, start)]


def rules(found):
    return [f.rule for f in found]


def test_healthy_run_raises_nothing():
    s = series_from(
        [f"(TaskRunnerV1 pid=7) step:{i} - critic/score/mean:np.float64({0.1 * i}) - actor/kl_loss:np.float64(0.001) - "
         f"actor/entropy:np.float64({1.2 - 0.05 * i}) - actor/grad_norm:np.float64(0.4) - "
         f"response_length/mean:np.float64({200 + i}) - response_length/clip_ratio:np.float64(0.02)" for i in range(1, 6)])
    assert health(s, max_response_length=512, seconds_since_step=30) == []


def test_reward_all_zero_after_three_steps_but_not_before():
    assert health(series_from(steps("critic/score/mean", [0.0, 0.0]))) == []
    (f,) = health(series_from(steps("critic/score/mean", [0.0, 0.0, 0.0])))
    assert f.rule == "health.reward_zero" and "all 3 steps (1-3)" in f.message and "data_source" in f.fix


def test_step_zero_validation_does_not_count_as_training():
    lines = ["(TaskRunnerV1 pid=7) step:0 - critic/score/mean:np.float64(0.5)"] + steps("critic/score/mean", [0.0] * 3)
    assert rules(health(series_from(lines))) == ["health.reward_zero"]


def test_reward_nan_is_an_error():
    (f,) = health(series_from(steps("critic/score/mean", [0.1, "nan"])))
    assert f.rule == "health.reward_nan" and f.severity is Severity.ERROR and "step(s) 2" in f.message


def test_kl_above_threshold_and_rising():
    (f,) = health(series_from(steps("actor/kl_loss", [0.05, 0.12, 0.2])))
    assert f.rule == "health.kl_rising" and "0.2 at step 3" in f.message and "kl_loss_coef" in f.fix
    assert health(series_from(steps("actor/kl_loss", [0.3, 0.2, 0.15]))) == []  # high but falling
    assert health(series_from(steps("actor/kl_loss", [0.01, 0.02, 0.05]))) == []  # rising but low
    assert rules(health(series_from(steps("actor/kl_loss", [0.01, 0.02, 0.05])), Thresholds(kl_max=0.03))) == ["health.kl_rising"]


def test_response_length_collapse_and_limit():
    (f,) = health(series_from(steps("response_length/mean", [300, 250, 40])))
    assert f.rule == "health.length_collapse" and "40 tokens" in f.message and "300" in f.message
    (f,) = health(series_from(steps("response_length/clip_ratio", [0.1, 0.7])))
    assert f.rule == "health.length_at_limit" and "70%" in f.message
    (f,) = health(series_from(steps("response_length/mean", [500, 505, 510])), max_response_length=512)
    assert f.rule == "health.length_at_limit" and "512" in f.message


def test_entropy_collapse():
    (f,) = health(series_from(steps("actor/entropy", [1.5, 0.4, 0.01])))
    assert f.rule == "health.entropy_collapse" and "1.5 to 0.01" in f.message
    assert health(series_from(steps("actor/entropy", [0.04, 0.03, 0.03]))) == []  # low from the start: not a collapse


def test_grad_norm_nan_or_inf():
    (f,) = health(series_from(steps("actor/grad_norm", [0.5, "nan", "inf"])))
    assert f.rule == "health.grad_norm_nan" and f.severity is Severity.ERROR and "2, 3" in f.message


def test_no_new_step_for_n_minutes():
    s = series_from(steps("critic/score/mean", [0.1]))
    assert health(s, seconds_since_step=60) == []
    (f,) = health(s, seconds_since_step=20 * 60)
    assert f.rule == "health.no_progress" and "20 minutes since the last step" in f.message
    (f,) = health({}, seconds_since_step=16 * 60, gpus_busy=False)
    assert f.rule == "health.stalled" and "since the start" in f.message and "num_cpus" in f.fix
    assert health({}, Thresholds(stall_minutes=30), seconds_since_step=20 * 60) == []


def test_nan_in_a_series_is_kept():
    s = series_from(steps("x", ["nan"]))
    assert math.isnan(s["x"][0][1])


def test_ray_failing_to_reach_its_head_raises_an_alarm_within_a_few_attempts():
    from wizard.core.run.logparse import RunLog

    state = RunLog()
    line = "[2026-12-04 10:00:00,000 W 1 1] gcs_rpc_client.h:151: Failed to connect to GCS at address 127.0.0.1:6379 within 5 seconds."
    for n in range(1, 4):
        state.feed(line)
        alarms = rules(health(state.series, gcs_failures=state.gcs_failures, gcs_address=state.gcs_address,
                              seconds_since_step=5.0 * n))
        assert alarms == ([] if n < 3 else ["health.ray_head_unreachable"])  # minutes before the stall alarm
    (f,) = health(state.series, gcs_failures=state.gcs_failures, gcs_address=state.gcs_address)
    assert "127.0.0.1:6379" in f.message and "3 times" in f.message and f.severity.value == "error"
