"""Inventory every check verl makes on the way from ``main_ppo`` to the first training step.

Run with the Python of the environment that has verl installed::

    python extract_verl_checks.py [--out FILE]

It reads verl's source with ``ast`` (verl is not imported) and lists, for the functions in SCOPES and what
they call within their own module, every ``assert``, every ``raise`` and every call of a ``validate``/``check``
function, with its file, line, function, the condition under which it fails (the enclosing ``if`` tests,
negated in ``else`` branches) and its message, as source text. Which wizard rule mirrors each check is not
here: that is a reviewed file (resources/verl-checks/mapping.yaml) keyed by the ids this writes.

Standalone on purpose (it runs in the target environment); nothing in its output is typed by hand.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import glob
import importlib.metadata as md
import importlib.util
import json
import os
import sys

# (area, file glob under verl/, root functions, functions not to follow) - "what runs before the first step".
CONFIG_ROOTS = ["*.__post_init__", "*.validate", "*.validate_*", "*._validate*", "*.check_*"]
SCOPES: tuple[tuple[str, str, list[str], list[str]], ...] = (
    ("validate_config", "utils/config.py", ["validate_config"], []),
    ("validate_config", "workers/rollout/vllm_rollout/utils.py", ["get_vllm_max_lora_rank"], []),
    ("config classes", "workers/config/*.py", CONFIG_ROOTS, []),
    ("config classes", "trainer/config/*.py", CONFIG_ROOTS, []),
    ("config classes", "utils/profiler/config.py", CONFIG_ROOTS, []),
    ("trainer", "trainer/main_ppo.py", ["run_ppo", "TaskRunnerV1.*", "main"], []),
    ("trainer", "trainer/ppo/utils.py", ["need_*"], []),
    ("trainer", "trainer/ppo/v1/trainer_base.py",
     ["PPOTrainer.__init__", "PPOTrainer.init", "PPOTrainer.fit", "get_trainer_cls"],
     ["PPOTrainer.step", "PPOTrainer._validate", "PPOTrainer._save_checkpoint", "PPOTrainer._compute_metrics",
      "PPOTrainer._log_rollout_data", "PPOTrainer._start_profiling", "PPOTrainer._stop_profiling",
      "PPOTrainer._reissue_inflight_prompts", "PPOTrainer._shutdown_dump_executor", "PPOTrainer.on_*"]),
    ("trainer", "trainer/ppo/v1/trainer_sync.py", ["*.__init__", "*.init", "*._setup"], []),
    ("trainer", "trainer/ppo/v1/trainer_colocate_async.py", ["*.__init__", "*.init", "*._setup"], []),
    ("trainer", "trainer/ppo/v1/trainer_separate_async.py", ["*.__init__", "*.init", "*._setup"], []),
    ("trainer", "trainer/ppo/v1/replay_buffer.py", ["*.__init__"], []),
    ("trainer", "trainer/ppo/core_algos.py",
     ["get_kl_controller", "*KLController.__init__", "get_adv_estimator_fn", "get_policy_loss_fn"], []),
    ("trainer", "trainer/ppo/checkpoint_callback.py", ["build_checkpoint_callback"], []),
    ("trainer", "utils/tracking.py", ["Tracking.__init__"], []),
    ("trainer", "single_controller/ray/base.py", ["ResourcePoolManager.*"], []),
    ("trainer", "utils/dataset/rl_dataset.py",
     ["create_rl_dataset", "create_rl_sampler", "get_dataset_class", "RLHFDataset.__init__"], []),
    ("trainer", "utils/import_utils.py", ["load_extern_object", "load_extern_type", "load_class_from_fqn"], []),
    ("trainer", "utils/skip/skip_manager.py", ["SkipManager.init"], []),
    ("workers", "workers/engine_workers.py", ["*.__init__", "*.init_model"], []),
    ("workers", "workers/engine/base.py", ["EngineRegistry.*"], []),
    ("workers", "workers/engine/fsdp/transformer_impl.py", ["*.__init__", "*.initialize"], []),
    ("workers", "checkpoint_engine/base.py", ["CheckpointEngineRegistry.*"], []),
    ("rollout", "workers/rollout/base.py", ["get_rollout_class", "*.__init__"], []),
    ("rollout", "workers/rollout/replica.py", ["get_rollout_replica_class", "*.__init__", "*.init_*"], []),
    ("rollout", "workers/rollout/llm_server.py", ["*.__init__", "*.create", "*._init*"], []),
    ("rollout", "workers/rollout/vllm_rollout/vllm_async_server.py", ["*.__init__", "*.launch_server*"], []),
    ("agent loop", "experimental/agent_loop/agent_loop.py",
     ["*.__init__", "*.create", "*._run_agent_loop", "register"], []),
    ("agent loop", "experimental/agent_loop/single_turn_agent_loop.py", ["*.__init__"], []),
    ("agent loop", "experimental/agent_loop/tool_agent_loop.py", ["*.__init__"], []),
    ("agent loop", "utils/tokenizer/continuous_token_wiring.py", ["create_continuous_token_builder"], []),
    ("agent loop", "utils/tokenizer/continuous_token.py", ["*.__init__"], []),
    ("reward", "trainer/ppo/reward.py", ["*"], []),
    ("reward", "experimental/reward_loop/reward_loop.py", ["*.__init__", "*._init*"], []),
    ("reward", "experimental/reward_loop/reward_model.py", ["*.__init__", "*._init*"], []),
    ("reward", "experimental/reward_loop/reward_manager/*.py",
     ["*.__init__", "register", "get_reward_manager_cls"], []),
)
CHECK_CALLS = ("validate", "check")  # a call of a function named like this, or starting with it, is a check
BUILD_CALLS = ("omega_conf_to_dataclass", "instantiate")  # building a config class: its fields are checked


def verl_root() -> str:
    spec = importlib.util.find_spec("verl")
    if spec is None or spec.origin is None:
        raise SystemExit("verl is not installed in this Python")
    return os.path.dirname(spec.origin)


def _text(node: ast.AST | None) -> str:
    return " ".join(ast.unparse(node).split()) if node is not None else ""


class Module:
    """One source file: its functions by qualified name, and who calls whom inside it."""

    def __init__(self, path: str):
        with open(path, encoding="utf-8") as fh:
            self.tree = ast.parse(fh.read(), filename=path)
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.bases: dict[str, list[str]] = {}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._add(node.name, node)
            elif isinstance(node, ast.ClassDef):
                self.bases[node.name] = [_text(b).split(".")[-1] for b in node.bases]
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self._add(f"{node.name}.{item.name}", item)

    def _add(self, qualname: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A function and the functions defined inside it (``outer.inner``), which only it can call."""
        self.functions[qualname] = node
        for sub in node.body:
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._add(f"{qualname}.{sub.name}", sub)

    def related(self, cls: str) -> set[str]:
        """The class, its bases and its subclasses defined in this module (where ``self.x`` may land)."""
        out, todo = set(), [cls]
        while todo:
            c = todo.pop()
            if c in out:
                continue
            out.add(c)
            todo.extend(b for b in self.bases.get(c, []) if b in self.bases)
            todo.extend(sub for sub, bases in self.bases.items() if c in bases)
        return out

    def callees(self, qualname: str) -> set[str]:
        cls = qualname.split(".")[0] if "." in qualname else None
        out: set[str] = set()
        for node in ast.walk(self.functions[qualname]):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name):
                if f"{qualname}.{f.id}" in self.functions:
                    out.add(f"{qualname}.{f.id}")
                elif f.id in self.functions:
                    out.add(f.id)
                elif f.id in self.bases:  # constructing a class of this module runs its __init__/__post_init__
                    out |= {f"{f.id}.__init__", f"{f.id}.__post_init__"} & set(self.functions)
            elif isinstance(f, ast.Attribute):
                owner = f.value
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls") and cls:
                    out |= {f"{c}.{f.attr}" for c in self.related(cls)} & set(self.functions)
                elif isinstance(owner, ast.Call) and _text(owner.func) == "super" and cls:
                    out |= {f"{b}.{f.attr}" for b in self.related(cls) if b != cls} & set(self.functions)
                elif isinstance(owner, ast.Name) and owner.id in self.bases:
                    out |= {f"{owner.id}.{f.attr}"} & set(self.functions)
        return out

    def reachable(self, roots: list[str], stop: list[str]) -> list[str]:
        def stopped(name: str) -> bool:
            return any(fnmatch.fnmatchcase(name, s) for s in stop)

        todo = [q for q in self.functions if any(fnmatch.fnmatchcase(q, r) for r in roots) and not stopped(q)]
        seen: list[str] = []
        while todo:
            q = todo.pop(0)
            if q in seen:
                continue
            seen.append(q)
            todo.extend(sorted(c for c in self.callees(q) if c not in seen and not stopped(c)))
        return sorted(seen, key=lambda q: self.functions[q].lineno)


