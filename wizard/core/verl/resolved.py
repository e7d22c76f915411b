"""A composed config read as verl reads it: resolved values (interpolations, defaults), what was set, and the
facts verl derives from them (GPU count, which models it loads).

Values come from :class:`Resolver`, which evaluates, in Python, every interpolation form verl's config holds (and the
ones users write the same way) once per composition, and answers exactly as OmegaConf would; a form it does not
know (``oc.env``, quoting, escapes...) is handed to OmegaConf itself. Values that no override touches are also
cached across checks on the schema variant, so the thousandth check reads most keys from a dictionary."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from omegaconf import AnyNode, DictConfig, ListConfig, OmegaConf
from omegaconf.errors import InterpolationToMissingValueError, MissingMandatoryValue

from wizard.core.verl import roles
from wizard.core.verl.schema import SchemaVariant


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"<{self._name}>"


UNRESOLVABLE = _Marker("unresolvable")
# ``???`` as verl reads it: the value itself, a path through it, or an interpolation that reaches one
# (OmegaConf's MissingMandatoryValue and InterpolationToMissingValueError).
MISSING = _Marker("missing")


@dataclass
class ResolvedConfig:
    cfg: DictConfig
    variant: SchemaVariant
    set_keys: set[str] = field(default_factory=set)
    # Every key an override sets, adds or deletes: values that depend on none of them are cached
    # across checks. None (unknown) caches nothing.
    touched: frozenset[str] | None = None
    # Values set by overrides as plain values (see Composed.plain_values): no lookup needed.
    plain_values: Mapping[str, object] = field(default_factory=dict)
    _memo: dict = field(default_factory=dict, repr=False)
    _resolver: Resolver | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def resolver(self) -> Resolver:
        """This composition's values, evaluated once each."""
        if self._resolver is None:
            self._resolver = Resolver(self.cfg)
        return self._resolver

    def get(self, key: str, default=None):
        """The resolved value of ``key`` as verl would read it; UNRESOLVABLE if it cannot resolve."""
        memo_key = (key, default if isinstance(default, (int, str, bool, type(None))) else id(default))
        if memo_key not in self._memo:
            self._memo[memo_key] = self._get(key, default)
        return self._memo[memo_key]

    def _get(self, key: str, default=None):
        if key in self.plain_values:
            return self.plain_values[key]
        cacheable = default is None and self._untouched(key)
        if cacheable:
            cache = self.variant.resolved_defaults
            if key in cache:
                value = cache[key]
                return copy.deepcopy(value) if isinstance(value, (list, dict)) else value
        value = self.resolver.select(key, default)
        if cacheable and value is not UNRESOLVABLE:
            self.variant.resolved_defaults[key] = copy.deepcopy(value) if isinstance(value, (list, dict)) else value
        return value

    def untouched(self, key: str) -> bool:
        """True when no override touches ``key`` or a key its default reads: its value is verl's default."""
        return self._untouched(key)

    def _untouched(self, key: str) -> bool:
        """True when no override touches ``key`` or a key its default reads: its value is verl's default."""
        touched = self.touched
        if touched is None:
            return False
        reach = _reach(self.variant, key)
        if reach is None:
            return False
        if not touched:
            return True
        deps, above = reach
        return above.isdisjoint(touched) and deps.isdisjoint(self._touched_ancestors)

    @property
    def _touched_ancestors(self) -> frozenset[str]:
        """Every section above a touched key (an override of ``a.b.c`` touches what ``a.b`` holds)."""
        if "_anc" not in self._memo:
            self._memo["_anc"] = frozenset(".".join(t.split(".")[:i])
                                           for t in self.touched for i in range(1, t.count(".") + 1))
        return self._memo["_anc"]

    def int(self, key: str) -> int | None:
        """The value if it is an int verl can do arithmetic with, else None."""
        value = self.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def num(self, key: str) -> float | None:
        value = self.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def missing(self, key: str) -> bool:
        """``key`` itself holds ``???`` (OmegaConf.is_missing on its resolved parent: not through an interpolation)."""
        return self.resolver.is_missing_here(key)

    def missing_value(self, key: str) -> bool:
        """``key`` is ``???`` as verl reads it: itself, or through an interpolation or a path that reaches one."""
        return self.resolver.is_missing(key)

    # Derived facts, computed exactly as verl computes them.
    @property
    def n_gpus(self) -> int | None:
        per_node, nodes = self.int("trainer.n_gpus_per_node"), self.int("trainer.nnodes")
        return per_node * nodes if per_node is not None and nodes is not None else None

    @property
    def dynamic_bsz(self) -> bool:
        return bool(self.get("actor_rollout_ref.actor.use_dynamic_bsz"))

    @property
    def strategy(self):
        return self.get("actor_rollout_ref.actor.strategy")

    @property
    def need_ref(self) -> bool:
        """verl.trainer.ppo.utils.need_reference_policy."""
        return roles.need_ref(self)

    @property
    def need_critic(self) -> bool:
        """verl.trainer.ppo.utils.need_critic."""
        return roles.need_critic(self)

    def is_set(self, key: str) -> bool:
        return key in self.set_keys


