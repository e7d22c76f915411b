"""Which sections of the config verl builds into its config classes, when, and what fields they have.

verl reads most of its config as a DictConfig, but some sections it turns into dataclasses
(``omega_conf_to_dataclass``: Hydra's ``instantiate`` on the section's ``_target_``, recursively). A build runs the
class's ``__post_init__`` checks and refuses a key the class has no field for, so both fail at the moment of the
build: in ``validate_config`` for the actor and the critic (preflight), when the TaskRunner and the workers start
for the others (startup), in ``fit`` for ``skip`` (runtime). Sections verl 0.9.1's V1 trainer never builds
(``algorithm``, ``reward``, ``global_profiler``...) are read as plain dictionaries: nothing is checked there.

Helpers for the rules, not rules: the field lists come from the schema snapshot (yaml keys plus dataclass-only
fields), the section classes from its ``_target_`` keys.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.core.findings import Stage
from wizard.core.verl import roles
from wizard.core.verl.resolved import UNRESOLVABLE

if TYPE_CHECKING:
    from wizard.core.check.rules.context import RuleContext

Cond = Callable[["RuleContext"], bool]


def _always(ctx) -> bool:
    return True


def _ref_built(ctx) -> bool:
    """engine_workers.py:543: the reference worker builds its own ActorConfig unless LoRA makes the actor its ref."""
    return ctx.need_ref and not roles.ref_in_actor(ctx)


@dataclass(frozen=True)
class Build:
    root: str
    stage: Stage
    when: Cond
    where: str  # verl 0.9.1 file:line of the build


BUILDS: tuple[Build, ...] = (
    Build("actor_rollout_ref.actor", Stage.PREFLIGHT, _always, "utils/config.py:164"),
    Build("critic", Stage.PREFLIGHT, lambda ctx: ctx.need_critic, "utils/config.py:189"),
    Build("actor_rollout_ref.model", Stage.STARTUP, _always, "trainer/ppo/v1/trainer_base.py:703"),
    Build("actor_rollout_ref.rollout", Stage.STARTUP, _always, "workers/engine_workers.py:651"),
    Build("actor_rollout_ref.ref", Stage.STARTUP, _ref_built, "workers/engine_workers.py:553"),
    Build("reward.reward_model.rollout", Stage.STARTUP, lambda ctx: bool(ctx.get("reward.reward_model.enable")),
          "workers/rollout/replica.py:104"),
    Build("distillation", Stage.STARTUP, lambda ctx: bool(ctx.get("distillation.enabled")),
          "trainer/ppo/v1/trainer_base.py:360"),
    Build("trainer.v1.separate_async.hybrid_rollout", Stage.STARTUP,
          lambda ctx: ctx.get("trainer.v1.trainer_mode") == "separate_async", "trainer/ppo/v1/trainer_separate_async.py:86"),
    Build("skip", Stage.RUNTIME, _always, "utils/skip/skip_manager.py:40"),
)
# Plain dictionaries in the YAML that a config class turns into a dataclass itself (RolloutConfig.__post_init__),
# with that dataclass's fields (workers/config/disaggregation.py:28-36): the schema only knows the YAML's keys.
DICT_CLASSES = {"actor_rollout_ref.rollout.disaggregation": "DisaggregationConfig",
                "reward.reward_model.rollout.disaggregation": "DisaggregationConfig"}
DICT_CLASS_FIELDS = {"DisaggregationConfig": ("enabled", "prefill_replicas", "decode_replicas",
                                              "decode_tensor_model_parallel_size", "transfer_backend", "bootstrap_port",
                                              "ib_device", "mooncake_protocol")}


@dataclass(frozen=True)
class Section:
    path: str
    cls: str  # the class name, e.g. FSDPEngineConfig
    stage: Stage
    build: Build


def targets(ctx) -> dict[str, str]:
    """Section path -> class name, for every ``_target_`` in this engine's default tree (kept on the variant)."""
    cache = ctx.variant.__dict__.get("_section_targets")
    if cache is None:
        cache = {k[: -len("._target_")]: str(v.default).rsplit(".", 1)[-1]
                 for k, v in ctx.variant.keys.items() if k.endswith("._target_")}
        cache.update({k: v for k, v in DICT_CLASSES.items() if k in ctx.variant.keys})
        ctx.variant.__dict__["_section_targets"] = cache
    return cache


