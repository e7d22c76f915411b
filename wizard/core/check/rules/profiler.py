"""Profiler settings: the profiler and profiling-tool config classes (verl/utils/profiler/config.py).

Every role's ``profiler`` section, tool configs included, is built with its role: the actor's in verl's
pre-flight even when no profiling is asked for, so a bad value under ``actor_rollout_ref.actor.profiler`` stops
every run before Ray starts.
"""

from __future__ import annotations

from wizard.core.findings import Severity
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import UNRESOLVABLE, RuleContext, finding
from wizard.core.check.rules.sections import Section, built_sections, stops, unset_field

TORCH_CONTENTS = ("cuda", "cpu", "memory", "shapes", "stack")
NPU_CONTENTS = ("npu", "cpu", "memory", "shapes", "module", "stack")
NPU_LEVELS = ("level_none", "level0", "level1", "level2")
_ABSENT = object()  # ctx.get's default where the composed config has no such key


def _is_int(v) -> bool:
    return isinstance(v, int)  # verl's isinstance(v, int): True/False pass too


def _schedule(s):
    for name in ("skip_first", "wait", "warmup", "active", "repeat"):
        yield name, lambda v: _is_int(v), f"{name} must be int, got {{t}}", 0
        yield name, lambda v: not _is_int(v) or v >= 0, f"{name} must be >= 0, got {{v}}", 0


def _memory(s):
    for name, default in (("trace_alloc_max_entries", 100000), ("stack_depth", 32), ("memory_snapshot_num_steps", 1)):
        yield name, _is_int, f"{name} must be int, got {{t}}", default
        yield name, lambda v: not _is_int(v) or v > 0, f"{name} must be positive, got {{v}}", default


def _debugger(s):
    yield "config_path", lambda v: v is None or isinstance(v, str), "config_path must be str, got {t}", None
    yield "steps", lambda v: v is None or isinstance(v, list), "steps must be list[int], got {t}", None
    yield "stages", lambda v: v is None or isinstance(v, list), "stages must be list[str], got {t}", None
    yield "strict", lambda v: isinstance(v, bool), "strict must be bool, got {t}", False


def _contents(allowed, said):
    return lambda v: not isinstance(v, list) or all(c in allowed for c in v), said


def _torch(s):
    ok, said = _contents(TORCH_CONTENTS, f"Profiler contents only supports {list(TORCH_CONTENTS)}, but gets {{v}}")
    yield "contents", ok, said, []
    yield "contents", lambda v: isinstance(v, list), "Profiler contents must be of type list, got {t}", []
    yield from _tokens()


def _npu(s):
    yield "contents", lambda v: isinstance(v, list), "Profiler contents must be of type list, got {t}", []
    yield "level", lambda v: isinstance(v, str), "Profiler level must be of type str, got {t}", "level0"
    yield "analysis", lambda v: isinstance(v, bool), "Profiler analysis must be of type bool, got {t}", False
    ok, said = _contents(NPU_CONTENTS, "Profiler contents only supports npu, cpu, memory, shapes, module, stack, but gets {v}")
    yield "contents", ok, said, []
    yield "level", lambda v: v in NPU_LEVELS, "Profiler level only supports level0, 1, 2, and level_none, but gets {v}", "level0"
    yield from _tokens()


def _tokens():
    for name in ("profile_token_start", "profile_token_end"):
        yield name, lambda v: v is None or _is_int(v), f"{name} must be int or None, got {{t}}", None
        yield name, lambda v: v is None or not _is_int(v) or v >= 0, f"{name} must be >= 0, got {{v}}", None


def _profiler(s):
    for name in ("ranks", "finish_hook_ranks"):
        yield name, lambda v: isinstance(v, (set, list, tuple)), f"Profiler {name} must be of type list, got {{t}}", []
    yield "finish_hook_cmd", lambda v: v is None or isinstance(v, str), "finish_hook_cmd must be str or None, got {t}", None


CHECKS = {"TorchProfilerScheduleConfig": _schedule, "TorchMemoryToolConfig": _memory,
          "PrecisionDebuggerToolConfig": _debugger, "TorchProfilerToolConfig": _torch, "NPUToolConfig": _npu,
          "ProfilerConfig": _profiler}


@rule("profiler.config", None)  # the stage verl builds the section at
def profiler_config(ctx: RuleContext):
    """The __post_init__ asserts of the profiler config classes, for every profiler section verl builds."""
    for section in built_sections(ctx, tuple(CHECKS)):
        found = _first_failure(ctx, section)
        if found is None and section.cls in ("TorchProfilerToolConfig", "NPUToolConfig"):
            found = _token_window(ctx, section)
        if found is not None:
            yield found


def _first_failure(ctx: RuleContext, section: Section):
    for name, ok, said, default in CHECKS[section.cls](section):
        key = f"{section.path}.{name}"
        if unset_field(ctx, key):
            continue
        value = ctx.get(key, _ABSENT)
        if value is _ABSENT or value is UNRESOLVABLE or ok(value):
            continue  # absent: an override deleted the section or the key, so verl builds it with the class's default
        text = said.format(v=value, t=type(value))
        return finding(Severity.ERROR, [key],
                       f"{key}={value!r}: " + stops(section, text),
                       f"Set {key}={_show(default)} (verl's default)", [f"{key}={_show(default)}"], stage=section.stage)
    return None


def _token_window(ctx: RuleContext, section: Section):
    start, stop = (ctx.get(f"{section.path}.profile_token_{k}") for k in ("start", "end"))
    if isinstance(start, int) and isinstance(stop, int) and not stop > start:
        key = f"{section.path}.profile_token_end"
        return finding(Severity.ERROR, [key, f"{section.path}.profile_token_start"],
                       f"The profiling window [{start}, {stop}) is empty: "
                       + stops(section, f"profile_token_end must be > profile_token_start, got start={start}, stop={stop}"),
                       f"Set {key} above {start}, or null", [f"{key}=null"], stage=section.stage)
    return None


def _show(value) -> str:
    from wizard.core.verl.overrides import render_value

    return render_value(value)
