"""What only this machine can tell about a config: do its data files exist, are they usable,
is there a checkpoint that resume_mode=auto would silently continue from.

The values come from the core's check (resolved as verl resolves them); ``$HOME`` and ``~``
are expanded as the launch shell would.
"""

from __future__ import annotations

import os
from pathlib import Path

from wizard.core.findings import Finding, Severity, Stage
from wizard.adapters.files.disk import exists, is_dir


def _paths(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _local(path: str) -> Path:
    return Path(os.path.expanduser(os.path.expandvars(path)))


# verl's examples/data_preprocess scripts by the dataset a path names, with the folder each writes by default
PREPARE = (("gsm8k", "gsm8k.py", "~/data/gsm8k"), ("geo3k", "geo3k.py", "~/data/geo3k"),
           ("hh_rlhf", "full_hh_rlhf.py", "~/data/full_hh_rlhf"), ("math", "math_dataset.py", "~/data/math"))


def preparation_hint(path: str) -> str:
    """How to make the data file ``path`` names: verl's preprocessing script for the dataset it is named after, or
    the wizard's converter for data of one's own."""
    name = path.lower()
    for word, script, folder in PREPARE:
        if word in name:
            return (f"Prepare it (verl's examples/data_preprocess/{script} writes {folder}/{{train,test}}.parquet), or "
                    "point the key at your data")
    return ("Point the key at your data (verl reads parquet rows with a prompt; verl-wizard data convert turns "
            "question/answer columns into them), or prepare a dataset with a script from verl's examples/data_preprocess")


def file_findings(facts: dict, deep: bool = False) -> list[Finding]:
    """Missing data files (always, cheap); with ``deep``, verl's data checks on the files that exist."""
    findings: list[Finding] = []
    existing: list[tuple[str, Path]] = []
    for key in ("data.train_files", "data.val_files"):
        for raw in _paths(facts.get(key)):
            path = _local(raw)
            if exists(path):
                existing.append((key, path))
                continue
            findings.append(Finding(
                rule="data.file_missing",
                severity=Severity.WARNING,
                stage=Stage.STARTUP,
                keys=[key],
                message=f"{key}: {raw} is not on this machine (looked for {path}); if it is missing where the run "
                "happens too, verl's TaskRunner fails loading it before training starts"
                + (" (verl always loads the validation files)" if key == "data.val_files" else ""),
                fix=preparation_hint(raw),
            ))
    findings += _code_findings(facts)
    findings += _resume_findings(facts)
    if deep:
        findings += _deep(facts, existing)
    return findings


def _code_files(facts: dict) -> list[str]:
    """Keys that name a Python file verl's workers load by path (not a pkg:// module)."""
    keys = ["reward.custom_reward_function.path", "trainer.v1.sampler.custom_sampler.path"]
    if facts.get("reward.reward_manager.source") == "importlib":
        keys.append("reward.reward_manager.module.path")
    return keys


def _code_findings(facts: dict) -> list[Finding]:
    """utils/import_utils.py:179: a file that is not there stops every worker that loads it."""
    out = []
    for key in _code_files(facts):
        raw = facts.get(key)
        if not isinstance(raw, str) or not raw or raw.startswith("pkg://"):
            continue
        path = _local(raw[len("file://"):] if raw.startswith("file://") else raw)
        if path.exists():
            continue
        out.append(Finding(
            rule="data.code_file_missing", severity=Severity.WARNING, stage=Stage.STARTUP, keys=[key],
            message=f"{key}: {raw} is not on this machine (looked for {path}); verl loads it in each worker, and a "
            f"missing file stops them at startup with: Custom module file not found: module_path={raw!r}"
            + ("" if path.is_absolute() else " (a relative path is resolved in each Ray worker's directory: use an "
               "absolute one)"),
            fix="Give the file's absolute path, on every node",
        ))
    return out


def _resume_findings(facts: dict) -> list[Finding]:
    if facts.get("trainer.resume_mode") != "auto" or not isinstance(facts.get("trainer.default_local_dir"), str):
        return []
    folder = _local(facts["trainer.default_local_dir"])
    steps = sorted(folder.glob("global_step_*")) if is_dir(folder) else []
    if not steps:
        return []
    return [Finding(
        rule="data.resume_existing",
        severity=Severity.WARNING,
        stage=Stage.ADVICE,
        keys=["trainer.resume_mode", "trainer.default_local_dir"],
        message=f"trainer.resume_mode=auto and {folder} already holds {len(steps)} checkpoint(s) (latest "
        f"{steps[-1].name}): this run continues that one instead of starting fresh",
        fix="trainer.resume_mode=disable for a fresh run, or a new trainer.experiment_name",
        fix_overrides=["trainer.resume_mode=disable"],
        fix_auto=False,
    )]


def _deep(facts: dict, existing: list[tuple[str, Path]]) -> list[Finding]:
    from wizard.adapters.files.dataset import DatasetError, check_file

    model = facts.get("actor_rollout_ref.model.path")
    model_dir = str(_local(model)) if isinstance(model, str) and is_dir(_local(model)) else None
    out: list[Finding] = []
    for key, path in existing:
        batch = facts.get("data.train_batch_size") if key == "data.train_files" else None
        try:
            report = check_file(
                path, batch_size=batch if isinstance(batch, int) else None, model_dir=model_dir,
                max_prompt_length=facts.get("data.max_prompt_length") if model_dir else None,
                filter_overlong=bool(facts.get("data.filter_overlong_prompts")),
                has_custom_reward=bool(facts.get("reward.custom_reward_function.path")),
                prompt_key=facts.get("data.prompt_key") or "prompt",
            )
        except (DatasetError, ValueError, OSError) as exc:
            out.append(Finding(rule="data.unreadable", severity=Severity.ERROR, stage=Stage.STARTUP, keys=[key],
                               message=f"{key}: {path}: {exc}", fix="Check the file"))
            continue
        out += [f.model_copy(update={"keys": f.keys or [key], "message": f"{path.name}: {f.message}"})
                for f in report.findings]
    return out
