"""Console and JSONL parsing on text in the shapes verl 0.9.1 and Ray 2.60 print (reference §5)."""

import json
import math

import pytest

from wizard.core.run.logparse import (
    RunLog,
    format_step,
    parse_jsonl_line,
    parse_metric_line,
    parse_value,
    split_line,
    strip_ansi,
)

ESC = "\x1b"
# A recorded-looking start of a run: driver lines, Ray's coloured actor prefix, verl's logger, tqdm, metrics.
LOG = f"""\
WARNING:2026-12-02 14:06:21,159:No supported accelerator detected. Registered: ('nvidia', 'huawei', 'amd'). Falling back to 'nvidia'.
[validate_config] All configuration checks passed successfully!
ray init kwargs: {{'num_cpus': 10, 'runtime_env': {{'env_vars': {{'TOKENIZERS_PARALLELISM': 'true'}}}}, '_node_ip_address': '127.0.0.1'}}
2026-12-02 14:06:31,183\tINFO worker.py:2029 -- Started a local Ray instance. View the dashboard at {ESC}[1m{ESC}[32mhttp://127.0.0.1:8265 {ESC}[39m{ESC}[22m
{ESC}[36m(TaskRunnerV1 pid=466){ESC}[0m Using dataset class: RLHFDataset
{ESC}[36m(TaskRunnerV1 pid=466){ESC}[0m INFO:2026-12-02 14:07:12,343:train and validate dataloader initialized, train dataset size: 32, val dataset size: 8
{ESC}[36m(TaskRunnerV1 pid=466){ESC}[0m INFO:2026-12-02 14:07:12,343:Total training steps: 5
{ESC}[36m(TaskRunnerV1 pid=466){ESC}[0m Creating file logger at /tmp/run/metrics.jsonl
{ESC}[36m(TaskRunnerV1 pid=466){ESC}[0m INFO:2026-12-02 14:09:01,002:all initialize finished, ready to fit
{ESC}[36m(TaskRunnerV1 pid=466){ESC}[0m step:1 - critic/score/mean:np.float64(0.0) - actor/entropy:np.float32(1.25) - actor/grad_norm:np.float64(0.5) - response_length/mean:np.float64(212.5) - training/global_step:1 - training/epoch:0 - actor/lr:1e-06
{ESC}[36m(TaskRunnerV1 pid=466){ESC}[0m Training Progress:  20%|##        | 1/5 [00:31<02:04, 31.00s/it]
{ESC}[36m(TaskRunnerV1 pid=466, ip=10.1.2.3){ESC}[0m step:2 - critic/score/mean:np.float64(0.25) - actor/entropy:np.float32(1.1) - actor/grad_norm:nan - response/aborted_ratio:np.int64(0) - training/flag:True
"""


def test_ansi_and_ray_prefix_are_taken_apart():
    line = split_line(f"{ESC}[36m(TaskRunnerV1 pid=466, ip=10.1.2.3){ESC}[0m INFO:2026-12-02 14:07:12,343:Total training steps: 5")
    assert (line.actor, line.pid, line.ip, line.level) == ("TaskRunnerV1", 466, "10.1.2.3", "INFO")
    assert line.text == "INFO:2026-12-02 14:07:12,343:Total training steps: 5"
    assert split_line("(raylet) [2026-12-02] something").actor == "raylet"
    assert split_line("(pid=77) hello [repeated 3x across cluster]").text == "hello"
    assert split_line("ValueError: Total available GPUs 0 is less than total desired GPUs 1").level == "ERROR"
    assert strip_ansi(f"{ESC}[1m{ESC}[32mhi{ESC}[39m") == "hi"


@pytest.mark.parametrize("text,value", [
    ("np.float64(0.25)", 0.25), ("np.int64(3)", 3.0), ("np.float32(0.1)", 0.1), ("True", 1.0), ("False", 0.0),
    ("1e-07", 1e-07), ("1.5", 1.5), ("-inf", -math.inf), ("np.float64(-2.5e-05)", -2.5e-05), ("'text'", None),
])
def test_values_as_pprint_prints_them(text, value):
    got = parse_value(text)
    assert got == pytest.approx(value) if value is not None else got is None


def test_nan_reads_as_nan():
    assert math.isnan(parse_value("nan")) and math.isnan(parse_value("np.float64(nan)"))


def test_the_verified_rendering_from_the_reference():
    m = parse_metric_line("step:3 - a:1.5 - b:np.float64(0.25) - c:np.int64(3) - d:np.float32(0.1) - f:True - g:nan - h:1e-07")
    assert m.step == 3 and m.source == "console"
    assert {k: v for k, v in m.data.items() if k != "g"} == {"a": 1.5, "b": 0.25, "c": 3.0, "d": pytest.approx(0.1),
                                                            "f": 1.0, "h": 1e-07}
    assert math.isnan(m.data["g"])
    assert parse_metric_line("step:0") .data == {}
    assert parse_metric_line("this step:1 is prose") is None
    assert parse_metric_line("(TaskRunnerV1 pid=1) step:x - a:1") is None


