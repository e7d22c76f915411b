"""Reading what a user hands the wizard (configs, plans, cluster specs), within bounds checked before anything
is built: a size, a nesting depth, and for YAML the size after its aliases are expanded (a "billion laughs"
file is a few hundred bytes that expand to gigabytes). Over a bound is a one-line ValueError, like any other
unreadable input; so are YAML values no config holds (``!!binary``, ``!!set``); dates are read as the text they were written as.
"""

from __future__ import annotations

import datetime
import json

import yaml

MAX_BYTES = 8 * 1024 * 1024  # far past any verl config, plan or cluster spec (the largest verl YAML is ~40 KiB)
MAX_NODES = 200_000  # values after YAML aliases are expanded
MAX_DEPTH = 64  # nesting levels (verl's own tree is 8 deep)

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PLAIN = (str, int, float, bool, type(None))


def check_size(text: str, what: str) -> None:
    if len(text) > MAX_BYTES:
        raise ValueError(f"{what}: {len(text):,} characters is more than a config holds (the limit is "
                         f"{MAX_BYTES // 1024 // 1024} MiB)")


def load_yaml(text: str, what: str):
    """The YAML document in ``text``, as plain dicts, lists and scalars; ValueError (one line) otherwise."""
    check_size(text, what)
    try:
        node = yaml.compose(text, Loader=_LOADER)
        if node is None:
            return None
        _expanded(node, what, 0, {})
        doc = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader
    except RecursionError:
        raise ValueError(f"{what}: nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{what}: not valid YAML ({_one_line(exc)})") from None
    return _plain(doc, what, "")


def load_json(text: str, what: str):
    """The JSON document in ``text``, bounded like YAML; ValueError (one line) otherwise."""
    check_size(text, what)
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ValueError(f"{what}: nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    _depth(doc, what, 0)
    return doc


def _expanded(node, what: str, depth: int, sizes: dict) -> int:
    """How many values ``node`` stands for once aliases are copied out (memoised: linear in the file)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{what}: nested deeper than {MAX_DEPTH} levels")
    key = id(node)
    if key not in sizes:
        sizes[key] = 0  # an alias cycle counts as nothing more
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        sizes[key] = 1 + sum(_expanded(child, what, depth + 1, sizes) for child in children)
        if sizes[key] > MAX_NODES:
            raise ValueError(f"{what}: its aliases expand to more than {MAX_NODES:,} values (a YAML bomb?)")
    return sizes[key]


def _plain(value, what: str, where: str, depth: int = 0):
    """``value`` as plain data: dates become the text they were written as (OmegaConf reads them as text);
    anything else no config holds is refused with where it is."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{what}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, _PLAIN):
                raise ValueError(f"{what}: a key at {where or 'the top'} is a {type(k).__name__}, not text")
            out[k] = _plain(v, what, f"{where}.{k}" if where else str(k), depth + 1)
        return out
    if isinstance(value, list):
        return [_plain(v, what, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if not isinstance(value, _PLAIN):
        raise ValueError(f"{what}: {where or 'the document'} is a {type(value).__name__} (a YAML tag no verl config "
                         "uses); write it as text")
    return value


def _depth(value, what: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"{what}: nested deeper than {MAX_DEPTH} levels")
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        _depth(child, what, depth + 1)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]
