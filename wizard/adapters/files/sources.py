"""Where a config comes from: a launch script, a YAML file, a plan file, or override words.

Both the CLI and the GUI go through here, so an import reads the same either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


from wizard.adapters.files.disk import read_text
from wizard.adapters.files.resources import load_schema
from wizard.adapters.files.user_input import load_json, load_yaml
from wizard.core.findings import Finding, Severity, Stage
from wizard.adapters.files.script_source import read_script, script_findings
from wizard.core.plan import Plan, load_plan, plan_from_overrides
from wizard.core.verl import yaml_to_overrides
from wizard.core.secrets import REDACTED, hide_secrets, is_secret_name, scrub


DATA_SUFFIXES = (".parquet", ".jsonl", ".arrow", ".csv")  # what verl or `data` reads as rows, never a config


@dataclass
class Source:
    overrides: list[str]
    config_name: str = "ppo_trainer"
    config_path: str | None = None
    script_env: list[str] = field(default_factory=list)
    script_runtime: list[str] = field(default_factory=list)  # $(date ...) the script computes when it runs
    findings: list[Finding] = field(default_factory=list)
    plan: Plan | None = None  # set when the source was a plan file

    def to_plan(self, name: str = "") -> Plan:
        if self.plan is not None:
            return self.plan
        return plan_from_overrides(
            self.overrides,
            config_name=self.config_name,
            config_path=self.config_path,
            script_env=self.script_env,
            script_runtime=self.script_runtime,
            name=name,
        )


def _note(rule: str, text: str, severity: Severity = Severity.WARNING) -> Finding:
    return Finding(rule=rule, severity=severity, stage=Stage.ADVICE, keys=[], message=text)


def from_overrides(words: list[str]) -> Source:
    """Override words as verl's command line takes them: ``--config-name NAME`` (``-cn``) among them picks the
    config they apply to (ppo_megatron_trainer: the Megatron engine), as it does after ``main_ppo``."""
    from wizard.core.scripts.reader import split_config

    name, path, overrides = split_config(list(words))
    findings = []
    if path is not None:
        findings.append(_note("overrides.config_path", f"--config-path {path}: the wizard composes verl's own configs; "
                              "to check a YAML of yours, give the file itself (verl-wizard check config.yaml)"))
    return Source(overrides=overrides, config_name=name, findings=findings)


def load_source(path: str) -> Source:
    """Read a config file; ValueError with a one-line reason when it cannot be read. Whatever it holds, no secret
    value comes out of here: overrides carry ``${oc.env:NAME}`` references, findings redacted text."""
    suffix = Path(path).suffix.lower()
    if suffix in DATA_SUFFIXES:
        raise ValueError(f"{path}: a dataset, not a config; check it with: verl-wizard data check {path} (or name it "
                         "in the config: data.train_files=...)")
    if "=" in path and not Path(path).exists():  # an override where the file goes: argparse took it for one
        raise ValueError(f"{path}: no such file; it reads as an override: give overrides without a file after -- "
                         f"(-- {path} ...), or each with --set")
    text = read_text(path)
    if suffix in (".yaml", ".yml"):
        source = _from_yaml(text, path)
    elif suffix == ".json":
        source = _from_plan_json(text, path)
    elif suffix in (".sh", ".bash") or text.startswith("#!") or "main_ppo" in text:
        source = _from_script(text, path)
    else:
        raise ValueError(f"{path}: not a launch script (.sh), a YAML config (.yaml) or a plan (.json)")
    return _without_secrets(source)


def _without_secrets(source: Source) -> Source:
    source.overrides = hide_secrets(source.overrides)[0]
    source.findings = [f.model_copy(update={"message": scrub(f.message),
                                            "data": _scrub_data(getattr(f, "data", None))})
                       for f in source.findings]
    return source


def _scrub_data(data):
    """A finding's data with secret-named knobs' defaults (``${HF_TOKEN:-hf_...}``) and credentials redacted."""
    if isinstance(data, dict):
        named = data.get("name") if isinstance(data.get("name"), str) else None
        return {k: (REDACTED if v and isinstance(k, str) and (is_secret_name(k) or (k == "value" and named and
                                                                                    is_secret_name(named)))
                    else _scrub_data(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [_scrub_data(v) for v in data]
    return scrub(data) if isinstance(data, str) else data


def _from_script(text: str, path: str) -> Source:
    script = read_script(text, path)
    return Source(
        overrides=script.args,
        config_name=script.config_name,
        config_path=script.config_path,
        script_env=script.env,
        script_runtime=script.runtime_values,
        findings=script_findings(script),
    )


def _from_yaml(text: str, path: str) -> Source:
    doc = load_yaml(text, path)  # bounded: size, depth, aliases; ValueError (one line) otherwise
    if isinstance(doc, dict) and "schema_version" in doc and "verl_version" in doc:
        return _plan_source(doc, path)  # a verl-wizard plan (a preset) written as YAML, not a verl config
    try:
        converted = yaml_to_overrides(doc, load_schema())
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    findings = [_note("yaml.read", w) for w in converted.warnings]
    for key in converted.unknown_keys:
        findings.append(
            Finding(
                rule="yaml.unknown_key",
                severity=Severity.WARNING,
                stage=Stage.ADVICE,
                keys=[key],
                message=f"{key} is not a verl 0.9.1 key: Hydra merges it from a YAML without complaint, and verl "
                "never reads it",
                fix="Check the spelling against verl's config",
            )
        )
    findings += _shell_text(converted.overrides)
    return Source(overrides=converted.overrides, config_name=converted.config_name, findings=findings)


_SHELL = re.compile(r"\$\([^)]*\)|`[^`]*`")  # a command substitution: a shell runs it, a YAML config never does


def _shell_text(overrides: list[str]) -> list[Finding]:
    """A YAML value holding ``$(date ...)`` (imported from a script, whose run.sh computes it): verl reads the text."""
    from wizard.core.plan import string_values

    out = []
    for key, value in string_values(overrides):
        m = _SHELL.search(value)
        if m:
            out.append(Finding(
                rule="yaml.shell_text", severity=Severity.WARNING, stage=Stage.ADVICE, keys=[key],
                message=f"{key} holds {m.group(0)} as text: a YAML config runs no shell, so verl reads "
                f"{value!r} as written (a launch script would have computed it)",
                fix=f"Write the value out, or set {key}=... on the command line where a shell computes it"))
    return out


def _from_plan_json(text: str, path: str) -> Source:
    return _plan_source(load_json(text, path), path)


def _plan_source(doc, path: str) -> Source:
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a verl-wizard plan (the top level is not a mapping)")
    try:
        plan = load_plan(doc)
    except ValueError as exc:  # pydantic ValidationError is a ValueError
        first = str(exc).splitlines()
        raise ValueError(f"{path}: not a verl-wizard plan: {' '.join(first[:3])}") from None
    from wizard.core.plan import plan_overrides

    return Source(
        overrides=plan_overrides(plan),
        config_name=plan.config_name,
        config_path=plan.config_path,
        script_env=plan.script_env,
        script_runtime=plan.script_runtime,
        plan=plan,
    )
