"""Walk a parsed script the way bash would run it, without running anything.

Every command answers True (succeeded), False, or None (known only when the script runs: a test
on a run-time value, a program the wizard does not run used as a condition). Where a None decides
what runs next (``if``, ``&&``, ``case``, a loop), the reader makes a ``Decision``: it takes the
side that does not run (a loop that does not start, a probe that fails) unless told otherwise, so
the same script always reads the same way, and the reader can re-read it with the decision
flipped to say what the other side would give.
"""

from __future__ import annotations

from wizard.core.scripts import builtins
from wizard.core.scripts.conditions import Tests
from wizard.core.scripts.evaluator import Expander
from wizard.core.scripts.launch import ENTRY, classify, looks_like_override
from wizard.core.scripts.parser import parse_cached
from wizard.core.scripts.state import (MAX_CALL_DEPTH, MAX_LOOP_ITEMS, MAX_NESTED_RUN, Context, Decision,
                                       FunctionReturn, Launch, LoopControl, ScriptError, ScriptExit, State)
from wizard.core.scripts.syntax import (AndOr, ArithCommand, Case, Compound, DoubleBracket, For, FuncDef, Group, If,
                                        Pipeline, Seq, Simple, SyntaxStop, While)
from wizard.core.scripts.values import has_marker

Status = bool | None


