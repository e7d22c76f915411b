"""Read a verl launch script statically: find its one ``verl.trainer.main_ppo`` launch and the
overrides bash would hand it, without running anything.

The script is parsed and walked as bash would run it (``interpreter``), with an empty
environment, so ``${X:-default}`` gives the script's own default; assignments, arrays and
``+=``, functions, ``set --``, ``source``d files the adapter read, ``case``/``if`` on known values
are followed. A test that depends on a value known only at run time is taken as false (a loop
as not running, a ``case`` as its first possible arm) and the script is read again with it
flipped, so the finding says what the other side would give. Values bash computes only when the
script runs (``$(date)``, ``$RANDOM``) are placeholders: in ``argv`` as the script's own text, in
``args`` quoted so Hydra reads them as strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.core.scripts import explain
from wizard.core.scripts.explain import STANDARD_ENV
from wizard.core.scripts.interpreter import Interpreter
from wizard.core.scripts.launch import ENTRY
from wizard.core.scripts.lexer import ShellSyntaxError
from wizard.core.scripts.parser import parse_program
from wizard.core.scripts.state import MAX_SCRIPT_CHARS, Context, Note, ScriptError, environment_names, knob_names
from wizard.core.scripts.values import FORWARD, Table

__all__ = ["ENTRY", "LaunchScript", "STANDARD_ENV", "ScriptError", "read_launch_script"]
_CONFIG_FLAGS = (("--config-name", "-cn"), ("--config-path", "-cp"))


@dataclass
class LaunchScript:
    args: list[str]  # the overrides for the plan: as bash passes them, run-time placeholders quoted for Hydra
    config_name: str = "ppo_trainer"
    config_path: str | None = None
    env: list[str] = field(default_factory=list)  # environment variables the launch reads ($HOME)
    forwards_args: bool = False  # the script passes its own arguments ("$@") on
    launch_env: dict[str, str] = field(default_factory=dict)  # VAR=value given to the launch only
    notes: list[Note] = field(default_factory=list)
    line: int = 0
    argv: list[str] = field(default_factory=list)  # everything after "-m verl.trainer.main_ppo", as the script says
    via: list[str] = field(default_factory=list)  # wrappers the launch runs through (uv run, torchrun, exec)
    wanted_files: list[str] = field(default_factory=list)  # files the script sources or tests for
    defaults: dict[str, str] = field(default_factory=dict)  # knobs left unset, so the script's default applies
    required: list[str] = field(default_factory=list)  # knobs the script stops without (${X:?})
    environment: list[str] = field(default_factory=list)  # every name the script reads from the environment
    _raw: list[str] = field(default_factory=list, repr=False)
    _table: Table = field(default_factory=Table, repr=False)

    @property
    def runtime_values(self) -> list[str]:
        """The placeholders in the launch: values bash computes only when the script runs (``$(date +%s)``)."""
        return list(dict.fromkeys(p.text for a in self._raw for p in self._table.of(a) if p.kind == "runtime"))

    @property
    def warnings(self) -> list[str]:
        """The notes a user should look at (not the informational ones), one line each."""
        return [n.text for n in self.notes if n.severity != "info"]

    def argv_patterns(self, env: dict[str, str]) -> list[re.Pattern]:
        """What bash's argv must match, word by word: environment references take ``env``'s values, values
        known only at run time match anything."""
        return [re.compile(self._table.pattern(a, env) + r"\Z") for a in self._raw]


@dataclass
class _Reading:
    ctx: Context
    error: str | None = None


def read_launch_script(text: str, files: dict[str, str | None] | None = None,
                       script_path: str | None = None) -> LaunchScript:
    """Read ``text``; ``files`` maps paths the script sources or tests (as it spells them) to their text
    (None: not there), ``script_path`` is where it lives (for ``${BASH_SOURCE[0]}``)."""
    if len(text) > MAX_SCRIPT_CHARS:
        raise ScriptError(f"the script is {len(text):,} characters long; the wizard reads scripts up to "
                          f"{MAX_SCRIPT_CHARS:,} (launch scripts are a few thousand)")
    nodes = parse_program(text)
    knobs = (knob_names(text), environment_names(text))
    main = _read_once(nodes, files, script_path, {}, knobs)
    if main.error:
        raise ScriptError(" ".join(main.error.split()))  # one line, whatever the script's text held
    script = _build(main.ctx)
    script.notes = _sorted(script.notes + explain.decisions(
        main.ctx, script, lambda forced: _alternative(nodes, files, script_path, forced, knobs)))
    return script


def _read_once(nodes: list, files, script_path, forced: dict, knobs: tuple[set[str], set[str]]) -> _Reading:
    ctx = Context(files=dict(files or {}), script_path=script_path, forced=dict(forced), knobs=set(knobs[0]),
                  environment=set(knobs[1]))
    interp = Interpreter(ctx)
    try:
        interp.run_program(nodes)
    except ScriptError as exc:
        return _Reading(ctx, str(exc))
    except ShellSyntaxError as exc:  # text bash reads only when it runs it (an eval, a ${X:-...} default)
        return _Reading(ctx, f"bash cannot read this: {exc}")
    except RecursionError:  # a backstop: the budgets above stop every script the tests know first
        return _Reading(ctx, "the script nests commands too deep for the wizard to read")
    if len(ctx.launches) > 1:
        lines = ", ".join(str(launch.line) for launch in ctx.launches)
        return _Reading(ctx, f"the script launches {ENTRY} {len(ctx.launches)} times (lines {lines}); give the "
                        "wizard one launch")
    if not ctx.launches:
        return _Reading(ctx, explain.no_launch(ctx, nodes))
    return _Reading(ctx)


def _alternative(nodes, files, script_path, forced, knobs) -> tuple[LaunchScript | None, str | None]:
    reading = _read_once(nodes, files, script_path, forced, knobs)
    if reading.error:
        return None, reading.error
    try:
        return _build(reading.ctx), None
    except ScriptError as exc:
        return None, str(exc)


def _build(ctx: Context) -> LaunchScript:
    launch = ctx.launches[0]
    table, render = ctx.table, ctx.table.render
    forwards = any(FORWARD in a for a in launch.argv)
    raw = [a for a in launch.argv if a != FORWARD]
    config_name, config_path, overrides = _split_config(raw, render)
    if "\ue000" in config_name or (config_name == "" and ctx.args_read):
        shown = render(config_name) or f"${min(ctx.args_read)} (an argument of the script)"
        raise ScriptError(f"line {launch.line}: --config-name is {shown}, known only when the script runs; give "
                          "the wizard a script with a fixed config name")
    if config_name == "":
        raise ScriptError(f"line {launch.line}: --config-name is empty; verl needs a config name")
    launch_env = {name: render(value) for name, value in launch.env.items()}
    shown = {a: render(a) for a in raw}  # each value rendered once (a hostile script may hold many markers)
    env = sorted({p.name for a in raw + list(launch.env.values()) for p in table.of(a) if p.kind == "env"})
    script = LaunchScript(
        args=[hydra_safe(shown[a], table, a) for a in overrides],
        config_name=config_name[:-5] if config_name.endswith(".yaml") else config_name,
        config_path=render(config_path) if config_path is not None else None,
        env=env,
        forwards_args=forwards,
        launch_env=launch_env,
        line=launch.line,
        argv=[shown[a] for a in raw],
        via=launch.via,
        wanted_files=list(ctx.wanted),
        defaults={name: value for name, (value, _) in ctx.defaults.items()},
        required=sorted(ctx.required),
        environment=sorted(ctx.env_reads),
        _raw=raw,
        _table=table,
    )
    script.notes = _sorted(list(ctx.notes) + explain.launch_notes(ctx, launch, raw, [shown[a] for a in overrides], env))
    return script


def split_config(argv: list[str]) -> tuple[str, str | None, list[str]]:
    """(--config-name, --config-path, the overrides) of verl's command-line words, as Hydra takes them."""
    return _split_config(argv, None)