def default_values(variant: SchemaVariant, keys: tuple[str, ...]) -> dict:
    """verl's own value of each of ``keys`` when no override touches the config, from the schema snapshot: the
    default config resolved (interpolations followed), a dataclass field's own default where the YAML has no key
    (``+`` keys), None where verl has neither. Kept on the variant: the same for every check."""
    memo = variant.__dict__.setdefault("_default_values", {})
    if keys not in memo:
        # a config of its own: the shared default config is changed in place while a check composes on it
        resolved = ResolvedConfig(cfg=OmegaConf.create(variant.tree), variant=variant, touched=frozenset())
        out = {}
        for key in keys:
            info = variant.keys.get(key)
            if info is not None and not info.in_yaml:
                out[key] = info.default
                continue
            value = resolved.get(key)
            out[key] = None if value is UNRESOLVABLE else value
        memo[keys] = out
    return dict(memo[keys])


# ---------------------------------------------------------------------------------------------------------------
# The resolver.
#
# OmegaConf resolves ``${...}`` by parsing the string with its ANTLR grammar every time a value is read, which is
# most of what a check used to cost. This reads the same node tree and mirrors what OmegaConf 2.3 does
# (``BaseContainer._select_impl``, ``_resolve_node_interpolation``, the ``oc.select`` resolver, ``GrammarVisitor``,
# ``_to_content``) for the forms below; anything else raises ``_Unknown`` and the public call asks OmegaConf:
#
#   ${a.b}  ${.x}  ${..x}              node interpolations, absolute and relative
#   ${oc.select:key}  ${oc.select:key,default}
#                                      default: null, true/false, ints, floats, text, [], {}, [..], {k: v},
#                                      and interpolations (``${oc.select:a,${oc.select:b,null}}``)
#   text ${a} more ${b}                several pieces, joined as text
#
# and lists and dictionaries holding any of them (their values read as ``OmegaConf.to_container(resolve=True)``).
# The tests hold every answer to OmegaConf's, on every interpolation in the schema and on random overrides.
# ---------------------------------------------------------------------------------------------------------------


