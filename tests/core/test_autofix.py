"""``check --fix``'s core (``apply_fixes``): a fix is kept only when the re-check bears it out, so the errors never
grow; switching a config to Megatron rewrites the FSDP keys it sets to their Megatron counterparts (or removes them,
saying so) instead of keeping both or deleting unrelated sections; a "did you mean" names the real counterpart."""

from wizard.core.check import apply_fixes, autofix_overrides
from wizard.core.check.verdict import CheckResult
from wizard.core.findings import Finding, Severity, Stage
from wizard.core.plan import apply_fix, plan_from_overrides, plan_overrides

A, REF = "actor_rollout_ref.actor", "actor_rollout_ref.ref"
BASE = ["algorithm.adv_estimator=grpo", "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
        "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.n=4", "data.train_batch_size=16",
        f"{A}.ppo_mini_batch_size=8", f"{A}.ppo_micro_batch_size_per_gpu=4",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8", f"{REF}.log_prob_micro_batch_size_per_gpu=8",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1", "trainer.n_gpus_per_node=1",
        "trainer.resume_mode=disable", "trainer.logger=[console]", f"{A}.use_kl_loss=true"]
# what a preset written for FSDP sets, then the engine switched under it (generate/check --set model_engine=megatron)
FSDP_KEYS = [f"{A}.fsdp_config.param_offload=false", f"{A}.fsdp_config.optimizer_offload=false",
             f"{REF}.fsdp_config.param_offload=true"]


def errors(result):
    return [f for f in result.findings if f.severity is Severity.ERROR]


def rules(result):
    return [f.rule for f in errors(result)]


def fix(schema, moves, overrides):
    return autofix_overrides(schema, overrides, moves=moves)


def test_switching_to_megatron_rewrites_the_fsdp_keys_to_their_megatron_counterparts(schema, moves, check):
    words = BASE + FSDP_KEYS + ["model_engine=megatron"]
    before = errors(check(words))
    fixed = fix(schema, moves, words)
    out = plan_overrides(fixed.plan)
    assert not [w for w in out if "fsdp_config" in w or w.startswith("~")], out  # it kept them next to megatron.*
    assert {f"{A}.megatron.param_offload=false", f"{A}.megatron.optimizer_offload=false",
            f"{REF}.megatron.param_offload=true"} <= set(out), out
    after = check(out)
    assert "compose.unknown_key" not in rules(after) and len(errors(after)) <= len(before)
    assert errors(after) == [], rules(after)


def test_an_fsdp_key_megatron_has_no_counterpart_for_is_removed_with_a_note(schema, moves, check):
    words = BASE + ["model_engine=megatron", f"{A}.fsdp_config.fsdp_size=2", f"~{REF}.fsdp_config"]
    f = next(x for x in errors(check(words)) if x.keys == [f"{A}.fsdp_config.fsdp_size"])
    assert f.rule == "compose.unknown_key" and "profiler" not in f.message and "no counterpart" in f.fix
    fixed = fix(schema, moves, words)
    out = plan_overrides(fixed.plan)
    assert not [w for w in out if "fsdp_config" in w], out
    assert any(r.startswith(f"{A}.fsdp_config.fsdp_size (") for r in fixed.removed), fixed.removed
    assert not [w for w in fixed.applied if "profiler" in w], fixed.applied  # was: ~actor.profiler for ~ref.fsdp_config
    assert errors(check(out)) == []


def test_deleting_a_section_megatron_lacks_never_offers_to_delete_another(check):
    found = [f for f in errors(check(BASE + ["model_engine=megatron", f"~{A}.fsdp_config"]))
             if f.rule == "compose.unknown_key"]
    assert len(found) == 1 and not [o for o in found[0].fix_overrides if "profiler" in o], found


def test_a_misspelt_deletion_is_offered_but_not_applied_on_its_own(check):
    f = next(x for x in errors(check(BASE + ["~trainer.logerr"])) if x.rule == "compose.unknown_key")
    assert f.fix_overrides == ["~trainer.logger"] and f.fix_auto is False


def test_a_key_under_a_deleted_section_is_not_suggested_as_itself(check):
    key = f"{A}.profiler.ranks"
    f = next(x for x in errors(check(BASE + [f"~{A}.profiler", f"{key}=[]"])) if x.rule == "compose.unknown_key")
    assert f"did you mean {key}" not in f.message and f"~{A}.profiler" in f.message
    assert f.fix_overrides == []


def test_a_deleted_profiler_section_is_built_with_verls_defaults_not_nulls(check):
    # verl's actor config class builds its ProfilerConfig from its default factory when the section is gone
    assert "profiler.config" not in rules(check(BASE + [f"~{A}.profiler"]))
    assert "profiler.config" in rules(check(BASE + [f"{A}.profiler.ranks=null"]))  # a null set is still wrong


