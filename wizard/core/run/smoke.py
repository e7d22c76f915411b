"""A smoke run of a plan: the overrides that make it short and observable, and the exact environment.

Pure: the plan and the facts the adapter found (is the model a local folder, the environment's
values) in; the command words and the environment additions out. The launcher runs exactly this, and
``launch --dry-run`` prints exactly this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from wizard.core.plan.emit import ENTRY, emit_overrides, shell_word
from wizard.core.verl.overrides import OverrideSyntaxError, parse_override
from wizard.core.plan.model import Plan
from wizard.core.plan.convert import apply_overrides
from wizard.core.secrets import is_secret_name
from wizard.core.verl.keys import ATTN_KEY

VALIDATION = ("end", "none", "start", "both")
# verl's V1 trainer keeps a TaskRunner, the TransferQueue controller and its storage units on one logical
# CPU each; with fewer Ray CPUs it hangs without a message (reference §3.7 T3).
MIN_RAY_CPUS = 10
NODE_IP_KEY = "ray_kwargs.ray_init._node_ip_address"
# verl dumps every step's generations as <dir>/<step>.jsonl when these are set (trainer/ppo/v1/trainer_base.py)
DUMP_KEYS = (("trainer.rollout_data_dir", "rollout"), ("trainer.validation_data_dir", "validation"))
LOOPBACK = "127.0.0.1"
# verl 0.9.1 loads the actor and the reference with attn_implementation=flash_attention_2 unless the model's
# override_config names another; without flash-attn in the run's Python the model load fails.
SDPA_OVERRIDE = f"+{ATTN_KEY}=sdpa"
_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class SmokeOptions:
    steps: int = 5
    validation: str = "end"  # end: once after the last step; none; start: before training; both
    loopback: bool = True  # bind the run's own Ray instance to 127.0.0.1 (a local run needs nothing else)
    samples_dir: str | None = None  # the run folder: verl dumps the generations into its rollout/ and validation/
    # Does flash-attn import in the run's Python (the environment probe)? False: the launch adds SDPA_OVERRIDE
    # itself. None: not known, nothing added.
    flash_attn: bool | None = None

    def __post_init__(self):
        if self.steps < 1:
            raise ValueError(f"steps must be 1 or more, not {self.steps}")
        if self.validation not in VALIDATION:
            raise ValueError(f"validation must be one of {', '.join(VALIDATION)}, not {self.validation!r}")


@dataclass
class SmokeCommand:
    """``python`` + ``args`` is the run. ``display`` is the same words with secrets and environment
    references left as ``${NAME}`` (what logs and --dry-run show); ``env`` is what the launch adds to the
    environment; ``reads`` the variables the overrides expand."""

    args: list[str]
    display: list[str]
    env: dict[str, str]
    reads: list[str]
    secrets: list[str] = field(default_factory=list)  # names of secret variables whose values must not be logged
    missing: list[str] = field(default_factory=list)  # referenced variables that are not set


def _touches(plan_overrides: list[str], key: str) -> bool:
    for text in plan_overrides:
        try:
            k = parse_override(text).key
        except OverrideSyntaxError:
            continue
        if k == key or k.startswith(key + ".") or key.startswith(k + "."):
            return True
    return False


def smoke_overrides(plan: Plan, opts: SmokeOptions = SmokeOptions()) -> list[str]:
    """The edits that make ``plan`` a smoke run: few steps, console and file logs, validation as chosen,
    no checkpoints, no resume, enough Ray CPUs for TransferQueue."""
    val_end = opts.validation in ("end", "both")
    out = [
        f"trainer.total_training_steps={opts.steps}",
        "trainer.logger=[console,file]",
        f"trainer.test_freq={opts.steps if val_end else -1}",
        f"trainer.val_before_train={'true' if opts.validation in ('start', 'both') else 'false'}",
        "trainer.save_freq=-1",
        "trainer.resume_mode=disable",
    ]
    cpus = plan.hardware.ray_num_cpus
    if cpus is None or cpus < MIN_RAY_CPUS:
        out.append(f"ray_kwargs.ray_init.num_cpus={MIN_RAY_CPUS}")
    if opts.samples_dir:
        out += [f"{key}={_hydra_path(f'{opts.samples_dir}/{sub}')}" for key, sub in DUMP_KEYS
                if not _touches(plan.passthrough, key)]
    return out


def _hydra_path(path: str) -> str:
    """A path as a Hydra override value: bare when it is plain, else single-quoted (Hydra's own quoting)."""
    if _PLAIN.fullmatch(path):
        return path
    return "'" + path.replace("\\", "\\\\").replace("'", "\\'") + "'"


def dump_dirs(plan: Plan) -> tuple[str | None, str | None]:
    """Where verl will dump the training and validation generations of ``plan`` (a smoke plan or the user's own),
    or None where it will not."""
    found: dict[str, str | None] = {key: None for key, _ in DUMP_KEYS}
    for text in plan.passthrough:
        try:
            p = parse_override(text)
        except OverrideSyntaxError:
            continue
        if p.key in found and p.kind != "~":
            value = p.value()
            found[p.key] = value if isinstance(value, str) and value else None
    return found[DUMP_KEYS[0][0]], found[DUMP_KEYS[1][0]]


def smoke_plan(plan: Plan, opts: SmokeOptions = SmokeOptions()) -> Plan:
    add_sdpa = adds_sdpa(plan, opts)
    plan = apply_overrides(plan, smoke_overrides(plan, opts))
    if opts.loopback and not _touches(plan.passthrough, NODE_IP_KEY):
        plan.passthrough = [*plan.passthrough, f"+{NODE_IP_KEY}={LOOPBACK}"]
    if add_sdpa:
        plan.passthrough = [*plan.passthrough, SDPA_OVERRIDE]
    return plan


def adds_sdpa(plan: Plan, opts: SmokeOptions) -> bool:
    """Whether the smoke run adds the SDPA attention override: flash-attn does not import in the run's Python
    and the plan names no attention implementation of its own."""
    return opts.flash_attn is False and not _touches(emit_overrides(plan).overrides, ATTN_KEY)


def smoke_notes(plan: Plan, opts: SmokeOptions) -> list[str]:
    """What the launch changed on its own, for the run's first lines (``plan`` is the plan before smoke_plan)."""
    if not adds_sdpa(plan, opts):
        return []
    return [f"flash-attn does not import in the run's Python: added {SDPA_OVERRIDE} (verl loads the actor and the "
            "reference with flash_attention_2 by default, which fails at model load without flash-attn)"]


def smoke_env(file_logger_path: str, model_is_local: bool) -> dict[str, str]:
    """What the launch adds to the inherited environment, and nothing else."""
    env = {
        "PYTHONUNBUFFERED": "1",  # lines as they happen, not in 8 KiB blocks
        "RAY_USAGE_STATS_ENABLED": "0",  # no usage report leaves the machine
        "RAY_DEDUP_LOGS": "0",  # every worker's lines, not "[repeated 3x across cluster]"
        "VERL_FILE_LOGGER_PATH": file_logger_path,
    }
    if model_is_local:
        env["HF_HUB_OFFLINE"] = "1"
        env["TRANSFORMERS_OFFLINE"] = "1"
    return env


def expand_refs(text: str, names: set[str], environ: Mapping[str, str], missing: set[str]) -> str:
    """``$NAME`` / ``${NAME}`` for names in ``names`` replaced by their values, as bash would in run.sh."""

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        if name not in names:
            return m.group(0)
        if name not in environ:
            missing.add(name)
            return m.group(0)
        return environ[name]

    return _REF.sub(sub, text)


def smoke_command(plan: Plan, opts: SmokeOptions, *, run_dir: str, file_logger_path: str, model_is_local: bool,
                  environ: Mapping[str, str]) -> SmokeCommand:
    """The exact words after the Python and the environment additions for a smoke run of ``plan``.

    ``plan`` is the smoke plan (``smoke_plan``). Hydra's own output goes into ``run_dir`` so the launch folder
    stays clean.
    """
    emitted = emit_overrides(plan)
    names = set(emitted.env)
    missing: set[str] = set()
    head = ["-m", ENTRY]
    if plan.config_path:
        head.append(f"--config-path={plan.config_path}")
    if plan.config_name != "ppo_trainer" or plan.config_path:
        head.append(f"--config-name={plan.config_name}")
    tail = [f"hydra.run.dir={run_dir}/hydra"]
    args = [expand_refs(w, names, environ, missing) for w in head + emitted.overrides + tail]
    # what verl's Hydra reads from the environment (secrets): the run inherits it, so it must be set here
    missing |= {n for n in names if n not in environ and any("${oc.env:" + n in w for w in emitted.overrides)}
    return SmokeCommand(
        args=args,
        display=head + emitted.overrides + tail,
        env=smoke_env(file_logger_path, model_is_local),
        reads=sorted(names),
        secrets=sorted(n for n in names if is_secret_name(n)),
        missing=sorted(missing),
    )


def render_command(python: str, cmd: SmokeCommand) -> str:
    """One shell line a user can paste: the environment additions, then the command, every word quoted."""
    env = set(cmd.reads)
    words = [f"{k}={_word(v, set())}" for k, v in cmd.env.items()]
    words.append(_word(python, set()))
    words += [_word(w, env) for w in cmd.display]
    return " ".join(words)


def _word(text: str, env: set[str]) -> str:
    return text if _PLAIN.fullmatch(text) else shell_word(text, env)


__all__ = ["SmokeOptions", "SmokeCommand", "smoke_overrides", "smoke_plan", "smoke_notes", "adds_sdpa", "smoke_env",
           "smoke_command", "render_command", "dump_dirs", "DUMP_KEYS"]