def _negate(test: ast.expr) -> str:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _text(test.operand)
    return f"not ({_text(test)})" if isinstance(test, (ast.BoolOp, ast.Compare, ast.IfExp)) else f"not {_text(test)}"


def _message(node: ast.AST | None) -> str:
    if isinstance(node, ast.Call) and node.args:
        return _text(node.args[0])
    if isinstance(node, ast.Call):
        return ""
    return _text(node)


def _call_kind(node: ast.Call) -> str | None:
    """"call" for a validate/check call, "build" for building a config class from the config, else None."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name in BUILD_CALLS:
        return "build"
    bare = name.lstrip("_")
    return "call" if any(bare == c or bare.startswith(c + "_") for c in CHECK_CALLS) else None


def _all(guard: list[str]) -> str:
    """The conditions on the path, joined; one that holds ``or``/``if`` is parenthesised to keep its meaning."""
    return " and ".join(f"({g})" if (" or " in g or " if " in g) and not g.startswith("for ") else g for g in guard)


_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _checks(body: list[ast.stmt], guard: list[str], out: list[dict]) -> None:
    """Every check in these statements, with the conditions on the path to it (nested defs are not followed)."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.Assert):
            fails = guard + [_negate(stmt.test)]
            out.append({"line": stmt.lineno, "kind": "assert", "condition": _all(fails),
                        "message": _message(stmt.msg), "exception": "AssertionError"})
        elif isinstance(stmt, ast.Raise) and stmt.exc is not None:
            exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            out.append({"line": stmt.lineno, "kind": "raise", "condition": _all(guard) or "always",
                        "message": _message(stmt.exc), "exception": _text(exc).split(".")[-1]})
        elif isinstance(stmt, ast.If):
            _calls(stmt.test, guard, out)
            _checks(stmt.body, guard + [_text(stmt.test)], out)
            _checks(stmt.orelse, guard + [_negate(stmt.test)], out)
            if not stmt.orelse and stmt.body and isinstance(stmt.body[-1], _EXITS):
                guard = guard + [_negate(stmt.test)]  # ``if x: return`` - what follows runs only when not x
            continue
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            _checks(stmt.body, guard + [f"for {_text(stmt.target)} in {_text(stmt.iter)}"], out)
            _checks(stmt.orelse, guard, out)
            continue
        elif isinstance(stmt, ast.While):
            _checks(stmt.body, guard + [f"while {_text(stmt.test)}"], out)
            continue
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            _checks(stmt.body, guard, out)
            continue
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            _checks(stmt.body, guard, out)
            for handler in stmt.handlers:
                caught = _text(handler.type) or "Exception"
                _checks(handler.body, guard + [f"except {caught}"], out)
            _checks(stmt.orelse, guard, out)
            _checks(stmt.finalbody, guard, out)
            continue
        elif isinstance(stmt, ast.Match):
            for case in stmt.cases:
                _checks(case.body, guard + [f"case {_text(case.pattern)}"], out)
            continue
        _calls(stmt, guard, out)


