"""The operators of ``${NAME<op>...}``: defaults, alternatives, case, substitution, removal, substrings."""

from __future__ import annotations

import fnmatch
import re

from wizard.core.scripts.values import has_marker

_MAX_PATTERN_VALUE = 4096  # prefix/suffix removal tries every cut: keep it to ordinary values


def apply_op(ex, name: str, index: str | None, value: str | None, op: str, expr: str) -> str:
    for prefix in (":-", ":=", ":+", ":?", "-", "=", "+", "?"):
        if op.startswith(prefix):
            return _default_family(ex, name, value, prefix, op[len(prefix):])
    if value is None:
        if name.isdigit() or not ex.from_environment(name):
            value = ex.argument(name) if name.isdigit() else ""  # unset in an empty environment: empty
        else:
            value = ex.env_ref(name)  # read from the environment elsewhere in the script: kept as set
    if has_marker(value):
        return ex.runtime("${" + expr + "}", "transforms a value known only at run time")
    if op in (",,", "^^", ",", "^", "@U", "@L", "@u"):
        return _case(value, op)
    if op.startswith("/"):
        return _substitute(ex, value, op[1:], expr)
    if op[:1] in ("#", "%"):
        return _remove(ex, value, op, expr)
    if op.startswith(":"):
        return _substring(ex, value, op[1:], expr)
    return ex.runtime("${" + expr + "}", "is an expansion the wizard does not evaluate")


def _default_family(ex, name: str, value: str | None, prefix: str, arg: str) -> str:
    colon = prefix.startswith(":")
    kind = prefix[-1]
    empty = value is None or (colon and value == "")
    if kind == "-":
        if value is None:
            return ex.default(name, arg)
        return ex.fragment(arg) if empty else value
    if kind == "=":
        if not empty:
            return value
        result = ex.default(name, arg) if value is None else ex.fragment(arg)
        if not name.isdigit():
            ex.state.set(name, result, ex.line)
        return result
    if kind == "+":
        return "" if empty else ex.fragment(arg)
    # "?": the script stops when the variable is missing
    if value is None or (empty and name in ex.ctx.defaults):
        if name.isdigit():
            ex.argument(name)
            ex.stop(f"${{{name}:?}}: the script needs argument {name}; run without arguments, bash stops here")
        ex.ctx.required.setdefault(name, ex.line)  # a knob the user must set: read as given from here on
        ref = ex.env_ref(name)
        ex.state.set(name, ref, ex.line)
        return ref
    if empty:
        message = ex.fragment(arg) or "parameter null or not set"
        ex.stop(f"${{{name}:?}}: {name} is empty, so bash stops here ({ex.ctx.table.render(message)})")
    return value


def _case(value: str, op: str) -> str:
    if op in (",,", "@L"):
        return value.lower()
    if op in ("^^", "@U"):
        return value.upper()
    if op == ",":
        return value[:1].lower() + value[1:]
    return value[:1].upper() + value[1:]


def _glob(text: str) -> str:
    return fnmatch.translate(text)[4:-3]


def _substitute(ex, value: str, spec: str, expr: str) -> str:
    mode = ""
    if spec[:1] in ("/", "#", "%"):
        mode, spec = spec[0], spec[1:]
    pattern_text, _, repl_text = _split_unescaped(spec)
    pattern, repl = ex.fragment(pattern_text), ex.fragment(repl_text)
    if has_marker(pattern) or has_marker(repl):
        return ex.runtime("${" + expr + "}", "substitutes a value known only at run time")
    if not pattern:
        return value
    regex = _glob(pattern)
    if mode == "#":
        regex = "^(?:" + regex + ")"
    elif mode == "%":
        regex = "(?:" + regex + ")$"
    count = 0 if mode == "/" else 1
    return re.sub(regex, lambda m: repl, value, count=count, flags=re.S)


def _split_unescaped(spec: str) -> tuple[str, str, str]:
    i = 0
    while i < len(spec):
        if spec[i] == "\\":
            i += 2
            continue
        if spec[i] == "/":
            return spec[:i], "/", spec[i + 1 :]
        i += 1
    return spec, "", ""


def _remove(ex, value: str, op: str, expr: str) -> str:
    longest = op[:2] in ("##", "%%")
    prefix = op[0] == "#"
    pattern = ex.fragment(op[2:] if longest else op[1:])
    if has_marker(pattern) or len(value) > _MAX_PATTERN_VALUE:
        return ex.runtime("${" + expr + "}", "removes a pattern from a value the wizard does not evaluate")
    regex = re.compile("(?s:" + _glob(pattern) + r")\Z")
    cuts = range(len(value) + 1)
    if prefix:
        for i in (reversed(cuts) if longest else cuts):
            if regex.match(value[:i]):
                return value[i:]
    else:
        for i in (cuts if longest else reversed(cuts)):
            if regex.match(value[i:]):
                return value[:i]
    return value


def _substring(ex, value: str, spec: str, expr: str) -> str:
    start_text, _, length_text = spec.partition(":")
    start = ex._int(start_text)
    length = ex._int(length_text) if length_text.strip() else None
    if start is None or (length_text.strip() and length is None):
        return ex.runtime("${" + expr + "}", "takes a substring at offsets known only at run time")
    if start < 0:
        start = max(0, len(value) + start)
    if length is None:
        return value[start:]
    end = start + length if length >= 0 else len(value) + length
    return value[start:end]
