"""A run as one Markdown file to paste into an issue: versions, GPUs, the plan's overrides, the findings (triage,
health alarms, samples, timing advice), the timing with the forecast, and the last lines of the log.

Nothing secret leaves: the whole text goes through ``wizard.core.secrets.scrub`` at the end (values of the
secret variables the caller passes as ``${NAME}``, values of secret-looking keys and known token shapes as
``<redacted>``), on top of the launch's own redaction of the log and the overrides written with secrets as
references. Then every control character (an escape sequence or a carriage return in a log line) is shown, not
written raw (``wizard.core.visible``). Pure: a ``RunRecord`` and the facts the caller found in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wizard.core.findings import Finding, sort_findings
from wizard.core.plan.emit import ENTRY, emit_overrides
from wizard.core.run import digest
from wizard.core.run.logfacts import outcome, versions_in_log
from wizard.core.run.logparse import strip_ansi
from wizard.core.run.record import RunRecord
from wizard.core.secrets import scrub
from wizard.core.visible import visible
from wizard.core.run.timing.forecast import Forecast
from wizard.core.run.timing.steps import TimingSummary, fmt_rate, fmt_s

ENV_PACKAGES = ("verl", "torch", "transformers", "tensordict", "ray", "TransferQueue", "cachetools", "vllm",
                "sglang", "flash-attn")
LOG_LINES = 200
_ICON = {"error": "**error**", "warning": "warning", "info": "note"}


def environment_summary(facts: Mapping) -> dict:
    """What a report keeps of doctor's probe (``wizard.adapters.verl_env.doctor.run_probe``): Python, packages, torch, driver."""
    packages = facts.get("packages") if isinstance(facts.get("packages"), Mapping) else {}
    torch = facts.get("torch") if isinstance(facts.get("torch"), Mapping) else {}
    driver = facts.get("driver") if isinstance(facts.get("driver"), Mapping) else {}
    cuda = driver.get("cuda")
    return {"python": (facts.get("python") or {}).get("version"),
            "executable": (facts.get("python") or {}).get("executable"),
            "packages": {name: packages.get(name) for name in ENV_PACKAGES if name in packages},
            "torch": torch.get("version") or packages.get("torch"),
            "driver_cuda": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None}


