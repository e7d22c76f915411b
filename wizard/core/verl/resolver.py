"""The values of one composed config, each evaluated once, in Python, exactly as OmegaConf (and so verl) would: a
key's value, whether it is ``???`` (directly, on the path or through an interpolation), its raw text, and the error
OmegaConf would raise. What :mod:`wizard.core.verl.interpolations` cannot read, or a node this does not walk (typed
nodes, a container set to an interpolation), is asked of OmegaConf with the very call the rules made before."""

from __future__ import annotations

from omegaconf import AnyNode, DictConfig, ListConfig, OmegaConf
from omegaconf.errors import InterpolationToMissingValueError, MissingMandatoryValue

from wizard.core.verl.interpolations import KEY, REL_KEY, Unknown, parse


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"<{self._name}>"


UNRESOLVABLE = _Marker("unresolvable")
# ``???`` as verl reads it: the value itself, a path through it, or an interpolation that reaches one
# (OmegaConf's MissingMandatoryValue and InterpolationToMissingValueError).
MISSING = _Marker("missing")


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
        self._found: dict[str, tuple | Unknown | _Failed] = {}  # key -> what a walk from the root finds
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
        except Unknown:
            return _omegaconf_is_missing(self.cfg, key)
        return kind == _MISS

    def is_missing_here(self, key: str) -> bool:
        """``OmegaConf.is_missing`` on the key's resolved parent: the node itself holds ``???``."""
        try:
            parent = self._parent(key)
            if parent is None:
                return False
            node, leaf = parent
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
        except Unknown:
            return _omegaconf_is_missing_here(self.cfg, key)

    def raw(self, key: str):
        """The value as written at ``key`` (an interpolation unresolved), or None when there is no such node."""
        try:
            parent = self._parent(key)
            if parent is None:
                return None
            node, leaf = parent
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
        except Unknown:
            return _omegaconf_raw(self.cfg, key)

    def _parent(self, key: str) -> tuple[object, str] | None:
        """(the container holding ``key``'s last part, as a walk from the root finds it, that part); None where the
        path to it is not a container. Raises _Failed / Unknown as the walk does."""
        parent_key, _, leaf = key.rpartition(".")
        if not parent_key:
            return self.cfg, leaf
        kind, found = self._find(parent_key)
        return (found[1], leaf) if kind == _CONTAINER else None

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
        except Unknown:
            return _omegaconf_select(self.cfg, key, default)

    def _find(self, key: str) -> tuple:
        """What OmegaConf.select finds at ``key`` from the root; raises _Failed / Unknown as evaluating it does."""
        found = self._found.get(key)
        if found is None:
            try:
                if not KEY.fullmatch(key):
                    raise Unknown
                found = self._walk((), self.cfg, key.split("."))
            except (Unknown, _Failed) as exc:
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
        _content(node)  # raises Unknown for anything but a plain dict or list
        return _CONTAINER, (path, node)

    def _interpolation(self, path: tuple, text: str) -> tuple:
        """The value the interpolation ``text`` at ``path`` resolves to: (_VALUE, value) or (_CONTAINER, found)."""
        done = self._resolved.get(path)
        if done is None:
            if path in self._active:
                raise Unknown  # a cycle: OmegaConf says how it ends
            tree = parse(text)
            if tree is None:
                raise Unknown
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
            raise Unknown  # a container's str(): OmegaConf's to write
        return str(value)

    def _interp(self, interp: tuple, parent: tuple) -> tuple:
        if interp[0] == "node":
            return self._node_interpolation(interp[1], parent)
        _, name, args = interp
        if name != "oc.select" or not 1 <= len(args) <= 2:
            raise Unknown
        values = [self._element(a, parent) for a in args]  # every argument first, as the grammar does
        key = values[0]
        if not isinstance(key, str) or not REL_KEY.fullmatch(key):
            raise Unknown
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
            raise Unknown  # an interpolation to its own parent: OmegaConf's error
        return kind, found

    @staticmethod
    def _base(key: str, parent: tuple) -> tuple[tuple, str]:
        """``_resolve_key_and_root``: where a key starts (the root, or up from the parent) and the rest of it."""
        rest = key.lstrip(".")
        dots = len(key) - len(rest)
        if not rest:
            raise Unknown
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
            raise Unknown
        return items

    def _plain(self, path: tuple, node):
        """``OmegaConf.to_container(node, resolve=True)``: ``???`` stays ``'???'``, interpolations resolved."""
        if path in self._active:
            raise Unknown  # holds an interpolation of itself
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
    """The dict or list a DictConfig / ListConfig holds; Unknown for anything else (typed nodes, or a container
    that is None, ``???`` or an interpolation)."""
    if type(node) is DictConfig or type(node) is ListConfig:
        content = node.__dict__["_content"]
        if isinstance(content, (dict, list)):
            return content
    raise Unknown


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