def test_metric_keys_with_slashes_and_at_signs():
    m = parse_metric_line("(TaskRunnerV1 pid=9) step:5 - val-core/openai/gsm8k/acc/mean@1:np.float64(0.125) - "
                          "val-aux/openai/gsm8k/reward/mean@1:np.float64(0.125)")
    assert m.data == {"val-core/openai/gsm8k/acc/mean@1": 0.125, "val-aux/openai/gsm8k/reward/mean@1": 0.125}


def test_file_logger_jsonl_with_orjson_nulls():
    m = parse_jsonl_line(json.dumps({"step": 2, "data": {"a": 1, "b": None, "c": True, "d": "text"}}))
    assert m.step == 2 and m.source == "file" and m.data["a"] == 1.0 and m.data["c"] == 1.0 and "d" not in m.data
    assert math.isnan(m.data["b"])
    assert parse_jsonl_line("{not json") is None and parse_jsonl_line('{"step": "1", "data": {}}') is None


def test_a_run_log_becomes_series_progress_and_markers():
    state = RunLog()
    events = [e for line in LOG.splitlines() for e in state.feed(line)]
    kinds = [e.kind for e in events]
    assert kinds == ["config_ok", "ray_started", "total_steps", "file_logger", "ready", "metrics", "progress", "metrics"]
    assert state.started_ray and state.total_steps == 5 and state.file_logger_path == "/tmp/run/metrics.jsonl"
    assert state.series["critic/score/mean"] == [(1, 0.0), (2, 0.25)]
    assert state.values("actor/entropy") == [pytest.approx(1.25), pytest.approx(1.1)]
    assert math.isnan(state.series["actor/grad_norm"][1][1])
    assert state.progress() == (2, 5)
    assert state.levels["INFO"] == 4 and state.levels["WARNING"] == 1
    progress = next(e for e in events if e.kind == "progress")
    assert progress.value == (1, 5)


def test_console_and_file_for_the_same_step_are_kept_once():
    state = RunLog()
    state.feed("(TaskRunnerV1 pid=1) step:1 - a:np.float64(0.5)")
    state.feed_jsonl('{"step": 1, "data": {"a": 0.5, "b": 2.0}}')
    state.feed_jsonl('{"step": 2, "data": {"a": 0.75}}')
    assert state.series["a"] == [(1, 0.5), (2, 0.75)] and state.series["b"] == [(1, 2.0)]


def test_format_step_names_the_few_metrics_people_watch():
    m = parse_metric_line("step:2 - critic/score/mean:np.float64(0.25) - actor/kl_loss:np.float64(0.00123) - x:1")
    assert format_step(m, 5) == "step 2/5: score/mean=0.25, kl_loss=0.00123"


@pytest.mark.verl
def test_real_lines_from_verls_own_logger_code():
    """Render metrics with verl's concat_dict_to_str and real numpy values, then parse them back."""
    import numpy as np
    import verl.utils.logger.aggregate_logger as agg
    data = {"critic/score/mean": np.float64(0.375), "response_length/mean": np.float32(211.5),
            "perf/total_num_tokens": np.int64(12345), "actor/grad_norm": float("nan"), "flag": True,
            "actor/lr": 1e-06, "dropped": "not a number"}
    line = agg.concat_dict_to_str(data, step=4)
    m = parse_metric_line(f"\x1b[36m(TaskRunnerV1 pid=123)\x1b[0m {line}")
    assert m.step == 4
    assert m.data["critic/score/mean"] == 0.375 and m.data["response_length/mean"] == 211.5
    assert m.data["perf/total_num_tokens"] == 12345 and m.data["flag"] == 1.0 and m.data["actor/lr"] == 1e-06
    assert math.isnan(m.data["actor/grad_norm"]) and "dropped" not in m.data


@pytest.mark.verl
def test_real_jsonl_from_verls_file_logger(tmp_path, monkeypatch):
    import numpy as np
    import verl.utils.tracking as tracking
    path = tmp_path / "m.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(path))
    logger = tracking.FileLogger("p", "e")
    logger.log({"critic/score/mean": np.float64(0.5), "actor/grad_norm": np.float64("nan"), "n": np.int64(7)}, step=3)
    logger.finish()
    (line,) = path.read_text().splitlines()
    m = parse_jsonl_line(line)
    assert m.step == 3 and m.data["critic/score/mean"] == 0.5 and m.data["n"] == 7 and math.isnan(m.data["actor/grad_norm"])


def test_python_warnings_are_warnings():
    from wizard.core.run.logparse import split_line

    line = "(TaskRunner pid=123) /usr/lib/python3/site-packages/torch/utils.py:42: UserWarning: TypedStorage is deprecated"
    assert split_line(line).level == "WARNING"
    assert split_line("nothing to see: a plain line").level is None
