"""The pure resolver (wizard.core.verl.resolver.Resolver) answers exactly as OmegaConf does.

Every answer a rule reads - the value (``OmegaConf.select`` then ``to_container(resolve=True)``), whether it is
``???`` as verl reads it (``select(throw_on_missing=True)`` raising), whether the node itself is ``???``
(``OmegaConf.is_missing``), the value as written - is compared with OmegaConf's own: on every key of verl's
default config (every interpolation the schema holds), on hand-picked tricky overrides, and on random ones.
"""

from __future__ import annotations

import contextlib
import math
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from tests.conftest import examples
from wizard.core.verl import resolver as resolved
from wizard.core.verl.compose import composed_view
from wizard.core.verl.interpolations import parse as _parse
from wizard.core.verl.resolver import (
    MISSING,
    UNRESOLVABLE,
    Resolver,
    _omegaconf_is_missing,
    _omegaconf_is_missing_here,
    _omegaconf_raw,
    _omegaconf_select,
)


def _same(a, b) -> bool:
    """Equal values of equal types (1, 1.0 and True differ), NaN equal to itself."""
    if a is b:
        return True
    if a is MISSING or b is MISSING:
        return False
    if a is UNRESOLVABLE or b is UNRESOLVABLE or OmegaConf.is_config(a):
        return False  # a node of the config (inside a value OmegaConf itself gave): the same node or not
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _differences(cfg, keys, *, fallbacks: list | None = None) -> list[str]:
    """Every answer of a fresh Resolver on ``keys`` that is not OmegaConf's. An answer the resolver itself took from
    OmegaConf (a form it does not read: a cycle, oc.env...) is OmegaConf's by construction and not asked twice
    (OmegaConf can take seconds to find a cycle); those keys are added to ``fallbacks``."""
    resolver, out = Resolver(cfg), []
    asked: list[str] = []

    def recording(fn):
        def ask(cfg, key, *args):
            asked.append(key)
            return fn(cfg, key, *args)
        return ask

    names = ("_omegaconf_select", "_omegaconf_is_missing", "_omegaconf_is_missing_here", "_omegaconf_raw")
    originals = {name: getattr(resolved, name) for name in names}
    for key in keys:
        asked.clear()
        with contextlib.ExitStack() as stack:
            for name, fn in originals.items():
                stack.enter_context(mock.patch.object(resolved, name, recording(fn)))
            mine = {"select": resolver.select(key), "select default": resolver.select(key, 7),
                    "is_missing": resolver.is_missing(key), "is_missing_here": resolver.is_missing_here(key),
                    "raw": resolver.raw(key), "value": resolver.value(key)}
        if asked:
            if fallbacks is not None:
                fallbacks.append(key)
            continue
        theirs = {"select": _omegaconf_select(cfg, key, None), "select default": _omegaconf_select(cfg, key, 7),
                  "is_missing": _omegaconf_is_missing(cfg, key), "is_missing_here": _omegaconf_is_missing_here(cfg, key),
                  "raw": _omegaconf_raw(cfg, key)}
        theirs["value"] = MISSING if theirs["is_missing"] else theirs["select"]
        if OmegaConf.is_config(theirs["raw"]) or isinstance(theirs["raw"], (dict, list)):
            del theirs["raw"]  # a container's nodes: not compared
        out += [f"{what} {key}: resolver {mine[what]!r} OmegaConf {them!r}" for what, them in theirs.items()
                if not _same(mine[what], them)]
    return out


def _keys_around(variant, overrides: list[str]) -> list[str]:
    """The keys an override can change the answer of: itself, its parents and children, and every interpolation
    that reads it (the defaults naming it, and those naming them, transitively)."""
    keys, names = set(), set()
    for text in overrides:
        key = text.lstrip("+~").split("=", 1)[0]
        parts = key.split(".")
        keys |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)} | {key + ".x", key + ".0", key + ".0.a"}
        keys |= {k for k in variant.keys if k.startswith(key + ".")}
        names.add(parts[-1])
    texts = {k: str(info.default) for k, info in variant.keys.items() if info.in_yaml and "${" in str(info.default)}
    while True:
        more = {k for k, t in texts.items() if k not in keys and any(n in t for n in names)}
        if not more:
            break
        keys |= more
        names |= {k.rsplit(".", 1)[-1] for k in more}
    keys |= {k.rsplit(".", 1)[0] for k in list(keys) if "." in k}
    return sorted(keys)


