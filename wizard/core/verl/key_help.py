"""Plain-words help for a verl key: what it does (verl's own comment), its type and default.

The text comes from ``resources/verl-key-docs/<version>.json`` (extracted from the comments in
verl's config YAML files by ``wizard/adapters/verl_env/probes/extract_verl_key_docs.py``) and the key
schema; nothing is typed by hand. The GUI shows it as the tooltip of every field and in the
Review page; the CLI can print it.
"""

from __future__ import annotations

from collections.abc import Mapping

from wizard.core.verl.schema import VerlSchema


def key_help(schema: VerlSchema, docs: Mapping[str, str], key: str, engine: str | None = None,
             plain: str | None = None) -> str:
    """A short paragraph for ``key``; ``plain`` (the Plan's own wording) leads when given."""
    bare = key.lstrip("+~")
    info = schema.variant(engine).keys.get(bare)
    lines = [bare]
    said = [s for s in (plain, docs.get(bare)) if s]
    if len(said) == 2 and said[0].rstrip(".").lower() == said[1].rstrip(".").lower():
        said = said[:1]
    lines += said or ["verl documents no description for this key."]
    if info is None:
        lines.append("Not a key of verl's PPO config.")
        return "\n".join(lines)
    if not info.in_yaml:
        lines.append(f"Set it with +{bare}=… (a field of verl's dataclass, absent from the YAML).")
    else:
        kind = info.field_type or info.type
        lines.append(f"Type: {kind}; verl's default: {_default_text(info.default)}")
    return "\n".join(lines)


def _default_text(value: object) -> str:
    if value is None:
        return "null"
    if value == "???":
        return "none (must be set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def changes_from_defaults(schema: VerlSchema, overrides: list[str], engine: str | None = None
                          ) -> list[tuple[str, str, str]]:
    """(key, the value set, verl's default) for each override that changes verl's resolved default, in order: what
    this plan changes. Scalars are written one way (``true``, not Python's ``True``); an override that sets the
    default's own value is no change (:func:`set_to_default` lists those)."""
    return [row[:3] for row in _rows(schema, overrides, engine) if not row[3]]


def set_to_default(schema: VerlSchema, overrides: list[str], engine: str | None = None) -> list[str]:
    """The keys of the overrides that set verl's default value again (kept in the files, no change to the run)."""
    return [row[0] for row in _rows(schema, overrides, engine) if row[3]]


def _rows(schema: VerlSchema, overrides: list[str], engine: str | None) -> list[tuple[str, str, str, bool]]:
    from wizard.core.verl.overrides import OverrideSyntaxError, parse_override, render_value

    keys = schema.variant(engine).keys
    out = []
    for text in overrides:
        try:
            parsed = parse_override(text)
        except OverrideSyntaxError:
            out.append((text, "(not a valid override)", "", False))
            continue
        key = parsed.key
        info = keys.get(key)
        same = False
        if parsed.kind == "~":
            shown = "(deleted)"
        else:
            shown = parsed.value_text or ""
            try:
                value = parsed.value()
            except Exception:  # noqa: BLE001 - a sweep or an interpolation Hydra resolves later: shown as written
                value = shown
            if value is None or isinstance(value, (bool, int, float)):
                shown = render_value(value)  # True, TRUE and true are one value: written as verl's YAML writes it
            same = info is not None and info.in_yaml and _same(value, info.default)
        default = "(not in verl's config)" if info is None else (
            "(dataclass field, unset)" if not info.in_yaml else _default_text(info.default))
        out.append((key, shown, default, same))
    return out


def _same(value: object, default: object) -> bool:
    """Whether an override's value is the default's (1 and 1.0 are; True and 1 are not)."""
    if isinstance(value, bool) or isinstance(default, bool):
        return isinstance(value, bool) and isinstance(default, bool) and value == default
    if isinstance(value, (int, float)) and isinstance(default, (int, float)):
        return float(value) == float(default)
    return value == default