def _reach(variant: SchemaVariant, key: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The keys the default of ``key`` reads (``interpolation_deps``) and every section above or at them: an
    override of any of those, or of a key below one of the reads, can change the value. Kept on the variant."""
    cache = variant.__dict__.setdefault("_reach", {})
    if key not in cache:
        deps = variant.interpolation_deps(key)
        cache[key] = None if deps is None else (deps, frozenset(
            ".".join(parts[:i]) for parts in (d.split(".") for d in deps) for i in range(1, len(parts) + 1)))
    return cache[key]


class _Unknown(Exception):
    """A form this resolver does not evaluate: OmegaConf answers instead."""


class _Failed(Exception):
    """OmegaConf would raise: InterpolationToMissingValueError (``to_missing``) or another resolution error."""

    def __init__(self, to_missing: bool) -> None:
        super().__init__()
        self.to_missing = to_missing


# What a walk to a key finds (OmegaConf's _select_impl): a value, a container (its path and node), ``???`` (the
# node, or a node on the way), or nothing (no such key, or a value where the path goes on).
_VALUE, _CONTAINER, _MISS, _ABSENT = "value", "container", "missing", "absent"


class Resolver:
    """The values of one composed config, each evaluated once, as OmegaConf (and so verl) reads them.

    Valid while ``cfg`` is not changed (a check's composition)."""

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg = cfg
        self._found: dict[str, tuple | _Unknown | _Failed] = {}  # key -> what a walk from the root finds
        self._resolved: dict[tuple, tuple | _Failed] = {}  # path of an interpolation -> its result
        self._active: set[tuple] = set()  # interpolations (and containers) being evaluated: a cycle
        self._selected: dict[tuple, object] = {}  # (key, default) -> select()'s answer

    # Public answers -------------------------------------------------------------------------------------------

    def select(self, key: str, default=None):
        """``OmegaConf.select(cfg, key, default=default, throw_on_missing=False)``, a container as
        ``OmegaConf.to_container(resolve=True)``; UNRESOLVABLE where that raises."""
        memo = (key, default if isinstance(default, (int, str, bool, type(None))) else id(default))
        if memo not in self._selected:
            self._selected[memo] = self._select(key, default)
        return self._selected[memo]

    def value(self, key: str):
        """The value of ``key``; MISSING where it is ``???`` as verl reads it (see ``is_missing``); UNRESOLVABLE
        where it cannot resolve otherwise; None where there is no such key."""
        if self.is_missing(key):
            return MISSING
        return self.select(key)

    def is_missing(self, key: str) -> bool:
        """``OmegaConf.select(cfg, key, throw_on_missing=True)`` raises MissingMandatoryValue or
        InterpolationToMissingValueError: ``???`` itself, on the way, or reached through an interpolation."""
        try:
            kind, _ = self._find(key)
        except _Failed as exc:
            return exc.to_missing
        except _Unknown:
            return _omegaconf_is_missing(self.cfg, key)
        return kind == _MISS

    def is_missing_here(self, key: str) -> bool:
        """``OmegaConf.is_missing`` on the key's resolved parent: the node itself holds ``???``."""
        parent_key, _, leaf = key.rpartition(".")
        try:
            if parent_key:
                kind, found = self._find(parent_key)
                if kind != _CONTAINER:
                    return False
                node = found[1]
            else:
                node = self.cfg
            if not isinstance(node, DictConfig):
                return False
            child = _content(node).get(leaf)
            if child is None:
                return False
            if type(child) is AnyNode:
                return child._val == "???"
            _content(child)  # a container: ``???`` or an interpolation in its place is OmegaConf's to read
            return False
        except _Failed:
            return False
        except _Unknown:
            return _omegaconf_is_missing_here(self.cfg, key)

    def raw(self, key: str):
        """The value as written at ``key`` (an interpolation unresolved), or None when there is no such node."""
        parent_key, _, leaf = key.rpartition(".")
        try:
            if parent_key:
                kind, found = self._find(parent_key)
                if kind != _CONTAINER:
                    return None
                node = found[1]
            else:
                node = self.cfg
            if not isinstance(node, DictConfig):
                _content(node)
                return None  # a list: OmegaConf's ``_get_node`` takes no text index
            child = _content(node).get(leaf)
            if child is None or (type(child) is AnyNode and child._val == "???"):
                return None  # ``leaf in parent`` is False for ``???``
            if type(child) is not AnyNode:
                _content(child)  # a container that is None, ``???`` or an interpolation: OmegaConf's to read
            return child._value()
        except _Failed:
            return None
        except _Unknown:
            return _omegaconf_raw(self.cfg, key)

    def error(self, key: str) -> Exception | None:
        """OmegaConf's own exception for a key that does not resolve (what verl prints), else None."""
        if self.select(key) is not UNRESOLVABLE:
            return None
        try:
            node = OmegaConf.select(self.cfg, key, throw_on_missing=False)
            if OmegaConf.is_config(node):
                OmegaConf.to_container(node, resolve=True)
        except Exception as exc:  # noqa: BLE001 - the exception is the answer
            return exc
        return None

    # Walking and evaluating -----------------------------------------------------------------------------------

    def _select(self, key: str, default):
        try:
            kind, found = self._find(key)
            if kind == _VALUE:
                return found
            if kind == _CONTAINER:
                return self._plain(*found)
            return default
        except _Failed:
            return UNRESOLVABLE
        except _Unknown:
            return _omegaconf_select(self.cfg, key, default)

    def _find(self, key: str) -> tuple:
        """What OmegaConf.select finds at ``key`` from the root; raises _Failed / _Unknown as evaluating it does."""
        found = self._found.get(key)
        if found is None:
            try:
                if not _KEY.fullmatch(key):
                    raise _Unknown
                found = self._walk((), self.cfg, key.split("."))
            except (_Unknown, _Failed) as exc:
                found = exc
            self._found[key] = found
        if isinstance(found, Exception):
            raise found
        return found

    def _walk(self, path: tuple, node, parts: list) -> tuple:
        """``_select_impl``: follow ``parts`` from the container ``node`` at ``path``, dereferencing interpolations
        on the way. ``???`` anywhere on the way is _MISS (the caller decides whether that raises)."""
        last = len(parts) - 1
        for i, part in enumerate(parts):
            content = _content(node)
            if isinstance(content, dict):
                child = content.get(part)
            else:
                try:
                    index = int(part)
                except ValueError:
                    raise _Failed(False) from None  # OmegaConf: "Index 'x' (str) is not an int"
                child = content[index] if 0 <= index < len(content) else None
                part = index
            if child is None:
                return _ABSENT, None
            child_path = path + (part,)
            kind, found = self._node(child_path, child)
            if kind == _MISS or i == last:
                return kind, found
            if kind != _CONTAINER:
                return _ABSENT, None  # a value where the path goes on (OmegaConf's ConfigTypeError)
            path, node = found
        return _CONTAINER, (path, node)  # no parts: the container itself

    def _node(self, path: tuple, node) -> tuple:
        """A node as read: its value, or the container (path, node), or _MISS; interpolations evaluated."""
        if type(node) is AnyNode:
            value = node._val
            if isinstance(value, str):
                if value == "???":
                    return _MISS, None
                if "${" in value:
                    return self._interpolation(path, value)
            return _VALUE, value
        _content(node)  # raises _Unknown for anything but a plain dict or list
        return _CONTAINER, (path, node)

    def _interpolation(self, path: tuple, text: str) -> tuple:
        """The value the interpolation ``text`` at ``path`` resolves to: (_VALUE, value) or (_CONTAINER, found)."""
        done = self._resolved.get(path)
        if done is None:
            if path in self._active:
                raise _Unknown  # a cycle: OmegaConf says how it ends
            tree = _parse(text)
            if tree is None:
                raise _Unknown
            self._active.add(path)
            try:
                done = self._text(tree, path[:-1])
            except _Failed as exc:
                done = exc
            finally:
                self._active.discard(path)
            self._resolved[path] = done
        if isinstance(done, _Failed):
            raise done
        return done

    def _text(self, pieces: tuple, parent: tuple) -> tuple:
        """GrammarVisitor.visitText: one interpolation is its value as is; anything else is joined as text."""
        if len(pieces) == 1 and not isinstance(pieces[0], str):
            return self._interp(pieces[0], parent)
        return _VALUE, "".join(p if isinstance(p, str) else self._str(self._interp(p, parent)) for p in pieces)

    @staticmethod
    def _str(result: tuple) -> str:
        kind, value = result
        if kind != _VALUE:
            raise _Unknown  # a container's str(): OmegaConf's to write
        return str(value)

    def _interp(self, interp: tuple, parent: tuple) -> tuple:
        if interp[0] == "node":
            return self._node_interpolation(interp[1], parent)
        _, name, args = interp
        if name != "oc.select" or not 1 <= len(args) <= 2:
            raise _Unknown
        values = [self._element(a, parent) for a in args]  # every argument first, as the grammar does
        key = values[0]
        if not isinstance(key, str) or not _REL_KEY.fullmatch(key):
            raise _Unknown
        base, rest = self._base(key, parent)
        kind, found = self._walk(base, self._at(base), rest.split("."))
        if kind in (_MISS, _ABSENT):
            default = values[1] if len(values) == 2 else None
            if isinstance(default, _ContainerArg):
                return _CONTAINER, (default.path, default.node)
            return _VALUE, default
        return kind, found

    def _node_interpolation(self, key: str, parent: tuple) -> tuple:
        """``${a.b}`` / ``${.x}``: ``_resolve_node_interpolation`` (``???`` and absence raise)."""
        base, rest = self._base(key, parent)
        kind, found = self._walk(base, self._at(base), rest.split("."))
        if kind == _MISS:
            raise _Failed(True)
        if kind == _ABSENT:
            raise _Failed(False)
        if kind == _CONTAINER and found[0] == parent[: len(found[0])]:
            raise _Unknown  # an interpolation to its own parent: OmegaConf's error
        return kind, found

    @staticmethod
    def _base(key: str, parent: tuple) -> tuple[tuple, str]:
        """``_resolve_key_and_root``: where a key starts (the root, or up from the parent) and the rest of it."""
        rest = key.lstrip(".")
        dots = len(key) - len(rest)
        if not rest:
            raise _Unknown
        if not dots:
            return (), rest
        up = dots - 1
        if up > len(parent):
            raise _Failed(False)  # ConfigKeyError: above the root
        return parent[: len(parent) - up], rest

    def _at(self, path: tuple):
        node = self.cfg
        for part in path:
            node = _content(node)[part]
        return node

    def _element(self, element: tuple, parent: tuple):
        """A resolver argument's value (``_get_value(visitElement(...))``)."""
        kind = element[0]
        if kind == "literal":
            return element[1]
        if kind == "pieces":
            pieces = element[1]
            if len(pieces) == 1:
                result = self._interp(pieces[0], parent)
                return result[1] if result[0] == _VALUE else _ContainerArg(*result[1])
            return "".join(p if isinstance(p, str) else self._str(self._interp(p, parent)) for p in pieces)
        if kind == "list":
            items = [self._element(e, parent) for e in element[1]]
        else:
            items = {k: self._element(e, parent) for k, e in element[1]}
        if any(isinstance(v, _ContainerArg) for v in (items.values() if isinstance(items, dict) else items)):
            raise _Unknown
        return items

    def _plain(self, path: tuple, node):
        """``OmegaConf.to_container(node, resolve=True)``: ``???`` stays ``'???'``, interpolations resolved."""
        if path in self._active:
            raise _Unknown  # holds an interpolation of itself
        self._active.add(path)
        try:
            content = _content(node)
            if isinstance(content, dict):
                return {k: self._plain_child(path + (k,), child) for k, child in content.items()}
            return [self._plain_child(path + (i,), child) for i, child in enumerate(content)]
        finally:
            self._active.discard(path)

    def _plain_child(self, path: tuple, child):
        if type(child) is AnyNode and child._val == "???":
            return "???"
        if type(child) is not AnyNode:
            value = child._value()
            if value is None or value == "???":
                return value  # a None or missing container
        kind, found = self._node(path, child)
        return self._plain(*found) if kind == _CONTAINER else found


class _ContainerArg:
    """A container passed as a resolver argument."""

    def __init__(self, path: tuple, node) -> None:
        self.path, self.node = path, node


def _content(node):
    """The dict or list a DictConfig / ListConfig holds; _Unknown for anything else (typed nodes, or a container
    that is None, ``???`` or an interpolation)."""
    if type(node) is DictConfig or type(node) is ListConfig:
        content = node.__dict__["_content"]
        if isinstance(content, (dict, list)):
            return content
    raise _Unknown


# Keys this resolver walks: dotted names (list indices as numbers); anything else (brackets, spaces) is OmegaConf's.
_KEY = re.compile(r"[\w\-]+(?:\.[\w\-]+)*")
_REL_KEY = re.compile(r"\.*[\w\-]+(?:\.[\w\-]+)*")


# Parsing: a string holding ``${`` becomes a tuple of pieces, each a text or an interpolation:
#   ("node", key)                   ${a.b}, ${.x}
#   ("resolver", name, (arg, ...))  ${oc.select:a,b}
# an argument being ("literal", value), ("pieces", (piece, ...)), ("list", (arg, ...)) or ("dict", ((key, arg), ...)).
# None: a form this does not read.

_INT = r"(?:0|[1-9](?:_?[0-9])*)"
_POINT = rf"(?:{_INT}\.|(?:{_INT})?\.[0-9](?:_?[0-9])*)"
_FLOAT = re.compile(rf"[+-]?(?:{_POINT}|(?:{_INT}|{_POINT})[eE][+-]?[0-9](?:_?[0-9])*|[Ii][Nn][Ff]|[Nn][Aa][Nn])")
_INT_RE = re.compile(rf"[+-]?{_INT}")
_BOOL = re.compile(r"[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]")
_NULL = re.compile(r"[Nn][Uu][Ll][Ll]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z_][A-Za-z0-9_\-]*)*")
_PRIMITIVE_CHARS = re.compile(r"[A-Za-z0-9_\-/+.%*@?| \t]*")  # what an unquoted value may hold here (no quotes, escapes)
_WS = " \t"


def _primitive(text: str):
    """An unquoted value as OmegaConf's lexer reads it: one token is typed (int, float, bool, null), else text."""
    if _INT_RE.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    if _BOOL.fullmatch(text):
        return text.lower() == "true"
    if _NULL.fullmatch(text):
        return None
    return text


@lru_cache(maxsize=4096)
def _parse(text: str) -> tuple | None:
    if "\\" in text:
        return None  # escapes
    try:
        pieces, pos = [], 0
        while True:
            start = text.find("${", pos)
            if start < 0:
                if pos < len(text):
                    pieces.append(text[pos:])
                return tuple(pieces)
            if start > pos:
                pieces.append(text[pos:start])
            interp, pos = _interpolation_at(text, start)
            pieces.append(interp)
    except _Unknown:
        return None


def _interpolation_at(text: str, start: int) -> tuple[tuple, int]:
    """The interpolation that opens at ``text[start]`` (``${``) and the position after it."""
    pos = _skip_ws(text, start + 2)
    m = _REL_KEY.match(text, pos)
    if not m:
        raise _Unknown
    after = _skip_ws(text, m.end())
    if after < len(text) and text[after] == "}":
        return ("node", m.group(0)), after + 1
    if after < len(text) and text[after] == ":" and _NAME.fullmatch(m.group(0)):
        args, pos = _sequence(text, _skip_ws(text, after + 1), "}")
        return ("resolver", m.group(0), args), pos
    raise _Unknown


def _sequence(text: str, pos: int, close: str) -> tuple[tuple, int]:
    """Comma-separated elements up to ``close``; the position after it."""
    items = []
    pos = _skip_ws(text, pos)
    if pos < len(text) and text[pos] == close:
        return (), pos + 1
    while True:
        element, pos = _element_at(text, pos)
        items.append(element)
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            raise _Unknown
        if text[pos] == close:
            return tuple(items), pos + 1
        if text[pos] != ",":
            raise _Unknown
        pos = _skip_ws(text, pos + 1)


def _element_at(text: str, pos: int) -> tuple[tuple, int]:
    pos = _skip_ws(text, pos)
    if pos >= len(text):
        raise _Unknown
    if text[pos] == "[":
        items, pos = _sequence(text, pos + 1, "]")
        return ("list", items), pos
    if text[pos] == "{":
        pairs, pos = [], _skip_ws(text, pos + 1)
        if pos < len(text) and text[pos] == "}":
            return ("dict", ()), pos + 1
        while True:
            m = _NAME.match(text, pos)
            if not m or "." in m.group(0):
                raise _Unknown
            key = _primitive(m.group(0))
            pos = _skip_ws(text, m.end())
            if pos >= len(text) or text[pos] != ":":
                raise _Unknown
            value, pos = _element_at(text, pos + 1)
            pairs.append((key, value))
            pos = _skip_ws(text, pos)
            if pos < len(text) and text[pos] == "}":
                return ("dict", tuple(pairs)), pos + 1
            if pos >= len(text) or text[pos] != ",":
                raise _Unknown
            pos += 1
    # a primitive: text and interpolations up to a comma or a closing bracket, outer whitespace dropped
    pieces: list = []
    chunk_start = pos
    while pos < len(text) and text[pos] not in ",}]":
        if text.startswith("${", pos):
            if pos > chunk_start:
                pieces.append(text[chunk_start:pos])
            interp, pos = _interpolation_at(text, pos)
            pieces.append(interp)
            chunk_start = pos
        else:
            pos += 1
    if pos > chunk_start:
        pieces.append(text[chunk_start:pos])
    if pieces and isinstance(pieces[-1], str):
        pieces[-1] = pieces[-1].rstrip(_WS)
        if not pieces[-1]:
            pieces.pop()
    if not pieces:
        raise _Unknown  # an empty argument (OmegaConf warns and passes '')
    for piece in pieces:
        if isinstance(piece, str) and not _PRIMITIVE_CHARS.fullmatch(piece):
            raise _Unknown
    if len(pieces) == 1 and isinstance(pieces[0], str):
        return ("literal", _primitive(pieces[0])), pos
    return ("pieces", tuple(pieces)), pos


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


# OmegaConf itself, for what the resolver does not read: the calls each answer stands for.

def _omegaconf_select(cfg: DictConfig, key: str, default):
    try:
        value = OmegaConf.select(cfg, key, default=default, throw_on_missing=False)
    except Exception:  # noqa: BLE001 - interpolation errors are reported by their own rule
        return UNRESOLVABLE
    if OmegaConf.is_config(value):
        try:
            return OmegaConf.to_container(value, resolve=True)
        except Exception:  # noqa: BLE001
            return UNRESOLVABLE
    return value


def _omegaconf_is_missing(cfg: DictConfig, key: str) -> bool:
    try:
        OmegaConf.select(cfg, key, throw_on_missing=True)
    except (MissingMandatoryValue, InterpolationToMissingValueError):
        return True
    except Exception:  # noqa: BLE001 - other resolution errors are another rule's business
        return False
    return False


def _omegaconf_is_missing_here(cfg: DictConfig, key: str) -> bool:
    try:
        if "." not in key:
            return OmegaConf.is_missing(cfg, key)
        parent_key, _, leaf = key.rpartition(".")
        parent = OmegaConf.select(cfg, parent_key)
        return OmegaConf.is_config(parent) and leaf in parent.keys() and OmegaConf.is_missing(parent, leaf)
    except Exception:  # noqa: BLE001
        return False


def _omegaconf_raw(cfg: DictConfig, key: str):
    parent_key, _, leaf = key.rpartition(".")
    try:
        parent = OmegaConf.select(cfg, parent_key) if parent_key else cfg
        if not OmegaConf.is_config(parent) or leaf not in parent:
            return None
        node = parent._get_node(leaf)
        return node._value() if node is not None else None
    except Exception:  # noqa: BLE001
        return None