@pytest.mark.parametrize("engine", ["dp", "megatron", "torchtitan", "veomni"])
def test_every_key_of_verls_default_config(schema, engine):
    """Every key of every engine's default tree: values, ``???``, the containers above them."""
    variant = schema.variant(engine)
    keys = [k for k, info in variant.keys.items() if info.in_yaml]
    fallbacks: list[str] = []
    with composed_view(schema, [f"model_engine={engine}"]) as composed:
        assert _differences(composed.cfg, keys + [k + ".nope" for k in keys[:100]] + ["nope"], fallbacks=fallbacks) == []
    assert fallbacks == []  # every value of verl's own config is read without OmegaConf


def test_every_interpolation_in_the_schema_is_read_without_omegaconf(schema):
    """No interpolation form verl's config holds falls back to OmegaConf's grammar."""
    texts = {info.default for v in schema.variants.values() for info in v.keys.values()
             if isinstance(info.default, str) and "${" in info.default}
    assert len(texts) > 100
    assert [t for t in sorted(texts) if _parse(t) is None] == []


P = "actor_rollout_ref.actor.profiler"
T = f"{P}.tool_config"
TRICKY = [
    # an interpolation to ``???``, directly, through another interpolation, and through oc.select
    ["actor_rollout_ref.actor.strategy=???"],  # ref.strategy reads it
    ["trainer.project_name=${actor_rollout_ref.rollout.name}"],  # default_local_dir reads project_name
    ["trainer.project_name=${oc.select:actor_rollout_ref.rollout.name,x}"],  # ??? is a default's case
    ["global_profiler.tool=${actor_rollout_ref.rollout.name}"],  # oc.select's target interpolates to ???
    ["+global_profiler.global_tool_config.torch_memory.trace_alloc_max_entries=???"],
    # to a deleted key, a key that was never there, a path through a value
    ["~global_profiler"], ["~global_profiler.tool"], ["trainer.project_name=${nope.nope}"],
    ["trainer.project_name=${trainer.total_epochs.x}"], ["trainer.project_name=${oc.select:trainer.total_epochs.x,d}"],
    ["~actor_rollout_ref.actor.checkpoint.save_contents"],  # load_contents is ${.save_contents}
    # relative keys
    ["trainer.project_name=${.experiment_name}"], ["trainer.project_name=${..data.train_batch_size}"],
    ["trainer.project_name=${...nope}"], ["trainer.project_name=${oc.select:..data.train_batch_size,1}"],
    ["critic.ppo_micro_batch_size=4"], ["~critic.ppo_micro_batch_size"],  # ${oc.select:.ppo_micro_batch_size,null}
    # nested oc.select defaults, literal defaults of every kind
    [f"{T}.precision_debugger.config_path=/x"], [f"~{T}.precision_debugger.config_path"],
    ["actor_rollout_ref.actor.fsdp_config.qat.enable=true"], ["~actor_rollout_ref.actor.fsdp_config.qat"],
    *[[f"trainer.project_name=${{oc.select:nope,{d}}}"] for d in
      ("null", "1", "-2", "1.5", "1e-3", "1_000", "inf", "-nan", "True", "FALSE", "NULL", "level0", "a b", "[]", "{}",
       "[1, a, null]", "{a: 1, b: [2]}", "${trainer.nnodes}", "${oc.select:nope2,3}", "x${trainer.nnodes}y", "05",
       "1.5.3", ".5", "1.", "+inf", "infinity", "nullx")],
    ["trainer.project_name=${oc.select: trainer.nnodes , 3 }"], ["trainer.project_name=${ trainer.nnodes }"],
    ["trainer.project_name=${oc.select:trainer.nnodes}"], ["trainer.project_name=${oc.select:nope}"],
    # defaults that fail even when the key is there (the grammar evaluates every argument first)
    ["trainer.project_name=${oc.select:trainer.nnodes,${nope}}"],
    ["trainer.project_name=${oc.select:trainer.nnodes,${actor_rollout_ref.rollout.name}}"],
    # text of several pieces, of values of every type
    ["trainer.project_name=${trainer.nnodes}-${actor_rollout_ref.actor.use_dynamic_bsz}-${trainer.device}"],
    ["trainer.experiment_name=${actor_rollout_ref.actor.optim.lr}_${actor_rollout_ref.model.path}"],
    ["trainer.project_name=a${actor_rollout_ref.actor.profiler}b"],  # a dictionary's str(): OmegaConf's
    ["trainer.project_name=$${trainer.nnodes}"], ["trainer.project_name=${trainer.logger}"],
    # lists and dictionaries holding interpolations, paths through lists
    ["trainer.logger=[console,${trainer.device},${oc.select:nope,[]}]"],
    ["trainer.project_name=${trainer.logger.0}"], ["trainer.project_name=${trainer.logger.5}"],
    ["trainer.project_name=${trainer.logger.x}"],
    ["+trainer.extra={a: ${trainer.nnodes}, b: {c: ${..a}}, d: ???}"],
    ["actor_rollout_ref.rollout.engine_kwargs.vllm={x: ${trainer.nnodes}}"],
    ["+trainer.extra=${actor_rollout_ref.actor.checkpoint}"],  # an interpolation to a dictionary
    ["trainer.project_name=${trainer}"],
    # dictionaries set to ???, null, an interpolation; values set where dictionaries were
    [f"{P}=???"], [f"{P}=null"], ["actor_rollout_ref.actor.checkpoint=${critic.checkpoint}"],
    ["actor_rollout_ref.actor.checkpoint=null"], ["actor_rollout_ref.actor.fsdp_config=???"],
    # cycles, custom resolvers, escapes, quoting
    ["trainer.project_name=${trainer.experiment_name}", "trainer.experiment_name=${trainer.project_name}"],
    ["trainer.project_name=${trainer.project_name}"], ["trainer.project_name=${oc.env:HOME}"],
    ["trainer.project_name=${oc.env:NOPE_NOT_SET,d}"], ["trainer.project_name='${trainer.nnodes}'"],
    ["trainer.project_name=${oc.select:'trainer.nnodes',1}"], ["trainer.project_name=${oc.decode:'1'}"],
    ["trainer.project_name=\\${trainer.nnodes}"],
]