def _table(rows: Sequence[Sequence[str]], head: Sequence[str]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


def _environment(env: Mapping | None, record: RunRecord, wizard_version: str) -> list[str]:
    out = ["## Environment", ""]
    rows = [("verl-wizard", wizard_version)]
    if env:
        rows.append(("Python", env.get("python") or "?"))
        packages = env.get("packages") or {}
        rows += [(name, packages.get(name) or "not installed") for name in ENV_PACKAGES if name in packages]
        if env.get("torch"):
            rows.append(("torch build", env["torch"]))
        if env.get("driver_cuda"):
            rows.append(("driver's CUDA", env["driver_cuda"]))
    out += _table(rows, ("", "version"))
    if not env:
        out += ["", "The environment was not probed for this run: `verl-wizard doctor --python PATH` in the run's "
                "environment prints it (or `verl-wizard report --python PATH`)."]
    seen = versions_in_log(record.log_tail)
    if seen:
        out += ["", "Seen in the log: " + ", ".join(f"{k} {v}" for k, v in seen.items()) + "."]
    return out


def _gpus(record: RunRecord) -> list[str]:
    out = ["## GPUs", ""]
    gpus = record.meta.gpus if record.meta else None
    if gpus:
        for g in gpus:
            mem = f" ({g['memory_mib']:,} MiB)" if g.get("memory_mib") else ""
            out.append(f"- GPU {g.get('index')}: {g.get('name')}{mem}")
        return out
    plan = record.plan
    if plan is not None and plan.hardware.n_gpus_per_node:
        model = f" {plan.hardware.gpu}" if plan.hardware.gpu else ""
        out.append(f"- as planned: {plan.hardware.nnodes or 1} node(s) × {plan.hardware.n_gpus_per_node}{model} "
                   "GPU(s) (the launch did not record the GPUs it saw)")
    else:
        out.append("- not recorded")
    return out


def _plan(record: RunRecord) -> list[str]:
    out = ["## Plan", ""]
    if record.plan is None:
        return out + ["Not recorded (no run.json or command.sh in the folder)."]
    words = emit_overrides(record.plan).overrides  # secret-looking keys as ${NAME}
    which = ("The overrides of the smoke run's command (its step count and validation are the smoke run's)"
             if record.plan_smoke_only else "The plan's overrides (the smoke run added its own step count, logging "
             "and validation)")
    head = f"python3 -m {ENTRY}" + (f" --config-name={record.plan.config_name}"
                                    if record.plan.config_name != "ppo_trainer" else "")
    return out + [which + ":", "", "```text", head, *(f"  {w}" for w in words), "```"]


def _findings(title: str, findings: Sequence[Finding], none: str) -> list[str]:
    out = [f"### {title}", ""]
    if not findings:
        return out + [none]
    for f in sort_findings(list(findings)):
        out.append(f"- {_ICON[f.severity.value]} `{f.rule}`: {f.message}" + (f" Fix: {f.fix}" if f.fix else ""))
    return out


def _samples(record: RunRecord) -> tuple[list[str], list[Finding]]:
    steps = digest.inspect_steps(record.rollout, record.state, digest.max_response_length(record))
    if not steps:
        return [f"- {_no_generations(record)}"], []
    lines = [f"- {s.verdict.line}" for s in steps]
    return lines, steps[-1].verdict.findings


def _no_generations(record: RunRecord) -> str:
    """Why there are no training generations to read: the dump was not asked for, or asked for and the run never got
    to write one."""
    from wizard.core.run.smoke import dump_dirs

    if record.validation:
        return "only validation generations were dumped"
    rollout_dir = dump_dirs(record.plan)[0] if record.plan is not None else None
    if rollout_dir is None:
        return "the run dumped no generations (trainer.rollout_data_dir was not set)"
    if record.state.last_step is None:
        return (f"no generations: trainer.rollout_data_dir={rollout_dir} was set, but the run never finished a "
                "training step")
    return f"no generations were found in trainer.rollout_data_dir={rollout_dir} (steps ran; was the folder moved?)"


def _timing(summary: TimingSummary, fc: Forecast | str) -> list[str]:
    out = ["## Timing", ""]
    if not summary.steps:
        return out + ["No training step finished."]
    phases = summary.shown_phases()
    head = ["step", "total", *phases, "gen tokens/s", "update tokens/s", "GPU busy"]
    rows = []
    for s in summary.steps:
        rows.append([f"{s.step}{' (warm-up)' if s.warmup else ''}", f"{s.total:.1f} s",
                     *(f"{s.phases[p]:.1f}" for p in phases), fmt_rate(s.gen_tokens_s),
                     fmt_rate(s.update_tokens_s), f"{s.gpu_busy:.0f} %" if s.gpu_busy is not None else "?"])
    out += _table(rows, head)
    out += ["", f"Steady step: {fmt_s(summary.step_s)} (median of steps {', '.join(map(str, summary.steady))}); "
            "phases in seconds."]
    if isinstance(fc, str):
        out += ["", f"Forecast: none ({fc})."]
    else:
        out += ["", fc.line(), "", "Assumptions: " + "; ".join(fc.assumptions) + "."]
    return out


def _log(record: RunRecord, n: int) -> list[str]:
    tail = [strip_ansi(line).expandtabs(8) for line in record.log_tail[-n:]]  # Ray's lines have tabs
    if not tail:
        return ["## Log", "", "No run.log in the folder."]
    return ["## Log", "", "<details>", f"<summary>run.log: the last {len(tail)} of {record.log_lines} lines</summary>",
            "", "```text", *(line.replace("```", "'''") for line in tail), "```", "", "</details>"]


def render_report(record: RunRecord, *, secrets: Mapping[str, str], environment: Mapping | None,
                  wizard_version: str, written: str, log_lines: int = LOG_LINES) -> str:
    """The report's Markdown. ``secrets``: NAME -> value of the secret variables in the environment (never shown);
    ``environment``: ``environment_summary`` of a probe, when there was one; ``written``: the date to print."""
    summary = digest.timing_of(record)
    fc = digest.forecast_of(record, summary)
    sample_lines, sample_findings = _samples(record)
    name = (record.plan.trainer.experiment_name if record.plan and record.plan.trainer.experiment_name else None)
    lines = [f"# verl run report: {name or record.name}", "",
             f"{outcome(record).capitalize()}. Folder `{record.name}`; written by verl-wizard {wizard_version} on "
             f"{written}. Secrets are shown as `${{NAME}}` or `<redacted>`.", ""]
    lines += _environment(environment, record, wizard_version) + [""] + _gpus(record) + [""] + _plan(record) + [""]
    lines += ["## Findings", ""]
    lines += _findings("Failure", digest.triage_of(record), "No failure text the triage knows.") + [""]
    lines += _findings("Health of the metrics", digest.health_of(record), "No alarm.") + [""]
    lines += ["### Samples", "", *sample_lines, ""]
    if sample_findings:
        lines += [*_findings("Samples, last step", sample_findings, "")[2:], ""]
    lines += _findings("Timing advice", summary.advice, "None.") + [""]
    lines += _timing(summary, fc) + [""] + _log(record, log_lines)
    if record.problems:
        lines += ["", "Not read: " + "; ".join(record.problems[:10]) + "."]
    return visible(scrub("\n".join(lines) + "\n", secrets), newline=None)  # scrubbed first: a secret is matched raw


__all__ = ["render_report", "environment_summary", "ENV_PACKAGES"]