def test_a_key_hydra_refuses_is_one_error_not_also_a_class_field_error(check):
    result = check(BASE + ["model_engine=megatron", f"{A}.fsdp_config.param_offload=true"])
    about = [f for f in errors(result) if f.keys == [f"{A}.fsdp_config.param_offload"]]
    assert [f.rule for f in about] == ["compose.unknown_key"], [(f.rule, f.message) for f in about]
    assert f"did you mean {A}.megatron.param_offload?" in about[0].message
    assert about[0].fix_overrides == [f"{A}.megatron.param_offload=true"]


def test_an_added_fsdp_key_under_megatron_is_pointed_at_its_megatron_counterpart(schema, moves, check):
    words = BASE + ["model_engine=megatron", f"+{A}.fsdp_config.param_offload=true",
                    f"+{A}.fsdp_config.optimizer_offload=true"]
    found = [f for f in errors(check(words)) if f.rule == "fields.unknown"]
    assert found and all("model_config" not in f.message for f in found), [f.message for f in found]
    assert f"did you mean {A}.megatron.param_offload?" in " ".join(f.message for f in found)
    out = plan_overrides(fix(schema, moves, words).plan)
    # each added word gives way to its own counterpart (deleting the whole added fsdp_config lost the other one)
    assert {f"{A}.megatron.param_offload=true", f"{A}.megatron.optimizer_offload=true"} <= set(out), out
    assert not [w for w in out if "fsdp_config" in w], out


def test_replacing_a_key_the_plan_models_takes_the_field_off_too():
    plan = plan_from_overrides(BASE + [f"{A}.fsdp_config.param_offload=true"])
    f = Finding(rule="compose.unknown_key", severity=Severity.ERROR, stage=Stage.COMPOSE,
                keys=[f"{A}.fsdp_config.param_offload"], message="m", fix_overrides=[f"{A}.megatron.param_offload=true"],
                data={"replaces": {"key": f"{A}.fsdp_config.param_offload", "kind": ""}})
    out = plan_overrides(apply_fix(plan, f))
    assert f"{A}.megatron.param_offload=true" in out and f"{A}.fsdp_config.param_offload=true" not in out, out


def _finding(rule, key, fix, stage=Stage.PREFLIGHT):
    return Finding(rule=rule, severity=Severity.ERROR, stage=stage, keys=[key], message=rule, fix_overrides=[fix])


def test_a_fix_the_recheck_does_not_bear_out_is_taken_back_and_the_errors_never_grow():
    """A fake checker: ``bad=1`` is fixed by ``bad=0``; ``x=1`` is 'fixed' by ``x=0``, which makes three new errors
    (as deleting the profiler section did); the result keeps the first fix only."""
    def check(ovs):
        found = []
        if "bad=1" in ovs and "bad=0" not in ovs:
            found.append(_finding("a.bad", "bad", "bad=0", Stage.COMPOSE))
        if "x=0" in ovs:
            found += [_finding("b.new", f"y{i}", f"y{i}=1") for i in range(3)]
        elif "x=1" in ovs:
            found.append(_finding("b.x", "x", "x=0"))
        return CheckResult(findings=found)

    fixed = apply_fixes(plan_from_overrides(["bad=1", "x=1"]), check)
    assert fixed.applied == ["bad=0"] and "x=0" not in plan_overrides(fixed.plan)
    # x=0 was tried on (its new errors each had a fix), those fixes did nothing, and the loop went back to the best
    # plan it reached: x=0 is said to be taken back
    assert ("b.x", "x=0") in [(r, f) for r, f, _, _ in fixed.rejected]
    assert len(errors(fixed.result)) == 1 <= fixed.errors_before


def test_the_critics_fsdp_section_is_rewritten_to_its_megatron_section_too(schema, moves, check):
    """verl 0.9.1's critic keeps its FSDP settings under critic.fsdp (not fsdp_config): switched to Megatron, the
    one with a counterpart moves, the others go with a note (they were left as errors)."""
    words = BASE + ["algorithm.adv_estimator=gae", "critic.model.path=Qwen/Qwen2.5-0.5B-Instruct",
                    "critic.ppo_micro_batch_size_per_gpu=4", "model_engine=megatron",
                    "critic.fsdp.param_offload=true", "critic.fsdp.fsdp_size=8"]
    fixed = fix(schema, moves, words)
    out = plan_overrides(fixed.plan)
    assert "critic.megatron.param_offload=true" in out and not [w for w in out if "critic.fsdp." in w], out
    assert any(r.startswith("critic.fsdp.fsdp_size (") for r in fixed.removed), fixed.removed
    assert "compose.unknown_key" not in rules(check(out))


def test_an_added_fsdp_key_megatron_has_no_counterpart_for_is_removed_as_the_plain_one_is(schema, moves, check):
    words = BASE + ["model_engine=megatron", f"+{A}.fsdp_config.fsdp_size=8"]
    fixed = fix(schema, moves, words)
    out = plan_overrides(fixed.plan)
    assert not [w for w in out if "fsdp_config" in w], out  # it was left as an error with "Remove it"
    assert any(r.startswith(f"{A}.fsdp_config.fsdp_size (") for r in fixed.removed), fixed.removed
    assert errors(check(out)) == []