@pytest.mark.parametrize("overrides", TRICKY, ids=lambda o: " ".join(o)[:80])
def test_tricky_overrides(schema, overrides):
    with composed_view(schema, overrides) as composed:
        keys = _keys_around(schema.variant(), overrides)
        assert _differences(composed.cfg, keys) == []


# Random overrides: a key (a leaf, a dictionary, one that is not there) set to a value of a form that occurs, or
# deleted; the answers compared on every interpolation of the schema and around what changed.
LEAVES = ["trainer.nnodes", "trainer.project_name", "trainer.device", "trainer.logger", "actor_rollout_ref.rollout.name",
          "actor_rollout_ref.actor.strategy", "actor_rollout_ref.actor.optim.lr", "global_profiler.tool",
          "actor_rollout_ref.actor.checkpoint.save_contents", "critic.ppo_micro_batch_size",
          f"{T}.torch_memory.stack_depth", f"{P}.ranks", "actor_rollout_ref.actor.fsdp_config.qat.enable",
          "global_profiler.global_tool_config.torch_memory.trace_alloc_max_entries", "data.train_batch_size",
          "actor_rollout_ref.actor.entropy_from_logits_with_chunking", "actor_rollout_ref.model.path"]
DICTS = [P, T, "global_profiler", "global_profiler.global_tool_config", "actor_rollout_ref.actor.checkpoint",
         "actor_rollout_ref.actor.fsdp_config.qat", "actor_rollout_ref.actor.fsdp_config", "trainer"]
ABSENT = ["nope", "trainer.nope", "global_profiler.global_tool_config.nope.x"]
RELATIVE = [".nnodes", ".project_name", ".save_contents", ".tool", "..tool", "..nnodes", ".nope", "...nope",
            "..global_profiler.tool"]

key_ref = st.sampled_from(LEAVES + DICTS + ABSENT)
any_ref = st.one_of(key_ref, st.sampled_from(RELATIVE), st.sampled_from([k + ".0" for k in LEAVES[:4]]))
literal = st.sampled_from(["null", "1", "0", "-3", "2.5", "1e-6", "true", "False", "text", "a b", "[]", "{}",
                           "[1, x]", "{a: 1}", "inf"])


