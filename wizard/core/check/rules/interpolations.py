"""Interpolations verl cannot resolve: its TaskRunner resolves the whole config (``OmegaConf.resolve``,
trainer/main_ppo.py) when it starts, after Ray, and stops on the first one that fails."""

from __future__ import annotations

from omegaconf import OmegaConf

from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.findings import Severity, Stage
from wizard.core.verl.overrides import one_line


@rule("compose.interpolation", Stage.STARTUP)
def unresolvable(ctx: RuleContext):
    """A value an override sets to ``${...}`` that OmegaConf cannot resolve: an unknown resolver (``${python:1}``),
    a key that is not there, or interpolations that refer to each other. ``${oc.env:NAME}`` is left alone: it is
    resolved where verl runs, from that machine's environment (the wizard's way to carry secrets)."""
    for key in sorted(ctx.set_keys):
        raw = ctx.plain_values.get(key)
        text = raw if isinstance(raw, str) else _raw(ctx, key)
        if not isinstance(text, str) or "${" not in text or "oc.env:" in text:
            continue
        try:
            OmegaConf.select(ctx.cfg, key, throw_on_missing=False)
            node = OmegaConf.select(ctx.cfg, key)
            if OmegaConf.is_config(node):
                OmegaConf.to_container(node, resolve=True)
        except Exception as exc:  # noqa: BLE001 - OmegaConf's own error is what verl prints
            yield finding(
                "compose.interpolation", Severity.ERROR, Stage.STARTUP, [key],
                f"{key}={text}: verl resolves the config when its TaskRunner starts and stops with: "
                f"{type(exc).__name__}: {one_line(str(exc)).split(' full_key:')[0]}",
                "Write the value itself, or an interpolation of a key that exists (${section.key}); "
                "resolvers verl knows are OmegaConf's own (oc.env, oc.select, ...)", fix_auto=False)


def _raw(ctx: RuleContext, key: str):
    """The value as written (interpolation unresolved), or None."""
    parent_key, _, leaf = key.rpartition(".")
    try:
        parent = OmegaConf.select(ctx.cfg, parent_key) if parent_key else ctx.cfg
        if not OmegaConf.is_config(parent) or leaf not in parent:
            return None
        node = parent._get_node(leaf)
        return node._value() if node is not None else None
    except Exception:  # noqa: BLE001
        return None