def _calls(node: ast.AST, guard: list[str], out: list[dict]) -> None:
    for sub in ast.walk(node):
        kind = _call_kind(sub) if isinstance(sub, ast.Call) else None
        if kind:
            out.append({"line": sub.lineno, "kind": kind, "condition": _all(guard) or "always",
                        "message": _text(sub), "exception": ""})


def inventory(root: str) -> list[dict]:
    entries: list[dict] = []
    seen: set[tuple[str, int, str]] = set()
    for area, pattern, roots, stop in SCOPES:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            module = Module(path)
            for qualname in module.reachable(roots, stop):
                found: list[dict] = []
                _checks(module.functions[qualname].body, [], found)
                for k, check in enumerate(found, 1):
                    key = (rel, check["line"], check["kind"])
                    if key in seen:
                        continue
                    seen.add(key)
                    entries.append({"id": f"{rel}::{qualname}#{k}", "file": rel, "line": check["line"],
                                    "function": qualname, "area": area, **check})
    entries.sort(key=lambda e: (e["file"], e["line"], e["kind"]))
    return entries


def extract() -> dict:
    return {
        "format": 1,
        "generated_by": "wizard/adapters/verl_env/probes/extract_verl_checks.py",
        "verl_version": md.version("verl"),
        "scopes": [{"area": a, "files": p, "roots": r, "stop": s} for a, p, r, s in SCOPES],
        "checks": inventory(verl_root()),
    }


def dumps(doc: dict) -> str:
    """JSON with one check per line: diffs read check by check."""
    head = {k: v for k, v in doc.items() if k != "checks"}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    lines.append(' "checks": [')
    checks = doc["checks"]
    lines += ["  " + json.dumps(c, ensure_ascii=False) + ("," if i < len(checks) - 1 else "") for i, c in enumerate(checks)]
    lines += [" ]", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write JSON here instead of stdout")
    args = parser.parse_args(argv)
    text = dumps(extract())
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, args.out)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
