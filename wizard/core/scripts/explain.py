"""Findings about how a script was read, in words a user can act on: what was assumed, what the other
side of an undecidable test would give, why no launch was found."""

from __future__ import annotations

from wizard.core.scripts.launch import ENTRY
from wizard.core.scripts.state import Context, Decision, Launch, Note
from wizard.core.scripts.syntax import (AndOr, Case, Compound, For, FuncDef, Group, If, Pipeline, Seq, Simple,
                                        While)

# Variables every shell has; reading them is not a sign of a mistake.
STANDARD_ENV = {"HOME", "USER", "PWD", "PATH", "HOSTNAME", "SHELL", "TMPDIR", "LOGNAME"}
MAX_ALTERNATIVES = 16  # re-readings per script to say what the other side of each decision gives
_SHOWN = 6  # items a message lists before "and N more" (the finding's data has them all)
_HYDRA_FLAGS_OK = ("--config-name", "--config-path", "-cn", "-cp")


def launch_notes(ctx: Context, launch: Launch, raw: list[str], overrides: list[str], env: list[str]) -> list[Note]:
    """``overrides``: as the script's text (rendered)."""
    notes: list[Note] = []
    seen = set()
    for value in raw + list(launch.env.values()):
        for p in ctx.table.of(value):
            if p.kind == "runtime" and (p.text, p.line) not in seen:
                seen.add((p.text, p.line))
                notes.append(Note(p.line, "runtime", f"{p.text} {p.why}; kept as a placeholder, so verl-wizard "
                                  "checks the rest of the value", "info", {"text": p.text}))
    if ctx.defaults:
        notes.append(_defaults_note(ctx.defaults))
    if ctx.args_read:
        names = ", ".join(f"${n}" for n in sorted(ctx.args_read))
        notes.append(Note(min(ctx.args_read.values()), "args", f"the script reads its own arguments ({names}); it "
                          "is read as run with none, so they are empty (arguments you pass when you run it go "
                          "where the script puts them)", "info", {"arguments": sorted(ctx.args_read)}))
    unset = [n for n in env if n not in STANDARD_ENV]
    if unset:
        lines = sorted(ctx.env_reads.get(n, launch.line) for n in unset)
        required = [n for n in unset if n in ctx.required]
        stops = f"; the script stops if {_list(required)} {'is' if len(required) == 1 else 'are'} not set" \
            if required else ""
        notes.append(Note(lines[0], "env", f"the launch reads {_list(unset)} from the environment; the script "
                          f"never sets {'it' if len(unset) == 1 else 'them'}{stops}", "warning",
                          {"names": unset, "required": required}))
    wrappers = [v for v in launch.via if v != "exec"]
    if wrappers:
        notes.append(Note(launch.line, "wrapper", f"verl is started through {' and '.join(wrappers)}; the "
                          "overrides are read the same way", "info", {"via": launch.via}))
    for text in overrides:
        if text.startswith("-") and not text.startswith(_HYDRA_FLAGS_OK):
            notes.append(Note(launch.line, "flag", f"Hydra flag {text!r} kept as given"))
        elif text.strip() == "" or ("=" in text and text.split("=", 1)[1].endswith(" ")):
            notes.append(Note(launch.line, "flag", f"an argument is {text!r}, ending in a space (an escaped space "
                              "before a comment?); bash passes it to verl that way"))
    return notes


def _defaults_note(defaults: dict[str, tuple[str, int]]) -> Note:
    items = [{"name": name, "value": value, "line": line} for name, (value, line) in defaults.items()]
    shown = ", ".join(f"{d['name']}={d['value'] or chr(39) * 2}" for d in items[:_SHOWN])
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return Note(min(d["line"] for d in items), "defaults",
                f"{len(items)} setting{'s' if len(items) != 1 else ''} the script takes from the environment "
                f"{'are' if len(items) != 1 else 'is'} not set, so its defaults apply: {shown}{more} (set them "
                "before running the script to change them)", "info", {"defaults": items})


