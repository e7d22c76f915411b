"""Interpolations verl cannot resolve: its TaskRunner resolves the whole config (``OmegaConf.resolve``,
trainer/main_ppo.py) when it starts, after Ray, and stops on the first one that fails."""

from __future__ import annotations

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
        text = raw if isinstance(raw, str) else ctx.resolver.raw(key)
        if not isinstance(text, str) or "${" not in text or "oc.env:" in text:
            continue
        exc = ctx.resolver.error(key)  # OmegaConf's own error is what verl prints
        if exc is not None:
            yield finding(
                Severity.ERROR, [key],
                f"{key}={text}: verl resolves the config when its TaskRunner starts and stops with: "
                f"{type(exc).__name__}: {one_line(str(exc)).split(' full_key:')[0]}",
                "Write the value itself, or an interpolation of a key that exists (${section.key}); "
                "resolvers verl knows are OmegaConf's own (oc.env, oc.select, ...)", fix_auto=False)