def build_of(ctx, path: str) -> Build | None:
    """The build that covers ``path`` (the section itself or one above it), if verl builds it for this config."""
    for b in BUILDS:
        if (path == b.root or path.startswith(b.root + ".")) and b.when(ctx):
            return b
    return None


def built_sections(ctx, classes: tuple[str, ...] | None = None) -> Iterator[Section]:
    """Every section verl builds for this config (optionally only of these classes), outermost first."""
    for path, cls in sorted(targets(ctx).items()):
        if classes is not None and cls not in classes:
            continue
        b = build_of(ctx, path)
        if b is not None:
            yield Section(path, cls, b.stage, b)


def fields(ctx, path: str) -> list[str]:
    """The fields of the class built at ``path``: its YAML keys and its dataclass-only fields (kept on the variant)."""
    cache = ctx.variant.__dict__.setdefault("_section_fields", {})
    if path not in cache:
        names = set(_children(ctx.variant).get(path, ())) - {"_target_"}
        if path in DICT_CLASSES:
            names |= set(DICT_CLASS_FIELDS[DICT_CLASSES[path]])
        cache[path] = tuple(sorted(names))
    return list(cache[path])


def _children(variant) -> dict[str, set[str]]:
    """Every section of the schema's keys and the names right below it."""
    children = variant.__dict__.get("_section_children")
    if children is None:
        children = {}
        for key in variant.keys:
            parts = key.split(".")
            for i in range(1, len(parts)):
                children.setdefault(".".join(parts[:i]), set()).add(parts[i])
        variant.__dict__["_section_children"] = children
    return children


def is_missing(ctx, key: str) -> bool:
    """True when ``key`` is ``???`` as verl reads it (directly or through an interpolation)."""
    return ctx.missing_value(key)


WHEN = {Stage.PREFLIGHT: "in its pre-flight (validate_config), before Ray starts",
        Stage.STARTUP: "when the trainer and its workers start, minutes in",
        Stage.RUNTIME: "in fit(), after every model and server is up"}


def stops(section: Section, said: str) -> str:
    """'verl builds X into Y <when> and stops with: <said>' - the tail every class-check message shares."""
    return f"verl builds {section.path} into {section.cls} {WHEN[section.stage]} and stops with: {said}"


def not_one_of(ctx, section: Section, name: str, allowed: tuple, said: str, rule_id: str):
    """A finding when the field ``name`` of ``section`` is not one of ``allowed`` (verl's ``in [...]`` check);
    ``said`` is verl's message, ``{v}`` standing for the value."""
    from wizard.core.check.rules.context import finding
    from wizard.core.findings import Severity

    key = f"{section.path}.{name}"
    if unset_field(ctx, key):
        return None
    value = ctx.get(key)
    if value in allowed or value is UNRESOLVABLE:
        return None
    close = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=1, cutoff=0.6)
    return finding(
        Severity.ERROR, [key],
        f"{key}={value!r} is not one of {', '.join(map(str, allowed))}; " + stops(section, said.format(v=value)),
        f"Set {key}={close[0] if close else allowed[0]}" + ("" if close else f" (one of: {', '.join(map(str, allowed))})"),
        [f"{key}={close[0] if close else allowed[0]}"], fix_auto=bool(close) or len(allowed) == 1, rule=rule_id, stage=section.stage,
    )


def unset_field(ctx, key: str) -> bool:
    """A dataclass-only field nobody set: it holds the class's default, which the class accepts."""
    info = ctx.variant.keys.get(key)
    return info is not None and not info.in_yaml and key not in ctx.set_keys