def _list(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


# ---- decisions ------------------------------------------------------------------------------------
def decisions(ctx: Context, script, alternative) -> list[Note]:
    """One note per undecidable test: what was taken, and what each other side gives verl."""
    notes, budget = [], MAX_ALTERNATIVES
    for dec in list(ctx.decisions.values()):
        sides = []
        for k, option in enumerate(dec.options):
            if k == dec.chosen:
                continue
            if budget <= 0:
                sides.append({"option": option, "unknown": True})
                continue
            budget -= 1
            other, error = alternative({dec.key: k})
            sides.append({"option": option, "error": error} if error else {"option": option,
                                                                          **_difference(script, other)})
        notes.append(_decision_note(dec, sides))
    return notes


def _difference(script, other) -> dict:
    mine, theirs = _by_key(script.args), _by_key(other.args)
    changed = [{"key": k, "from": mine[k], "to": v} for k, v in theirs.items() if k in mine and mine[k] != v]
    added = [f"{k}={v}" for k, v in theirs.items() if k not in mine]
    removed = [f"{k}={v}" for k, v in mine.items() if k not in theirs]
    if other.config_name != script.config_name:
        changed.insert(0, {"key": "--config-name", "from": script.config_name, "to": other.config_name})
    return {"changed": changed, "added": added, "removed": removed}


def _by_key(args: list[str]) -> dict[str, str]:
    out = {}
    for a in args:
        key, _, value = a.partition("=")
        out[key] = value
    return out


def _decision_note(dec: Decision, sides: list[dict]) -> Note:
    taken = dec.options[dec.chosen]
    parts, differs = [], False
    for side in sides:
        label = f"if it {side['option']}" if side["option"] in ("succeeds", "fails") else (
            f"if {side['option']}" if side["option"] in ("true", "false") else f"with {side['option']}")
        if side.get("unknown"):
            parts.append(f"{label}: not worked out (too many undecided tests)")
        elif side.get("error"):
            differs = True
            parts.append(f"{label}: {side['error']}")
        else:
            summary = _summary(side)
            differs |= bool(summary)
            parts.append(f"{label}: {summary}" if summary else f"{label}: the same overrides")
    read_as = {"fails": "read as failing", "succeeds": "read as succeeding"}.get(
        taken, f"read as {'the ' + taken + ' arm' if taken.endswith(')') else taken}")
    message = f"`{_short(dec.text)}`: {dec.why}; {read_as}; " + "; ".join(parts)
    return Note(dec.line, "branch", message, "warning" if differs else "info",
                {"test": dec.text, "taken": taken, "other": sides}, dec.file)


def _summary(side: dict) -> str:
    items = [f"{c['key']}={c['to']} (not {c['from']})" for c in side["changed"]]
    items += [f"{a} (added)" for a in side["added"]] + [f"no {r}" for r in side["removed"]]
    if not items:
        return ""
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return "verl would get " + ", ".join(items[:_SHOWN]) + more


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- no launch ------------------------------------------------------------------------------------------
def no_launch(ctx: Context, nodes: list) -> str:
    if ctx.refusals:
        r = ctx.refusals[0]
        return f"line {r.line}: {r.message}"
    if ctx.exit is not None and ctx.exit.why.startswith("syntax: "):
        return f"{ctx.exit.why[8:]}; bash stops reading the script there, before it launches {ENTRY}"
    if ctx.exit is not None:
        because = ""
        if ctx.decisions:
            last = list(ctx.decisions.values())[-1]
            because = f" (the wizard read `{_short(last.text, 60)}` at line {last.line} as {last.options[last.chosen]})"
        return f"line {ctx.exit.line}: the script stops here ({ctx.exit.why}) before it launches {ENTRY}{because}"
    for node, where in _walk(nodes, []):
        if isinstance(node, Simple) and "main_ppo" in node.text:
            if id(node) in ctx.visited:
                return (f"line {node.line}: this command mentions main_ppo but does not run 'python3 -m {ENTRY}' "
                        f"as far as the wizard can tell: {_short(node.text, 70)}")
            return f"line {node.line}: the {ENTRY} launch never runs when the script is read with its defaults: " \
                   f"it is {where[-1] if where else 'in code that does not run'}"
    return f"no 'python3 -m {ENTRY}' command found in the script"


def _walk(node, where: list[str]):
    if isinstance(node, list):
        for item in node:
            yield from _walk(item, where)
    elif isinstance(node, Seq):
        yield from _walk(node.items, where)
    elif isinstance(node, AndOr):
        yield from _walk([node.first] + [n for _, n in node.rest], where)
    elif isinstance(node, Pipeline):
        yield from _walk(node.commands, where)
    elif isinstance(node, Compound):
        yield from _walk(node.node, where)
    elif isinstance(node, Group):
        yield from _walk(node.body, where)
    elif isinstance(node, If):
        inner = where + [f"in a branch of the if at line {node.line} that does not run"]
        for cond, body in node.clauses:
            yield from _walk(cond, where)
            yield from _walk(body, inner)
        yield from _walk(node.else_body or Seq(), inner)
    elif isinstance(node, Case):
        inner = where + [f"in an arm of the case at line {node.line} that does not run"]
        for item in node.items:
            yield from _walk(item.body, inner)
    elif isinstance(node, (For, While)):
        inner = where + [f"inside the loop at line {node.line} (how often a loop runs is known only when the "
                         "script runs; the wizard reads one launch outside loops)"]
        if isinstance(node, While):
            yield from _walk(node.cond, inner)
        yield from _walk(node.body, inner)
    elif isinstance(node, FuncDef):
        yield from _walk(node.body, where + [f"in the function {node.name} (line {node.line}), which the script "
                                             "never calls"])
    else:
        yield node, where