class Interpreter:
    def __init__(self, ctx: Context, state: State | None = None, file: str | None = None,
                 capture: list[str] | None = None, depth: int = 0):
        self.ctx = ctx
        self.state = state or State()
        self.file = file
        self.capture = capture
        self.opaque = False  # a program the wizard does not run printed into the captured output
        self.depth = depth
        self.loops: list[int] = []
        self.functions: list[str] = []
        self.why = ""
        self.why_is_command = False
        self.ex = Expander(ctx, self.state, self.substitute, file)
        self.tests = Tests(self)

    # ---- running ----------------------------------------------------------------------------------
    def run_program(self, nodes: list) -> None:
        """Run top-level commands until the end, an ``exit``, or a line bash cannot parse."""
        try:
            for node in nodes:
                if isinstance(node, SyntaxStop):
                    self.syntax_stop(node)
                    return
                self.exec(node)
        except ScriptExit as stop:
            self.ctx.exit = stop
        except FunctionReturn:
            pass

    def run_nested(self, nodes: list) -> None:
        """Run the commands of a substitution, an eval or a sourced file; ``exit`` ends only them."""
        try:
            for node in nodes:
                if isinstance(node, SyntaxStop):
                    self.opaque = True
                    self.ctx.note(node.line, "syntax", f"bash cannot read this: {node.message}", "warning", None,
                                  self.file)
                    return
                self.exec(node)
        except (ScriptExit, FunctionReturn):
            pass

    def syntax_stop(self, node: SyntaxStop) -> None:
        self.ctx.exit = ScriptExit(node.line, f"syntax: {node.message}")
        self.ctx.note(node.line, "syntax", f"bash stops reading the script here: {node.message}", "warning",
                      None, self.file)

    def exec(self, node, cond: bool = False) -> Status:
        ctx = self.ctx
        ctx.depth += 1
        try:
            if ctx.depth > MAX_NESTED_RUN:
                inside = f" (in function {self.functions[-1]}, called {len(self.functions)} deep)" \
                    if self.functions else ""
                raise ScriptError(f"line {getattr(node, 'line', 0) or self.ex.line}: commands, functions and "
                                  f"substitutions run nested more than {MAX_NESTED_RUN} deep{inside}; the wizard "
                                  "stops reading the script there")
            return self._exec(node, cond)
        finally:
            ctx.depth -= 1

    def _exec(self, node, cond: bool) -> Status:
        if isinstance(node, Seq):
            status: Status = True
            for k, item in enumerate(node.items):
                status = self.exec(item, cond and k == len(node.items) - 1)
            return status
        self.ctx.step(getattr(node, "line", 0))
        if isinstance(node, Simple):
            return self.simple(node, cond)
        if isinstance(node, AndOr):
            return self.and_or(node, cond)
        if isinstance(node, Pipeline):
            return self.pipeline(node, cond)
        if isinstance(node, If):
            return self.if_(node, cond)
        if isinstance(node, (For, While)):
            return self.loop(node)
        if isinstance(node, Case):
            return self.case(node, cond)
        if isinstance(node, Group):
            return self.group(node, cond)
        if isinstance(node, FuncDef):
            self.state.functions[node.name] = node
            return True
        if isinstance(node, Compound):
            return self.compound(node, cond)
        if isinstance(node, DoubleBracket):
            status, self.why = self.tests.double_bracket(node.items)
            return status
        if isinstance(node, ArithCommand):
            status = self.ex.arith_status(node.expr)
            self.why = "it uses a value known only when the script runs"
            return status
        raise ScriptError(f"line {getattr(node, 'line', 0)}: the wizard cannot read this command")

    def decide(self, status: Status, node, default: bool = False) -> bool:
        """A status that decides what runs next; an unknown one becomes a recorded decision."""
        if status is not None:
            return status
        line, text = describe(node)
        labels = ["fails", "succeeds"] if self.why_is_command else ["false", "true"]
        self.why_is_command = False
        return bool(self.choose(line, text, self.why or "it is known only when the script runs", labels,
                                int(default)))

    def choose(self, line: int, text: str, why: str, options: list[str], default: int = 0) -> int:
        key = (self.file, line, text)
        if key not in self.ctx.decisions:
            self.ctx.decisions[key] = Decision(key, line, text, why, options, default, self.file)
        if key in self.ctx.forced:
            return self.ctx.forced.pop(key)
        return self.ctx.decisions[key].chosen

    # ---- lists and compound commands ----------------------------------------------------------------
    def and_or(self, node: AndOr, cond: bool) -> Status:
        status = self.exec(node.first, cond or bool(node.rest))
        previous = node.first
        for k, (op, item) in enumerate(node.rest):
            ok = self.decide(status, previous)
            if (op == "&&") == ok:
                status = self.exec(item, cond or k < len(node.rest) - 1)
                previous = item
            else:
                status = ok
        return status

    def pipeline(self, node: Pipeline, cond: bool) -> Status:
        status: Status = True
        for k, command in enumerate(node.commands):
            last = k == len(node.commands) - 1
            if last and len(node.commands) == 1:
                status = self.exec(command, cond)
            else:
                status = self.subshell(command, cond and last, capture=self.capture if k == 0 else None)
        return status if not node.negated or status is None else not status

    def if_(self, node: If, cond: bool) -> Status:
        for test, body in node.clauses:
            if self.decide(self.exec(test, cond=True), test):
                return self.exec(body, cond)
        if node.else_body is not None:
            return self.exec(node.else_body, cond)
        return True

    def case(self, node: Case, cond: bool) -> Status:
        subject = self.ex.text(node.word)
        arms: list[int] = []
        for k, item in enumerate(node.items):
            match = self._arm_matches(subject, item)
            if match is True and not arms:
                return self._run_arms(node, k, cond)
            if match is not False:
                arms.append(k)
            if match is True:
                break
        if not arms:
            return True
        labels = [" | ".join(self.ex.ctx.table.render(self.ex.text(p)) for p in node.items[k].patterns) + ")"
                  for k in arms]
        why = f"{self.ctx.table.render(subject)} is known only when the script runs"
        chosen = self.choose(node.line, node.text, why, labels, 0)
        return self._run_arms(node, arms[chosen], cond)

    def _arm_matches(self, subject: str, item) -> bool | None:
        result: bool | None = False
        for pattern in item.patterns:
            if pattern.raw_literal == "*" and pattern.parts[0].kind == "lit":
                return True
            regex = self.ex.pattern(pattern)
            if regex is None or has_marker(subject):
                result = None
            elif regex.match(subject):
                return True
        return result

    def _run_arms(self, node: Case, k: int, cond: bool) -> Status:
        status = self.exec(node.items[k].body, cond)
        while node.items[k].fallthrough == ";&" and k + 1 < len(node.items):
            k += 1
            status = self.exec(node.items[k].body, cond)
        return status

    def loop(self, node) -> Status:
        self.loops.append(node.line)
        try:
            if isinstance(node, While):
                self._while(node)
            elif node.c_style is not None:
                self._c_for(node)
            else:
                self._for(node)
        finally:
            self.loops.pop()
        return True

    def _iterate(self, body: Seq) -> bool:
        """Run one pass of a loop body; False when ``break`` ends the loop."""
        try:
            self.exec(body)
        except LoopControl as ctl:
            if ctl.levels > 1:
                raise LoopControl(ctl.kind, ctl.levels - 1) from None
            return ctl.kind == "continue"
        return True

    def _for(self, node: For) -> None:
        items = self.ex.words([t.word for t in node.words]) if node.words is not None else (
            self.ex.list_value("@") or [])
        if any(has_marker(i) for i in items):
            self.why = "its list is known only when the script runs"
            if not self.choose(node.line, f"for {node.var} in ...", self.why, ["does not run", "runs once"]):
                return
            items = items[:1]
        for item in items[:MAX_LOOP_ITEMS]:
            self.state.set(node.var, item, node.line)
            if not self._iterate(node.body):
                break

    def _while(self, node: While) -> None:
        while True:
            status = self.exec(node.cond, cond=True)
            go = self.decide(status, node.cond, default=node.until)
            if go == node.until or not self._iterate(node.body):
                return

    def _c_for(self, node: For) -> None:
        init, _, rest = node.c_style.partition(";")
        test, _, step = rest.partition(";")
        self.ex.arith_status(init) if init.strip() else None
        while True:
            status = self.ex.arith_status(test) if test.strip() else True
            self.why = "its condition uses a value known only when the script runs"
            if not self.decide(status, node) or not self._iterate(node.body):
                return
            if step.strip():
                self.ex.arith_status(step)

    def group(self, node: Group, cond: bool) -> Status:
        if node.subshell:
            return self.subshell(node.body, cond, capture=self.capture)
        return self.exec(node.body, cond)

    def compound(self, node: Compound, cond: bool) -> Status:
        if self.capture is not None and builtins.stdout_redirected(node.redirects):
            saved, self.capture = self.capture, None
            try:
                return self.exec(node.node, cond)
            finally:
                self.capture = saved
        return self.exec(node.node, cond)

    def subshell(self, node, cond: bool, capture: list[str] | None = None) -> Status:
        sub = self.child(self.state.fork(), capture)
        try:
            return sub.exec(node, cond)
        except ScriptExit:
            return True
        finally:
            self.opaque |= sub.opaque
            self.why = sub.why

    def child(self, state: State, capture: list[str] | None, file: str | None = None) -> Interpreter:
        if self.depth + 1 > MAX_CALL_DEPTH:
            raise ScriptError(f"line {self.ex.line}: subshells and substitutions nested more than "
                              f"{MAX_CALL_DEPTH} deep")
        sub = Interpreter(self.ctx, state, file or self.file, capture, self.depth + 1)
        sub.loops, sub.functions = list(self.loops), list(self.functions)
        return sub

    # ---- command substitution -----------------------------------------------------------------------
    def substitute(self, text: str, line: int) -> str:
        nodes = parse_cached(text, line, self.depth + 1)
        sub = self.child(self.state.fork(), [])
        sub.run_nested(nodes)
        if sub.opaque:
            return self.ex.runtime(f"$({text.strip()})", "runs a program when the script runs")
        return "".join(sub.capture).rstrip("\n")

    # ---- simple commands ----------------------------------------------------------------------------
    def simple(self, node: Simple, cond: bool) -> Status:
        self.ex.line = node.line
        self.ctx.visited.add(id(node))
        argv = self.ex.words([t.word for t in node.words if t.kind == "word"])
        if not argv:  # the command expanded to nothing: its assignments stay, as bash keeps them
            builtins.assign_all(self, node.assigns + [t for t in node.words if t.kind == "array"])
            return True
        prefix = builtins.prefix_env(self, node.assigns)
        if self.ctx.launches and looks_like_override(self.ctx.table.render(argv[0] if argv else "")):
            launch = self.ctx.launches[-1]
            self.ctx.note(node.line, "orphan", f"{self.ctx.table.render(argv[0])!r} looks like an override but is "
                          f"not part of the launch (a comment or a missing backslash ends the command at line "
                          f"{launch.end_line}); bash runs it as a command and it fails")
        name = argv[0]
        if name in self.state.functions and name not in builtins.SPECIAL:
            return self.call(name, argv, node)
        handler = builtins.BUILTINS.get(name)
        if handler is not None:
            return handler(self, argv, node, cond)
        return self.external(argv, node, prefix, cond)

    def external(self, argv: list[str], node: Simple, prefix: dict[str, str], cond: bool) -> Status:
        cmd = classify(argv, self.ctx.table.render)
        render = self.ctx.table.render
        if cmd.kind == "launch":
            self.record_launch(cmd, node, {**prefix, **cmd.env})
        elif cmd.kind == "remote":
            self.ctx.refuse(node.line, f"verl is started through {cmd.program!r}; the wizard reads launches it can "
                            f"plan ('python3 -m {ENTRY}', also through torchrun, uv run, env or exec): run "
                            f"{cmd.program} around the script it writes", self.file)
        elif cmd.kind == "other":
            self.ctx.refuse(node.line, f"this script runs {render(cmd.module)}, not {ENTRY}; the wizard plans "
                            f"{ENTRY} runs only", self.file)
        if "exec" in cmd.via:
            raise ScriptExit(node.line, "exec replaces the shell")
        if cmd.kind in ("launch", "remote", "other"):
            return True
        if self.capture is not None and not builtins.stdout_redirected(node.redirects) and not cond:
            self.opaque = True
        if cond:
            program = render(cmd.program or argv[0])
            self.why = f"the wizard does not run {program}, so only the machine that runs the script knows"
            self.why_is_command = True
            return None
        return True

    def record_launch(self, cmd, node: Simple, env: dict[str, str]) -> None:
        if self.loops:
            raise ScriptError(f"line {node.line}: the {ENTRY} launch is inside a loop (line {self.loops[0]}), so "
                              "how often it runs is known only when the script runs; give the wizard one launch")
        end_line = node.line + node.text.count("\n")
        self.ctx.launches.append(Launch(list(cmd.args), node.line, end_line, env, list(cmd.via), self.file))

    def call(self, name: str, argv: list[str], node: Simple) -> Status:
        fn = self.state.functions[name]
        if len(self.functions) >= MAX_CALL_DEPTH:
            raise ScriptError(f"line {node.line}: functions call each other more than {MAX_CALL_DEPTH} deep "
                              f"({name} at line {fn.line})")
        saved = self.state.positional
        self.state.positional = argv[1:]
        self.state.locals.append({})
        self.functions.append(name)
        self.ex.function = name
        try:
            return self.exec(fn.body)
        except FunctionReturn:
            return True
        finally:
            for var, old in self.state.locals.pop().items():
                if old is None:
                    self.state.vars.pop(var, None)
                else:
                    self.state.vars[var] = old
            self.state.positional = saved
            self.functions.pop()
            self.ex.function = self.functions[-1] if self.functions else ""


def describe(node) -> tuple[int, str]:
    """The line and the script's text of a command, to quote it in a finding."""
    if isinstance(node, Seq):
        node = node.items[-1] if node.items else None
    if isinstance(node, AndOr):
        parts = [describe(node.first)[1]] + [f"{op} {describe(n)[1]}" for op, n in node.rest]
        return node.line, " ".join(parts)
    if isinstance(node, Pipeline):
        return node.line, ("! " if node.negated else "") + " | ".join(describe(c)[1] for c in node.commands)
    if isinstance(node, Compound):
        return describe(node.node)
    if isinstance(node, (Simple, DoubleBracket, ArithCommand)):
        return node.line, " ".join(node.text.split())
    if isinstance(node, Group):
        return node.line, "{ " + describe(node.body)[1] + "; }"
    if isinstance(node, For):
        return node.line, f"for (({node.c_style}))" if node.c_style is not None else f"for {node.var}"
    return getattr(node, "line", 0), type(node).__name__.lower()