@st.composite
def interpolation(draw, depth: int = 0):
    form = draw(st.sampled_from(["node", "select", "select1", "text"] if depth < 2 else ["node", "select1"]))
    ref = draw(any_ref)
    if form == "node":
        return f"${{{ref}}}"
    if form == "select1":
        return f"${{oc.select:{ref}}}"
    if form == "select":
        default = draw(st.one_of(literal, interpolation(depth + 1))) if depth < 2 else draw(literal)
        return f"${{oc.select:{ref},{default}}}"
    pieces = draw(st.lists(interpolation(depth + 1), min_size=1, max_size=3))
    return "x_" + "/".join(pieces)


@st.composite
def override(draw):
    target = draw(st.sampled_from(LEAVES + DICTS + ABSENT))
    kind = draw(st.sampled_from(["set", "set", "set", "missing", "delete", "list", "dict", "literal"]))
    if kind == "delete":
        return f"~{target}"
    plus = "++" if target in ABSENT else ""
    if kind == "missing":
        return f"{plus}{target}=???"
    if kind == "literal":
        return f"{plus}{target}={draw(literal)}"
    if kind == "list":
        return f"{plus}{target}=[{draw(interpolation())}, 1]"
    if kind == "dict":
        return f"{plus}{target}={{a: {draw(interpolation())}, b: 2}}"
    return f"{plus}{target}={draw(interpolation())}"


@settings(max_examples=examples(100), deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(overrides=st.lists(override(), min_size=1, max_size=4))
def test_random_overrides_resolve_as_omegaconf_does(schema, overrides):
    with composed_view(schema, overrides) as composed:
        keys = _keys_around(schema.variant(), overrides) + LEAVES + DICTS + ABSENT
        assert _differences(composed.cfg, sorted(set(keys))) == [], overrides


# Small configs built directly (no Hydra, whose override grammar cannot write nested braces): every form the
# resolver reads, nested as deep as the schema nests them, with lists, ``???``, None and cycles around.
NAMES = ["a", "b", "c"]
REFS = ["a", "b", "a.b", "a.c", "a.a.b", "l", "l.0", "l.1", "l.7", "l.x", "a.l.0", "nope", "a.nope.b",
        ".a", ".b", ".l.0", "..a", "..b", "...a", ".nope", "a.b.c"]
SPACES = st.sampled_from(["", "", " "])


@st.composite
def inner(draw, depth: int = 0):
    """An interpolation as the grammar reads it, nested defaults and all."""
    form = draw(st.sampled_from(["node", "select", "select1", "text"] if depth < 3 else ["node", "select1"]))
    ref, sp = draw(st.sampled_from(REFS)), draw(SPACES)
    if form == "node":
        return f"${{{sp}{ref}{sp}}}"
    if form == "select1":
        return f"${{oc.select:{sp}{ref}{sp}}}"
    if form == "select":
        default = draw(st.one_of(
            literal, inner(depth + 1),
            st.builds(lambda i: f"[1, {i}]", inner(depth + 1)),
            st.builds(lambda i: f"{{k: {i}}}", inner(depth + 1)),
            st.builds(lambda i: f"x{i}y", inner(depth + 1))))
        return f"${{oc.select:{ref},{sp}{default}{sp}}}"
    return "/".join(draw(st.lists(inner(depth + 1), min_size=1, max_size=3))) + draw(st.sampled_from(["", "_x"]))


leaf = st.one_of(st.sampled_from([1, 2.5, True, None, "s", "???", "${oc.env:NOPE_X,1}"]), inner())
tree = st.recursive(
    leaf,
    lambda children: st.one_of(st.dictionaries(st.sampled_from(NAMES + ["l"]), children, max_size=4),
                               st.lists(children, max_size=3)),
    max_leaves=12,
)


def _paths(node, prefix="") -> list[str]:
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for k, v in items:
        key = f"{prefix}.{k}" if prefix else str(k)
        out += [key] + _paths(v, key)
    return out


@settings(max_examples=examples(300), deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.dictionaries(st.sampled_from(NAMES + ["l"]), tree, min_size=1, max_size=4))
def test_small_configs_resolve_as_omegaconf_does(doc):
    cfg = OmegaConf.create(doc)
    keys = sorted(set(_paths(doc)) | {r for r in REFS if not r.startswith(".")})
    assert _differences(cfg, keys) == [], doc