def _split_config(argv: list[str], render) -> tuple[str, str | None, list[str]]:
    config_name, config_path, overrides = "ppo_trainer", None, []
    skip = False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        for flag, short in _CONFIG_FLAGS:
            if a.startswith((flag + "=", short + "=")):
                value = a.split("=", 1)[1]
            elif a in (flag, short) and i + 1 < len(argv):
                value, skip = argv[i + 1], True
            else:
                continue
            if flag == "--config-name":
                config_name = value
            else:
                config_path = value
            break
        else:
            overrides.append(a)
    return config_name, config_path, overrides


def hydra_safe(arg: str, table: Table, raw: str) -> str:
    """``key=value`` as Hydra will read it: a value holding a run-time placeholder (``$(date +%s)``) is
    quoted so that it is a string, not a parse error."""
    if not any(p.kind == "runtime" for p in table.of(raw)) or "=" not in arg:
        return arg
    from wizard.core.verl.overrides import OverrideSyntaxError, parse_override

    try:
        parse_override(arg)
        return arg
    except OverrideSyntaxError:
        key, _, value = arg.partition("=")
        quoted = key + "='" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        try:
            parse_override(quoted)
            return quoted
        except OverrideSyntaxError:
            return arg


def _sorted(notes: list[Note]) -> list[Note]:
    return sorted(notes, key=lambda n: (n.file is not None, n.line if n.line else 10**9))
