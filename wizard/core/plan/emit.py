"""Write a Plan as verl launch material: ``run.sh`` (one override per line) and a Hydra YAML.

Both are text built here (pure); the adapters write them atomically.
Shell rules: every value is quoted. Values are single-quoted (nothing expands),
except references to the environment variables the plan declares in
``script_env`` (``$HOME``), which are written in double quotes so the shell
expands them as the original script did, and so are the harmless values the script computed when it ran
(``script_runtime``: ``$(date +%Y%m%d_%H%M)``, ``$RANDOM``, ``$(hostname)``; ``RUNTIME_OK``): run.sh computes them
again. Any other command substitution stays text: a plan file must never become a command. Secrets are never written: a Plan holds them as ``${oc.env:NAME}``
references that verl's Hydra resolves from the environment where it runs (wizard.core.secrets).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import yaml
from omegaconf._utils import get_omega_conf_dumper

from wizard import __version__
from wizard.core.verl.overrides import OverrideSyntaxError, parse_override
from wizard.core.plan.model import Plan
from wizard.core.plan.convert import plan_overrides
from wizard.core.secrets import hide_secrets, is_secret_name

ENTRY = "verl.trainer.main_ppo"
RUN_SH, CONFIG_YAML, PLAN_JSON = "run.sh", "config.yaml", "plan.json"  # the files a plan is written as
_OC_ENV = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)")
_ENV_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
# what a launch script may compute at run time and run.sh computes again: a date, a random number, the host's name
# or CPU count, the user; nothing that runs anything else (a plan from elsewhere is data, never a command)
RUNTIME_OK = re.compile(r"\$RANDOM|\$\(\s*(?:date(?: +[-+%A-Za-z0-9_:./]+)*|nproc|hostname(?: -s)?|whoami)\s*\)")


@dataclass
class Emitted:
    overrides: list[str]
    env: list[str]  # environment variables the launch reads
    notes: list[str] = field(default_factory=list)


def single_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def shell_word(text: str, env: set[str], runtime: frozenset[str] = frozenset()) -> str:
    """Quote ``text`` as one shell word, keeping ``$NAME`` expansion only for names in ``env``, and the run-time
    values in ``runtime`` (``$(date +%s)``) only where ``RUNTIME_OK`` allows them."""
    keep = []
    for m in _ENV_REF.finditer(text):
        name = m.group(1) or m.group(2)
        if name in env:
            keep.append((m.start(), m.end(), "${" + name + "}"))
    for m in RUNTIME_OK.finditer(text):
        if m.group(0) in runtime and not any(a < m.end() and m.start() < b for a, b, _ in keep):
            keep.append((m.start(), m.end(), m.group(0)))
    if not keep:
        return single_quote(text)
    out, pos = [], 0
    for start, end, raw in sorted(keep):
        out.append(_dq_escape(text[pos:start]))
        out.append(raw)
        pos = end
    out.append(_dq_escape(text[pos:]))
    return '"' + "".join(out) + '"'


def _dq_escape(text: str) -> str:
    return re.sub(r'([\\"`$])', r"\\\1", text)


def override_word(override: str, env: set[str], runtime: frozenset[str] = frozenset()) -> str:
    """``key='value'``: the key bare (it is [A-Za-z0-9_.+]), the value quoted."""
    key, sep, value = override.partition("=")
    if not sep or not re.fullmatch(r"\+{0,2}[A-Za-z0-9_.@/\-]+", key):
        return shell_word(override, env, runtime)
    return key + "=" + shell_word(value, env, runtime)


def emit_overrides(plan: Plan) -> Emitted:
    """The plan's overrides, and the environment variables the launch reads: those the script read (``$HOME``,
    expanded by the shell) and those verl's Hydra reads (``${oc.env:NAME}``: secrets, which a Plan never holds
    as values; see wizard.core.secrets). An override that is not a plan's (a caller's own) is hidden too."""
    env = set(plan.script_env)
    overrides, notes = hide_secrets(plan_overrides(plan))
    for text in overrides:
        env.update(_OC_ENV.findall(text))
    return Emitted(overrides=overrides, env=sorted(env), notes=notes + _secret_notes(overrides))


def _secret_notes(overrides: list[str]) -> list[str]:
    keys = [t.split("=", 1)[0].lstrip("+~") for t in overrides if _OC_ENV.search(t)]
    names = sorted({n for t in overrides for n in _OC_ENV.findall(t) if is_secret_name(n)})
    if not names:
        return []
    return [f"{', '.join(keys)} read{'s' if len(keys) == 1 else ''} {', '.join(names)} from the environment where "
            "verl runs (the value is never written): set it there"]


def render_run_sh(plan: Plan, emitted: Emitted | None = None) -> str:
    emitted = emitted or emit_overrides(plan)
    env = set(emitted.env)
    lines = [
        "#!/usr/bin/env bash",
        f"# verl {plan.verl_version} launch script, written by verl-wizard {__version__}"
        + (f" from the plan {plan.name!r}" if plan.name else "")
        + ".",
        "# Run it as: bash run.sh [more Hydra overrides]   (set PYTHON to pick the interpreter)",
    ]
    if emitted.env:
        lines.append("# Reads from the environment: " + ", ".join(emitted.env))
    lines += ["set -euo pipefail", 'PYTHON="${PYTHON:-python3}"', "export PYTHONUNBUFFERED=1", ""]
    args = [f'exec "$PYTHON" -m {ENTRY}']
    if plan.config_path:
        args.append("--config-path=" + shell_word(plan.config_path, env))
    if plan.config_name != "ppo_trainer" or plan.config_path:
        args.append("--config-name=" + shell_word(plan.config_name, env))
    runtime = frozenset(plan.script_runtime)
    args += [override_word(o, env, runtime) for o in emitted.overrides]
    args.append('"$@"')
    lines.append(" \\\n    ".join(args))
    return "\n".join(lines) + "\n"


class YamlEmitError(ValueError):
    pass


def env_to_oc(value, env: set[str]):
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: "${oc.env:" + (m.group(1) or m.group(2)) + "}" if (m.group(1) or m.group(2)) in env else m.group(0), value)
    if isinstance(value, list):
        return [env_to_oc(v, env) for v in value]
    if isinstance(value, dict):
        return {k: env_to_oc(v, env) for k, v in value.items()}
    return value


def render_yaml(plan: Plan, emitted: Emitted | None = None, groups: tuple[str, ...] = ("model_engine",)) -> tuple[str, list[str]]:
    """A primary Hydra config for ``--config-path DIR --config-name NAME``.

    Returns (text, command_line_only): deletions (``~key``) cannot be written in YAML
    and are returned to be passed on the command line.
    """
    emitted = emitted or emit_overrides(plan)
    env = set(emitted.env)
    body: dict = {}
    group_choices: list[tuple[str, str]] = []
    cli_only: list[str] = []
    base = {"ppo_trainer": "ppo_trainer", "ppo_megatron_trainer": "ppo_megatron_trainer"}.get(plan.config_name)
    if base is None or plan.config_path:
        raise YamlEmitError(f"a YAML over --config-name={plan.config_name} (own config dir) is not supported; use run.sh")
    for text in emitted.overrides:
        try:
            p = parse_override(text)
        except OverrideSyntaxError:  # Hydra cannot read it (check says why): it stays on the command line as written
            cli_only.append(text)
            continue
        if p.kind == "~" or p.package is not None or p.is_sweep:
            cli_only.append(text)
            continue
        if p.is_plain and p.key in groups:
            group_choices.append((p.key, p.value()))
            continue
        node = body
        parts = p.key.split(".")
        for part in parts[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        node[parts[-1]] = env_to_oc(p.value(), env)
    defaults: list = [base] + [{f"override {g}": c} for g, c in group_choices] + ["_self_"]
    doc = {"hydra": {"searchpath": ["pkg://verl.trainer.config"]}, "defaults": defaults, **body}
    header = [
        f"# verl {plan.verl_version} config written by verl-wizard {__version__}"
        + (f" from the plan {plan.name!r}" if plan.name else "")
        + ".",
        "# Run it as: python3 -m verl.trainer.main_ppo --config-path=\"$PWD\" --config-name=<this file without .yaml>",
    ]
    if env:
        header.append("# Reads from the environment (oc.env): " + ", ".join(sorted(env)))
    if cli_only:
        header.append("# Pass these on the command line too (YAML cannot delete keys): " + " ".join(cli_only))
    for key, found in literal_runtime(emitted.overrides, plan.script_runtime):
        header.append(f"# {key} holds {found} as text: run.sh computes it when it runs, YAML cannot, so verl reads "
                      f"it as written here; set {key}=... on the command line (or edit it here) for a computed value")
    return "\n".join(header) + "\n" + _omegaconf_yaml(doc), cli_only


def string_values(overrides: list[str]) -> list[tuple[str, str]]:
    """(key, value) of each override whose value is a string (words that do not parse are skipped)."""
    out = []
    for text in overrides:
        try:
            p = parse_override(text)
        except OverrideSyntaxError:
            continue
        value = p.value() if p.value_text is not None else None
        if isinstance(value, str):
            out.append((p.key, value))
    return out


def literal_runtime(overrides: list[str], runtime: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """(key, the value computed at run time it holds) for each override whose value holds one of ``runtime``
    (``$(date +%Y%m%d_%H%M)``): run.sh computes them again, a YAML config keeps them as text."""
    return [(key, next(f for f in runtime if f in value)) for key, value in string_values(overrides)
            if any(f in value for f in runtime)]


def _omegaconf_yaml(doc: dict) -> str:
    """``OmegaConf.to_yaml(OmegaConf.create(doc))`` for a tree of plain values, without building the config (most
    of an edit's time went there): OmegaConf's own YAML dumper, with its settings (the same text, tested)."""
    return yaml.dump(doc, default_flow_style=False, allow_unicode=True, sort_keys=False, Dumper=get_omega_conf_dumper())


def render_files(plan: Plan) -> tuple[dict[str, str], list[str], list[str]]:
    """{file name: text} of run.sh, config.yaml and plan.json, the overrides run.sh holds, and notes; nothing is
    written (``wizard.usecases.writing`` writes them)."""
    emitted = emit_overrides(plan)
    files = {RUN_SH: render_run_sh(plan, emitted)}
    notes = list(emitted.notes)
    try:
        text, cli_only = render_yaml(plan, emitted)
        files[CONFIG_YAML] = text
        if cli_only:
            notes.append(f"{CONFIG_YAML} cannot hold {', '.join(cli_only)}; pass them on the command line")
        for key, found in literal_runtime(emitted.overrides, plan.script_runtime):
            notes.append(f"{CONFIG_YAML} keeps {key}'s {found} as text (run.sh computes it when it runs)")
    except YamlEmitError as exc:
        notes.append(f"no {CONFIG_YAML}: {exc}")
    files[PLAN_JSON] = json.dumps(plan.model_dump(mode="json"), indent=2) + "\n"
    return files, emitted.overrides, notes
