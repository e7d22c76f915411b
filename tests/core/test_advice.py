"""The advisor and the step-time prediction: what a user asking "will it fit, and how fast?" is offered."""

import re

import pytest

from tests.helpers.real_records import load_runs
from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.advice import METHOD, advise
from wizard.core.advice.state import deficit
from wizard.core.check.verdict import check_overrides
from wizard.core.hardware.cluster import parse_cluster_spec
from wizard.core.memory.estimate import estimate_memory
from wizard.core.memory.terms import GIB
from tests.core.test_memory_rules import Q7
from tests.helpers.hf_configs import QWEN25_05B, QWEN25_15B
from wizard.core.models.facts import facts_from_hf_config
from wizard.core.steptime import predict_step

A, AF, R = "actor_rollout_ref.actor", "actor_rollout_ref.actor.fsdp_config", "actor_rollout_ref.rollout"
Q15 = facts_from_hf_config(QWEN25_15B, name="Qwen/Qwen2.5-1.5B-Instruct", source="catalogue")
Q05 = facts_from_hf_config(QWEN25_05B, name="Qwen/Qwen2.5-0.5B-Instruct", source="catalogue")
ONE_GPU = ["algorithm.adv_estimator=grpo", f"{R}.name=vllm", f"{R}.n=4", "data.train_batch_size=16",
           "data.max_prompt_length=512", "data.max_response_length=512", f"{A}.ppo_mini_batch_size=8",
           f"{A}.ppo_micro_batch_size_per_gpu=8", f"{R}.log_prob_micro_batch_size_per_gpu=16", f"{A}.use_kl_loss=True",
           "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16", f"{R}.gpu_memory_utilization=0.4",
           "trainer.n_gpus_per_node=1", f"{R}.tensor_model_parallel_size=1", "trainer.resume_mode=disable",
           "trainer.logger=[console]"]


def plan(extra=(), gpus="1xH100-80GB", model=None):
    model = model or (Q15 if any("max_response_length=3072" in e for e in extra) else Q7)
    cluster = parse_cluster_spec(gpus, load_gpu_catalogue())
    mp = check_overrides(load_schema(), [*ONE_GPU, *extra], moves=load_moves(),
                         models={"actor": model, "ref": model, "critic": model}, cluster=cluster).memory
    return mp


# fits on 8 x 40 GB (update 25.5 GiB per GPU) until FSDP2 holds the whole fp32 gradient through 8 micro-batches (+24.8)
NO_SYNC_ON_EIGHT = ["trainer.n_gpus_per_node=8", f"{A}.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2",
                    f"{AF}.use_no_sync_for_gradient_accumulation=True", "data.train_batch_size=64",
                    f"{A}.ppo_mini_batch_size=32", f"{A}.ppo_micro_batch_size_per_gpu=2",
                    f"{R}.gpu_memory_utilization=0.5"]
# PPO with a critic at 4,096 tokens: the critic packs 32,768 tokens (critic.ppo_infer_max_token_len_per_gpu, a key
# verl's YAML lacks) into each micro-batch of its values pass and its update
PPO_4096 = ["algorithm.adv_estimator=gae", "critic.model.path=Qwen/Qwen2.5-1.5B-Instruct", "critic.strategy=fsdp2",
            "critic.ppo_micro_batch_size_per_gpu=4", f"{A}.use_kl_loss=False", "data.max_prompt_length=1024",
            "data.max_response_length=3072", f"{A}.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2"]
# 7B PPO with a 7B critic on two 40 GB GPUs: both models' states must be on the host through their updates
PPO_7B_TWO = ["algorithm.adv_estimator=gae", "critic.model.path=Qwen/Qwen2.5-7B-Instruct", f"{A}.use_kl_loss=False",
              "critic.ppo_micro_batch_size_per_gpu=4", "trainer.n_gpus_per_node=2", f"{R}.gpu_memory_utilization=0.5"]
CASES = [  # (what a user asks, overrides, GPUs)
    ("7B full fine-tuning on one 80 GB GPU", [], "1xH100-80GB"),
    ("7B on two 24 GB GPUs", ["trainer.n_gpus_per_node=2"], "2xRTX-4090-24GB"),
    ("1.5B with 4,096-token samples and a huge micro-batch on one 24 GB GPU",
     ["data.max_prompt_length=1024", "data.max_response_length=3072", f"{A}.ppo_micro_batch_size_per_gpu=16"],
     "1xRTX-4090-24GB"),
    ("7B that vLLM cannot start", [f"{R}.gpu_memory_utilization=0.97"], "1xH200-141GB"),
    ("7B on eight 40 GB GPUs with use_no_sync_for_gradient_accumulation on for speed",
     NO_SYNC_ON_EIGHT, "8xA100-40GB"),
    ("1.5B PPO with a critic at 4,096 tokens on one 80 GB GPU", [*PPO_4096, f"{R}.gpu_memory_utilization=0.55"],
     "1xH100-80GB"),
    ("7B PPO with a 7B critic on two 40 GB GPUs", PPO_7B_TWO, "2xA100-40GB"),
]


@pytest.mark.parametrize("question,extra,gpus", CASES, ids=[c[0] for c in CASES])
def test_every_offered_alternative_is_what_re_estimating_it_says(question, extra, gpus):
    mp = plan(extra, gpus)
    before, _, _ = deficit(mp.report, mp.values)
    advice = advise(mp.values, mp.models, mp.cluster)
    assert advice.alternatives, question
    cluster = parse_cluster_spec(gpus, load_gpu_catalogue())
    for alt in advice.alternatives:
        if alt.kind == METHOD:
            continue  # a smaller model or LoRA: its changes are checked below through the full check
        # its overrides composed again, as verl would (a knob following a changed one follows it)
        again = check_overrides(load_schema(), [*ONE_GPU, *extra, *alt.overrides], moves=load_moves(),
                                models=mp.models, cluster=cluster, advise=False).memory
        after, peak, _ = deficit(again.report, again.values)
        assert alt.fits == (after <= 0) and peak == alt.peak_bytes, (question, alt.text)
        assert after < before, (question, alt.text)  # no change that leaves the plan where it was
    best = advice.best
    if not advice.fits_now:
        assert best is not None and best.fits
        # one Apply of the best: the memory findings are gone (the fix loop cannot recur)
        result = check_overrides(load_schema(), [*ONE_GPU, *extra, *best.overrides], moves=load_moves(),
                                 models=mp.models, cluster=cluster)
        assert not [f.rule for f in result.findings if f.rule.startswith("memory.") and f.severity.value == "error"]


@pytest.mark.parametrize("question,extra,gpus", CASES, ids=[c[0] for c in CASES])
def test_a_micro_batch_below_the_measured_ones_is_offered_only_where_the_measured_smallest_does_not_fit(
        question, extra, gpus):
    """verl's cost per micro-batch was measured at 4-16 samples: an alternative goes below 4 only for memory, and
    only where 4 would not fit (else its step time would rest on a size never measured)."""
    from wizard.core.advice.moves import SMALLEST_MEASURED_MICRO

    mp = plan(extra, gpus)
    micro = [f"{A}.ppo_micro_batch_size_per_gpu", f"{R}.log_prob_micro_batch_size_per_gpu",
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"]
    for alt in advise(mp.values, mp.models, mp.cluster).alternatives:
        for key in micro:
            was, now = mp.values.get(key), alt.changes.get(key)
            if now is None or now >= SMALLEST_MEASURED_MICRO or not isinstance(was, int) or was <= SMALLEST_MEASURED_MICRO:
                continue
            values = {**mp.values, **alt.changes, key: SMALLEST_MEASURED_MICRO}
            report, _ = estimate_memory(values, alt_models(mp, alt), mp.cluster)
            assert deficit(report, values)[0] > 0, (question, alt.text, key)


def alt_models(mp, alt):
    return {**mp.models, **{role: facts for m in alt.moves for role, facts in m.models}}


@pytest.mark.parametrize("question,extra,gpus", CASES, ids=[c[0] for c in CASES])
def test_no_offered_alternative_brings_an_error_the_plan_did_not_have(question, extra, gpus):
    """LoRA on a 7B: from dummy weights its first weight sync sends the base model, whose fp32 embedding (2,079 MiB)
    is over verl's 2,048 MiB sync buffer (models.lora_base_sync_bucket); the LoRA alternative has vLLM load the base
    weights itself, as verl's LoRA guide does, so the first sync sends the adapter only."""
    mp = plan(extra, gpus)
    cluster = parse_cluster_spec(gpus, load_gpu_catalogue())

    def errors(overrides):
        result = check_overrides(load_schema(), [*ONE_GPU, *extra, *overrides], moves=load_moves(), models=mp.models,
                                 cluster=cluster, advise=False)
        return {f.rule for f in result.findings if f.severity.value == "error" and not f.rule.startswith("memory.")}

    had = errors([])
    advice = advise(mp.values, mp.models, mp.cluster)
    lora = [a for a in advice.alternatives if "LoRA" in a.text]
    for alt in advice.alternatives:
        assert errors(alt.overrides) <= had, (question, alt.text)
    if mp.models["actor"] is Q7 and "use_no_sync" not in question:  # there, four tunings that fit come first
        assert lora and all(f"{R}.load_format=safetensors" in a.overrides for a in lora)


@pytest.mark.parametrize("question,extra,gpus", CASES, ids=[c[0] for c in CASES])
def test_no_alternative_is_an_earlier_one_with_more_changes_and_no_faster(question, extra, gpus):
    """7B on one 24 GB GPU offered "the 1.5B model, 80 s" and then "the 1.5B model + utilization 0.75, 80 s"."""
    mp = plan(extra, gpus)
    alts = advise(mp.values, mp.models, mp.cluster, smaller=[Q15]).alternatives
    for a in alts:  # in either order: 32B Megatron offered "micro-batch 2 -> 1, 7B: 518 s" above "7B: 519 s"
        for b in alts:
            dominated = set(a.changes) < set(b.changes) and a.fits >= b.fits and (
                a.step_seconds is None or b.step_seconds is None or b.step_seconds > 0.99 * a.step_seconds)
            assert not dominated, (question, a.text, b.text)


def test_a_plan_that_fits_is_offered_faster_ones_that_still_fit():
    mp = plan([], "1xH200-141GB", Q15)
    advice = advise(mp.values, mp.models, mp.cluster)
    assert advice.fits_now and advice.statement is None
    assert advice.alternatives and all(a.fits for a in advice.alternatives)
    assert all(a.step_seconds < advice.step_seconds for a in advice.alternatives)


def test_a_plan_that_fits_is_offered_a_change_of_method_only_for_a_large_gain():
    # the 1.5B fits one H200: a change of method that saves a fifth of its step or more is offered
    mp = plan([], "1xH200-141GB", Q15)
    advice = advise(mp.values, mp.models, mp.cluster, smaller=[Q05])
    method = [a for a in advice.alternatives if a.kind == METHOD]
    assert advice.fits_now and method
    assert all(a.step_seconds <= 0.8 * advice.step_seconds for a in method)
    # the 0.5B smoke run fits a 24 GB GPU: LoRA would save 2 s of 15, not worth training adapters instead
    mp = plan([], "1xRTX-4090-24GB", Q05)
    advice = advise(mp.values, mp.models, mp.cluster)
    assert advice.fits_now and not [a for a in advice.alternatives if a.kind == METHOD]


def test_nothing_fits_says_so_and_names_the_smallest_change():
    mp = plan([], "1xRTX-4090-24GB")
    advice = advise(mp.values, mp.models, mp.cluster, smaller=[Q15])
    assert advice.best is None and not advice.fits_now
    assert re.match(r"Nothing on this 24 GiB GPU fits Qwen/Qwen2.5-7B-Instruct full fine-tuning: it needs >= \d+ "
                    r"such GPUs", advice.statement)
    method = [a for a in advice.alternatives if a.kind == METHOD]
    assert method and all(a.fits for a in method) and "Qwen2.5-1.5B-Instruct" in advice.statement
    # more GPUs are never offered beyond the one the user has
    assert not [a for a in advice.alternatives if a.kind == "hardware"]


def test_where_only_the_host_stops_lora_the_statement_says_so_with_its_numbers():
    """7B on one 40 GB GPU of a node with 40 GiB of RAM: LoRA fits the GPU (vLLM 14.2 GiB beside the fp32 base of
    28.4 GiB), but vLLM's level-1 sleep pins its weights on the host (26.8 GiB) beside rank 0's read of the model:
    a user told only "a smaller model fits" asks about LoRA next."""
    mp = plan([], "1xA100-40GB")
    mp.cluster.nodes[0].memory_bytes = 40 * 2**30
    mp = check_overrides(load_schema(), ONE_GPU, moves=load_moves(), models=mp.models, cluster=mp.cluster).memory
    advice = advise(mp.values, mp.models, mp.cluster, smaller=[Q15])
    assert not any("LoRA" in a.text for a in advice.alternatives if a.fits)
    m = re.search(r"LoRA would fit this 40 GiB GPU but not the host: it needs about (\d+) GiB of 40 GiB of RAM a node",
                  advice.statement)
    assert m and int(m.group(1)) > 0.95 * 40
    # what it claims re-estimates so: LoRA with the savings holds on the GPU (vLLM starts, a KV cache for a request)
    # and only the host stops it (at gpu_memory_utilization 0.3, every saving's, vLLM had no KV cache: it said so)
    from wizard.core.advice.moves import LORA_KEY
    from wizard.core.advice.savings import all_savings
    from wizard.core.memory.verdict import memory_verdict
    held = []
    for offload in (False, True):
        for util in (0.3, 0.5, 0.7):
            lora = {**mp.values, **all_savings(mp.values, offload), LORA_KEY: 32, f"{R}.load_format": "safetensors",
                    f"{R}.gpu_memory_utilization": util, f"{A}.strategy": "fsdp2",
                    "actor_rollout_ref.ref.strategy": "fsdp2"}
            report, _ = estimate_memory(lora, mp.models, mp.cluster)
            if deficit(report, lora, host=False)[0] <= 0:
                held.append(memory_verdict(report, lora, mp.models, mp.cluster).cause)
    assert held and set(held) == {"host"}
    # with RAM enough, offloading to it fits full fine-tuning (a tuning), and nothing speaks of the host
    mp.cluster.nodes[0].memory_bytes = 512 * 2**30
    mp = check_overrides(load_schema(), ONE_GPU, moves=load_moves(), models=mp.models, cluster=mp.cluster).memory
    advice = advise(mp.values, mp.models, mp.cluster, smaller=[Q15])
    assert advice.best is not None and "offload" in advice.best.text and "not the host" not in (advice.statement or "")


def test_more_gpus_only_up_to_the_users_own():
    mp = plan(["trainer.n_gpus_per_node=1"], "8xRTX-4090-24GB")  # the plan uses 1 of 8
    advice = advise(mp.values, mp.models, mp.cluster)
    assert advice.alternatives
    for a in advice.alternatives:
        assert int(a.changes.get("trainer.n_gpus_per_node", 1)) <= 8 and int(a.changes.get("trainer.nnodes", 1)) == 1


def test_no_step_time_without_the_gpus_speed_and_a_reason_instead():
    mp = plan([], "1xV100-32GB")
    st = predict_step(mp.values, mp.models, mp.cluster, mp.report)
    assert st.seconds is None and "V100" in st.reason


def test_step_time_of_the_runs_measured_alone_on_the_h200():
    # bench/bench_step_time.py prints every run; the runs measured alone (the calibration's) are held to 15 %
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("bench_step_time", root / "bench" / "bench_step_time.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    alone = [c for c in bench.cases(root / "bench" / "data" / "verl_real") if c["alone"]]
    assert len(alone) >= 3 and len(load_runs(root / "bench" / "data" / "verl_real")) > len(alone)
    missed = {}
    for case in alone:
        phases, step = bench.predicted(case)
        if step != pytest.approx(case["step"], rel=0.15):
            missed[(case["run"], "step")] = (round(step, 1), round(case["step"], 1))
        for name, measured in case["measured"].items():
            if measured >= 2 and phases[name] != pytest.approx(measured, rel=0.25):
                missed[(case["run"], name)] = (round(phases[name], 1), round(measured, 1))
    # The runs outside, by one poll of verl's 2-s replay buffer (tests/core/test_steptime_generation.py): the 1.2B
    # MoE on Megatron ended its generation a poll earlier than its decode and the samples' hand-off were predicted to
    # reach (2 s of a 7.5-s step); the fused-kernels 1.5B run's a poll later (its step is within 15 %); the advisor's
    # PPO choice run a second time three polls later (18.1 s where the same rollout ended at 12.1 and 14.1 in two
    # other runs; its step -13 %). The advisor's later PPO choice (dynamic batching at 4,096 tokens: one sample a
    # log-prob micro-batch, a case first run there) took 4.9 s in its old log-prob pass against 8.4 (the fused head's
    # term, fitted on one run), its step 55.0 s against 65.4 (bench/real/TIMING.md, twenty-third session). Strict:
    # another miss, or one of these fixed, fails here.
    assert missed == {("advised-ppo-1.5b-critic-4096-h100-4", "gen"): (12.0, 18.1),
                      ("advised-ppo-1.5b-critic-4096-h100-5", "old_log_prob"): (8.4, 4.9),
                      ("advised-ppo-1.5b-critic-4096-h100-5", "step"): (65.4, 55.0),
                      ("meg-grpo-moe1b-ep1-u0.5-h100", "step"): (9.1, 7.5),
                      ("meg-grpo-moe1b-ep1-u0.5-h100", "gen"): (4.0, 2.0),
                      ("time-grpo-1.5b-fsdp2-u0.5-resp1024-fused-h100", "gen"): (4.0, 6.1)}, missed


def test_the_fix_for_a_whole_unsharded_gradient_syncs_every_micro_batch():
    mp = plan(NO_SYNC_ON_EIGHT, "8xA100-40GB")
    assert mp.verdict.word == "does_not_fit"
    without = plan([*NO_SYNC_ON_EIGHT, f"{AF}.use_no_sync_for_gradient_accumulation=False"], "8xA100-40GB")
    assert without.verdict.word == "fits"
    best = advise(mp.values, mp.models, mp.cluster).best
    assert best.fits and best.changes[f"{AF}.use_no_sync_for_gradient_accumulation"] is False
    assert "synced every micro-batch" in best.text


def test_a_model_kept_gathered_whole_is_offered_resharding_after_each_forward():
    # reshard_after_forward=false on eight 40 GB GPUs: the 7B stays gathered in bf16 (+14.2 GiB) from the forward to
    # the backward; with micro-batches of 8 the update fits only while samples are short
    extra = [e for e in NO_SYNC_ON_EIGHT if "no_sync" not in e and "micro" not in e] + [
        f"{A}.ppo_micro_batch_size_per_gpu=8", f"{AF}.reshard_after_forward=False"]
    mp = plan(extra, "8xA100-40GB")
    assert mp.verdict.word == "fits_while_short"
    assert plan([*extra, f"{AF}.reshard_after_forward=True"], "8xA100-40GB").verdict.word == "fits"
    best = advise(mp.values, mp.models, mp.cluster).best
    assert best.fits and best.changes[f"{AF}.reshard_after_forward"] is True


def test_the_critics_token_budget_is_tuned_and_written_as_verl_takes_it():
    """Without flash-attn every micro-batch attends over one mask of all its packed tokens, so the critic's 32,768
    tokens cost it more than four micro-batches of samples do the actor; the advisor lowers the critic's budget, a
    key verl's YAML lacks, written with '++' so that it composes whether the plan sets it or not."""
    from wizard.core.advice.moves import ADDED_KEYS
    from wizard.core.memory.config import FLASH_ATTN

    variant = load_schema().variant(None)
    assert all(k in variant.keys and not variant.keys[k].in_yaml for k in ADDED_KEYS)
    key = "critic.ppo_infer_max_token_len_per_gpu"
    for already in ([], [f"+{key}=32768"]):
        mp = plan([*PPO_4096, *already])
        advice = advise({**mp.values, FLASH_ATTN: False}, mp.models, mp.cluster)
        best = advice.best
        assert best is not None and best.changes.get(key, 32768) < 32768, best and best.text
        assert f"++{key}={best.changes[key]}" in best.overrides and "critic token budget 32,768 ->" in best.text

        def check(extra):
            return check_overrides(load_schema(), [*ONE_GPU, *PPO_4096, *already, *extra], moves=load_moves(),
                                   models=mp.models, cluster=mp.cluster, advise=False)

        result = check(best.overrides)
        errors = {f.rule for f in result.findings if f.severity.value == "error"}
        assert errors <= {f.rule for f in check([]).findings if f.severity.value == "error"}, best.overrides
        assert result.memory.values[key] == best.changes[key]
        # the same change written plainly is what verl refuses (its YAML has no such key)
        plain = check([f"{key}={best.changes[key]}"])
        assert ("compose.unknown_key" in {f.rule for f in plain.findings}) == (not already)


def test_an_alternative_that_gave_way_to_a_simpler_one_does_not_put_a_slower_one_first():
    # a simpler config (one change of two) took the place of one it was within 1 % of, ahead of one faster than it:
    # "230 s" was listed above "229.8 s"
    from types import SimpleNamespace

    from wizard.core.advice.moves import Move
    from wizard.core.advice.offer import _distinct
    from wizard.core.advice.state import State

    def state(seconds, peak_gib, *knobs):
        moves = tuple(Move(name=k, changes=((f"x.{k}", 1),)) for k in knobs)
        return State(values={}, models={}, cluster=None, moves=moves, report=SimpleNamespace(unmodelled=None),
                     deficit=-1, peak=int(peak_gib * 2**30), capacity=80 * 2**30,
                     _step=SimpleNamespace(seconds=seconds))

    both, other, simpler = state(229.5, 50, "a", "b"), state(229.8, 60, "c"), state(230.0, 70, "a")
    out = _distinct([both, other, simpler], 4)
    assert [s.seconds for s in out] == [229.8, 230.0]


def test_megatron_on_one_small_gpu_is_offered_a_smaller_model_and_a_count_of_gpus_not_an_unverified_lora():
    """A 7B on the Megatron engine on one 24 GB GPU: its bf16 weights and fp32 gradients (42.6 GiB) outgrow the GPU
    whatever is offloaded, and more GPUs hold them only with Megatron's TP (the statement once said "not even on
    512 such GPUs"); a smaller model fits with megatron-core's CPU optimizer, which the beam never reached; LoRA on
    Megatron is not modelled, so it is named as such, not offered as "does not fit"."""
    mp = plan(["model_engine=megatron", f"{A}.optim.optimizer=adam"], "1xRTX-4090-24GB")
    assert mp.report is not None and not mp.report.unmodelled
    advice = advise(mp.values, mp.models, mp.cluster, smaller=[Q15])
    assert not advice.fits_now and advice.best is None
    m = re.match(r"Nothing on this 24 GiB GPU fits Qwen/Qwen2.5-7B-Instruct full fine-tuning: it needs >= (\d+) such "
                 r"GPUs", advice.statement)
    assert m and int(m.group(1)) <= 8, advice.statement
    assert "LoRA is not offered: with the Megatron engine it is not modelled" in advice.statement
    assert not [a for a in advice.alternatives if "LoRA" in a.text]
    smaller = [a for a in advice.alternatives if a.fits and a.kind == METHOD]
    assert smaller and "Qwen2.5-1.5B-Instruct" in advice.statement
    # what it offers re-estimates so with the smaller model's own facts: the memory findings are gone
    alt = smaller[0]
    assert "optimizer_cpu_offload=True" in " ".join(alt.overrides)
    result = check_overrides(load_schema(), [*ONE_GPU, "model_engine=megatron", f"{A}.optim.optimizer=adam",
                                             *alt.overrides], moves=load_moves(),
                             models={"actor": Q15, "ref": Q15, "critic": Q15}, cluster=mp.cluster, advise=False)
    assert result.memory.report is not None
    assert not [f.rule for f in result.findings if f.rule.startswith("memory.") and f.severity.value == "error"]
    # the peak and the step it was offered with are what planning its keys gives: verl's YAML makes the reference's
    # param_offload follow the actor's, so the two move together (they were once apart: 32.8 s offered, 34.8 planned)
    re_planned = result.memory
    _, peak, _ = deficit(re_planned.report, re_planned.values)
    assert peak == alt.peak_bytes
    step = predict_step(re_planned.values, re_planned.models, re_planned.cluster, re_planned.report)
    assert round(step.seconds, 1) == alt.step_seconds
    # without the precision-aware optimizer megatron-core keeps the fp32 main params on the GPU: the move sets it
    assert f"++{A}.optim.override_optimizer_config.use_precision_aware_optimizer=True" in alt.overrides


@pytest.mark.parametrize("precise", [False, True])
def test_megatron_s_cpu_optimizer_where_the_gpu_has_room_is_offered_off_for_speed(precise):
    """A 1.5B on one 80 GB GPU with megatron-core's CPU optimizer: its host Adam makes the update slower; without it
    the plan still fits. Turning it off takes the precision-aware optimizer with it (without the CPU optimizer that
    one is not modelled), so it is offered whichever way the user set the pair."""
    opt = f"++{A}.optim.override_optimizer_config"
    extra = ["model_engine=megatron", f"{A}.optim.optimizer=adam", f"{opt}.optimizer_cpu_offload=True",
             f"{opt}.optimizer_offload_fraction=1.0"] + ([f"{opt}.use_precision_aware_optimizer=True"] if precise else [])
    mp = plan(extra, "1xH100-80GB", Q15)
    assert mp.report is not None and not mp.report.unmodelled
    advice = advise(mp.values, mp.models, mp.cluster)
    assert advice.fits_now and advice.best is not None and advice.best.text.startswith("no CPU optimizer")
    assert advice.best.fits and advice.best.step_seconds < advice.step_seconds


def test_a_14b_on_one_80_gb_gpu_is_offered_lora_on_a_bf16_base_that_fits_gpu_and_host():
    """Qwen2.5-14B on one H100 of a node with 125 GiB of RAM (the lent one's): verl loads the actor in fp32 to train
    it (fsdp_config.model_dtype), 55 GiB of weights LoRA never updates beside vLLM's 27.5. The advisor said
    "nothing fits but a 3B; LoRA would need 167 GiB of host RAM"; with the base in bf16, as verl's LoRA examples load
    it, LoRA fits at 72.9 GiB. It is offered, moved off FSDP1 (the plan's default: LoRA on it with one GPU hangs),
    and re-estimates as offered."""
    from wizard.adapters.files.model_facts import load_catalogue

    q14 = load_catalogue().facts("Qwen/Qwen2.5-14B-Instruct")
    mp = plan([], "1xH100-80GB", model=q14)
    mp.cluster.nodes[0].memory_bytes = 125 * 2**30
    mp = check_overrides(load_schema(), ONE_GPU, moves=load_moves(), models=mp.models, cluster=mp.cluster).memory
    advice = advise(mp.values, mp.models, mp.cluster)
    lora = next(a for a in advice.alternatives if a.fits and "LoRA" in a.text)
    assert f"{AF}.model_dtype=bf16" in lora.overrides and f"{A}.strategy=fsdp2" in lora.overrides, lora.overrides
    assert "bf16" in advice.statement and "but not the host" not in advice.statement

    def judged(overrides):
        result = check_overrides(load_schema(), [*ONE_GPU, *overrides], moves=load_moves(), models=mp.models,
                                 cluster=mp.cluster, advise=False)
        return result.memory, {f.rule for f in result.findings if f.severity.value == "error"
                               and f.rule != "models.actor_path"}  # the test's plan names no model path

    again, errors = judged(lora.overrides)
    assert not errors and deficit(again.report, again.values)[1] == lora.peak_bytes
    assert all(not h.over for h in again.report.host)
    # the bf16 base is what makes it fit: the same change with verl's fp32 base does not
    fp32, errors = judged([o for o in lora.overrides if "model_dtype" not in o])
    assert deficit(fp32.report, fp32.values)[0] > 0 and errors


def test_where_only_lora_fits_its_first_choice_applied_is_not_offered_a_much_faster_one():
    """14B on one H100 without flash-attn (the campaign's setting): only a change of method fits. The search past
    memory ran on changes of tuning only, so LoRA was offered at 82.2 s a step and, applied, its plan was offered
    60.6 s at once (gradient checkpointing off with dynamic batching). The first LoRA choice is searched as the
    plan it becomes."""
    from wizard.adapters.files.model_facts import load_catalogue
    from wizard.core.memory.config import FLASH_ATTN
    from wizard.core.steptime import PROMPT_TOKENS

    q14 = load_catalogue().facts("Qwen/Qwen2.5-14B-Instruct")
    extra = ["actor_rollout_ref.model.enable_gradient_checkpointing=True", f"{R}.gpu_memory_utilization=0.5"]
    data = {FLASH_ATTN: False, PROMPT_TOKENS: 440}

    def judged(overrides):
        cluster = parse_cluster_spec("1xH100-80GB", load_gpu_catalogue())
        cluster.nodes[0].memory_bytes = 125 * 2**30
        mp = check_overrides(load_schema(), [*ONE_GPU, *extra, *overrides], moves=load_moves(),
                             models={"actor": q14, "ref": q14}, cluster=cluster).memory
        return mp, advise({**mp.values, **data}, mp.models, mp.cluster)

    _, advice = judged([])
    lora = next(a for a in advice.alternatives if a.fits and "LoRA" in a.text)
    applied, again = judged(lora.overrides)
    assert again.fits_now and again.step_seconds == pytest.approx(lora.step_seconds, abs=0.05)
    faster = [a.step_seconds for a in again.alternatives if a.fits and a.kind != METHOD]
    assert not faster or min(faster) > 0.95 * lora.step_seconds, (lora.step_seconds, faster)


def test_a_lora_plan_verl_hangs_on_gets_no_alternative_that_still_hangs():
    """7B LoRA on FSDP1 with param offload on one 24 GB GPU: verl 0.9.1 hangs at the first weight sync of LoRA served
    from FSDP1 on one GPU (rollout.lora_fsdp1_one_gpu). The advisor once ranked first "the 1.5B, no param offload",
    still on FSDP1 (the run hangs), above an FSDP2 one that trains; now each alternative moves off FSDP1, and says so."""
    extra = ["actor_rollout_ref.model.lora_rank=32", "actor_rollout_ref.model.lora_alpha=32", f"{AF}.param_offload=True"]
    mp = plan(extra, "1xRTX-4090-24GB")
    cluster = parse_cluster_spec("1xRTX-4090-24GB", load_gpu_catalogue())
    advice = advise(mp.values, mp.models, mp.cluster, smaller=[Q15, Q05])
    fitting = [a for a in advice.alternatives if a.fits]
    assert fitting
    for alt in fitting:
        result = check_overrides(load_schema(), [*ONE_GPU, *extra, *alt.overrides], moves=load_moves(),
                                 models=alt_models(mp, alt), cluster=cluster, advise=False)
        errors = {f.rule for f in result.findings if f.severity.value == "error"}
        assert "rollout.lora_fsdp1_one_gpu" not in errors and not any(e.startswith("memory.") for e in errors), \
            (alt.text, errors)
        assert f"{A}.strategy=fsdp2" in alt.overrides, alt.text


def test_an_alternative_changing_a_knob_others_follow_is_estimated_as_its_overrides_compose():
    """verl's YAML makes the log-prob passes' token budgets follow the actor's (``${oc.select:...actor.
    ppo_max_token_len_per_gpu,16384}``): an alternative that raises the actor's budget raises theirs when its
    overrides are composed again. It was once estimated with theirs left where they were (offered 12.7 s, re-planned
    12.0; on the 2-node preset 1,015 s offered, 613 planned, ranked below slower ones)."""
    extra = [f"{A}.use_dynamic_bsz=True", f"{A}.ppo_max_token_len_per_gpu=1024"]
    mp = plan(extra, "1xH100-80GB", model=Q15)
    cluster = parse_cluster_spec("1xH100-80GB", load_gpu_catalogue())
    advice = advise(mp.values, mp.models, mp.cluster)
    moved = [a for a in advice.alternatives if f"{A}.ppo_max_token_len_per_gpu" in a.changes]
    assert moved and any(f"{R}.log_prob_max_token_len_per_gpu" not in a.changes for a in moved)
    for alt in advice.alternatives:
        again = check_overrides(load_schema(), [*ONE_GPU, *extra, *alt.overrides], moves=load_moves(),
                                models=alt_models(mp, alt), cluster=cluster, advise=False).memory
        _, peak, _ = deficit(again.report, again.values)
        step = predict_step(again.values, again.models, again.cluster, again.report)
        assert (peak, round(step.seconds, 1)) == (alt.peak_bytes, alt.step_seconds), alt.text


# separate_async: the trainer on one node, standalone rollout replicas on the other (8 + 8 of 2 x 8)
SEPARATE = ["trainer.v1.trainer_mode=separate_async", "actor_rollout_ref.hybrid_engine=False", f"{R}.nnodes=1",
            f"{R}.n_gpus_per_node=8", f"{R}.tensor_model_parallel_size=2", f"{R}.checkpoint_engine.backend=nccl",
            "trainer.n_gpus_per_node=8", "trainer.nnodes=1", "data.train_batch_size=64", f"{A}.ppo_mini_batch_size=16"]


def test_no_alternative_asks_for_gpus_the_rollout_pools_already_take():
    mp = plan(SEPARATE, "2x8xH100-80GB")
    assert mp.short_of_gpus is None  # 16 of 16
    advice = advise(mp.values, mp.models, mp.cluster, smaller=[Q15])
    assert advice.alternatives
    for a in advice.alternatives:  # a second trainer node would ask for 24 GPUs: verl waits for them
        assert "trainer.nnodes=2" not in a.overrides, a.text
        again = check_overrides(load_schema(), [*ONE_GPU, *SEPARATE, *a.overrides], moves=load_moves(),
                                models=mp.models, cluster=mp.cluster).memory
        assert again.short_of_gpus is None, (a.text, again.short_of_gpus)


def test_a_plan_short_of_gpus_says_how_many_the_cluster_has():
    # 16 a node on 8-GPU nodes: the pool's GPUs are all missing, but the cluster has 8, not "0"
    assert "asks for 16 GPUs and the cluster has 8:" in plan(["trainer.n_gpus_per_node=16"], "8xH100-80GB").short_of_gpus
    shape = plan(["trainer.n_gpus_per_node=16", "trainer.nnodes=1"], "2x8xH100-80GB").short_of_gpus
    assert "asks for 16 GPUs and the cluster has 16 (16 of them do not fit the nodes' shape" in shape


def test_lora_on_fsdp1_is_offered_its_sync_a_layer_at_a_time():
    from wizard.core.advice.moves import moves_for

    def moves(extra):
        mp = plan(["trainer.n_gpus_per_node=8", "data.train_batch_size=64", f"{A}.ppo_mini_batch_size=16",
                   "actor_rollout_ref.model.lora_rank=32", "actor_rollout_ref.model.lora_alpha=32", *extra],
                  "8xH100-80GB")
        return [m for m in moves_for(mp.values, mp.models, mp.cluster, mp.cluster, (), ()) if "layered_summon" in m.name]

    # summon_full_params holds the whole model unsharded on every GPU at each sync; the plan's own label named the
    # key, and no alternative turned it
    (move,) = moves([f"{A}.strategy=fsdp", f"{R}.load_format=dummy"])
    assert dict(move.changes) == {f"{R}.layered_summon": True, f"{R}.load_format": "safetensors"}  # needs the base
    assert moves([f"{A}.strategy=fsdp2"]) == []


def test_a_pass_turned_to_dynamic_batching_reads_as_one_change_with_its_final_budget():
    from wizard.core.advice.moves import Move, turn
    from wizard.core.advice.state import Alternative

    moves = (Move("actor micro-batch -> dynamic batching, 4,096 tokens", ((f"{A}.use_dynamic_bsz", True),)),
             turn("actor micro-batch token budget", "4,096", "32,768", ((f"{A}.ppo_max_token_len_per_gpu", 32768),)))
    alt = Alternative(moves=moves, changes={}, kind="tuning", fits=True, verdict="fits", peak_bytes=1,
                      capacity_bytes=None, step_seconds=1.0)
    # it read "-> dynamic batching, 4,096 tokens, actor micro-batch token budget 4,096 -> 32,768"
    assert alt.text == "actor micro-batch -> dynamic batching, 32,768 tokens"
    critic = (Move("critic micro-batch -> dynamic batching, 8,192 tokens", (("critic.use_dynamic_bsz", True),)),
              turn("critic token budget", "8,192", "16,384", (("critic.ppo_max_token_len_per_gpu", 16384),)))
    assert Alternative(moves=critic, changes={}, kind="tuning", fits=True, verdict="fits", peak_bytes=1,
                       capacity_bytes=None, step_seconds=1.0).text == "critic micro-batch -> dynamic batching, 16,384 tokens"


def test_ppo_whose_critic_needs_its_states_on_the_host_is_offered_the_critics_offload_policy():
    """The search never turned the critic's offload_policy: 7B PPO on two 40 GB GPUs was "Nothing on these 2 x 40 GiB
    GPUs fits ... it needs >= 4 such GPUs" where both models' states on the host fit (the CASES test re-estimates it)."""
    mp = plan(PPO_7B_TWO, "2xA100-40GB")
    advice = advise(mp.values, mp.models, mp.cluster, smaller=[Q15])
    assert advice.best is not None and advice.best.kind != METHOD, advice.statement
    assert {"critic.fsdp.offload_policy=True", "critic.strategy=fsdp2"} <= set(advice.best.overrides)


APPLIED = [  # (what a user asks, preset, GPUs, --set words): alternatives a search toward fitting reached untuned
    # LoRA, the first change of method, was offered at 42.6 s a step and, applied, offered its bf16 base at 37.0 s
    ("14B on one H200", "grpo-1gpu-smoke", "1xH200-141GB", ["actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct"]),
    # the 3B (81.8 s) was offered 75.8 s once applied: the smaller models are plans of their own too
    ("7B on one 24 GB GPU", "grpo-1gpu-smoke", "1xRTX-4090-24GB", ["actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"]),
    # the 14B with a seed's full recompute (76.8 s) was offered no recompute at 67.0 s once applied: the polish
    # that took the recompute back was dropped as a label contradicting itself
    ("32B Megatron on 8 x 24 GB", "grpo-1gpu-smoke", "8xRTX-4090-24GB",
     ["model_engine=megatron", "trainer.n_gpus_per_node=8", "actor_rollout_ref.model.path=Qwen/Qwen2.5-32B-Instruct"]),
    # the first choice (FSDP2 with the offload policy, 2,684 s) was offered 2,545 s once applied: no offload policy,
    # param offload and a smaller micro-batch, which folds to FSDP1 -> FSDP2 with param offload, and which a polish
    # of the fastest states found (TP 4, not among those offered) never reached
    ("72B LoRA on 8 x H100", "grpo-8gpu", "8xH100-80GB",
     ["actor_rollout_ref.model.path=Qwen/Qwen2.5-72B-Instruct", "actor_rollout_ref.model.lora_rank=32"]),
    # LoRA at 3,378 s, then 2,842 s once applied (checkpointing off with micro-batches of 2): one search from the
    # fastest LoRA did not reach what the plan, applied, is searched to; again from what it found, it does
    ("7B on two 40 GB GPUs", "grpo-8gpu", "2xA100-40GB", ["actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"]),
    # LoRA with FSDP2's offload policy at 150.2 s, then 133.3 s without it once applied: the fold's FSDP1 -> FSDP2
    # is the plan's own move less the critic's strategy, which the offload-policy move left as it was
    ("14B PPO on 8 x H100", "ppo-8gpu", "8xH100-80GB", ["actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct",
                                                        "critic.model.path=Qwen/Qwen2.5-14B-Instruct"]),
]


@pytest.mark.parametrize("question,preset,gpus,sets", APPLIED, ids=[q[0] for q in APPLIED])
def test_an_alternative_applied_is_not_offered_a_much_faster_one_training_the_same(question, preset, gpus, sets):
    """Apply each alternative offered (as Apply and check --fix do) and ask again: what the plan then becomes trains
    the same model the same way, and nothing it is offered is more than 5 % faster than the fastest offered for
    that before (bench/bench_advice_applied.py prints this for every question of bench_advice.py)."""
    from wizard.core.plan import apply_overrides
    from wizard.usecases.advising import plan_advice
    from wizard.usecases.assessment import assess_plan
    from wizard.usecases.hardware import machines_for, read_gpu_spec
    from wizard.usecases.plans import preset_plan

    spec = read_gpu_spec(gpus)

    def advised(overrides):
        plan = apply_overrides(preset_plan(preset, spec, sets), overrides) if overrides else preset_plan(preset, spec, sets)
        return plan_advice(assess_plan(plan, gpus=spec, cluster=machines_for(spec), advise=False).memory)

    first = advised([])
    offered: dict = {}
    for a in first.alternatives:
        if a.fits and a.step_seconds is not None:
            offered[a.trains] = min(offered.get(a.trains, a.step_seconds), a.step_seconds)
    assert any(trains != ((), False) for trains in offered), "no change of method offered: the question is moot"
    for a in first.alternatives:  # a move folded into the plan's own says what its overrides do
        if "with the CPU offload policy" in a.text:
            assert any(o.endswith("offload_policy=True") for o in a.overrides), (a.text, a.overrides)
        if "FSDP1 -> FSDP2" in a.text and preset.startswith("ppo"):  # the critic's too, or it says not
            assert "critic.strategy=fsdp2" in a.overrides or "critic.strategy as it was" in a.text, a.text
    for a in [a for a in first.alternatives if a.fits and a.step_seconds is not None]:
        again = advised(a.overrides)
        assert again.fits_now and again.step_seconds == pytest.approx(a.step_seconds, abs=0.06), a.text
        faster = [b.step_seconds for b in again.alternatives if b.fits and b.kind != METHOD and b.step_seconds]
        assert not faster or min(faster) >= 0.95 * offered[a.trains], (a.text, offered[a.trains], min(faster))


def test_a_first_choice_keeps_verls_precision_where_other_moves_make_it_as_fast():
    """14B LoRA on one H200: the bf16 base with checkpointing off (37.0 s) was offered first, though vLLM loading the
    base with micro-batches of 4 keeps the fp32 adapters at 37.1 s; a change of precision is offered first only where
    it gains more than SPEED_GAIN."""
    from wizard.core.advice.search import SPEED_GAIN
    from wizard.core.plan import apply_overrides
    from wizard.usecases.advising import plan_advice
    from wizard.usecases.assessment import assess_plan
    from wizard.usecases.hardware import machines_for, read_gpu_spec
    from wizard.usecases.plans import preset_plan

    spec = read_gpu_spec("1xH200-141GB")
    cluster = machines_for(spec)
    cluster = cluster.model_copy(update={"nodes": [n.model_copy(update={"memory_bytes": 125 * 2**30})
                                                    for n in cluster.nodes]})
    plan = preset_plan("grpo-1gpu-smoke", spec, ["actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct",
                                                 "actor_rollout_ref.model.lora_rank=32", f"{A}.strategy=fsdp2",
                                                 "actor_rollout_ref.ref.strategy=fsdp2"])
    advice = plan_advice(assess_plan(plan, gpus=spec, cluster=cluster, advise=False).memory)
    first = advice.best
    bf16 = [a for a in advice.alternatives if a.fits and f"{AF}.model_dtype=bf16" in a.overrides]
    assert bf16 and first.step_seconds <= min(a.step_seconds for a in bf16) * (1 + SPEED_GAIN)
    assert not any("model_dtype" in o for o in first.overrides), first.text
    again = plan_advice(assess_plan(apply_overrides(plan, first.overrides), gpus=spec, cluster=cluster,
                                    advise=False).memory)
    assert again.fits_now and again.step_seconds == pytest.approx(first.step_seconds, abs=0.06)


def _alt(kind: str, host_gib: float = 0, fits: bool = True):
    from wizard.core.advice.state import Alternative

    return Alternative(moves=(), changes={"k": kind}, kind=kind, fits=fits, verdict="fits", peak_bytes=GIB,
                       capacity_bytes=80 * GIB, step_seconds=10.0, host_bytes=int(host_gib * GIB))


@pytest.mark.parametrize("rows, chosen, said, fixed", [
    # the first change of tuning that asks nothing of an unknown host, though a faster one comes before it: both the
    # window's Apply and check --fix take it
    ([_alt("tuning", 239), _alt("tuning"), _alt("method")], 1, None, 1),
    # every change that keeps the method needs unknown host RAM: the window selects none and says why; check --fix,
    # asked to fix, applies the first (its note says what the host must hold); never LoRA in their place
    ([_alt("tuning", 239), _alt("method")], None, "need host RAM not known here, the others change what is trained", 0),
    # more of the user's own GPUs is no change of what is trained: both take it
    ([_alt("hardware"), _alt("method")], 0, None, 0),
    ([_alt("method"), _alt("method")], None, "each of these changes what is trained", None),
    ([_alt("tuning", fits=False)], None, None, None),
])
def test_the_window_and_check_fix_take_one_alternative_by_one_rule(rows, chosen, said, fixed):
    """The row the Make it fit dialog selects for Apply and what `check --fix` applies come from one rule
    (Advice.pick): they differ only where every such change needs host RAM nobody knows."""
    from wizard.core.advice.state import Advice

    advice = Advice(fits_now=False, step_seconds=None, alternatives=rows)
    row, why = advice.pick()
    assert row == chosen and (why is None if said is None else said in why and "pick one" in why)
    assert advice.best_index() == fixed
    assert advice.best_said() == ("" if not fixed else f"{fixed + 1}), the first that asks nothing of host RAM not "
                                  "known here")


def test_what_check_fix_applies_past_a_row_that_does_not_fit_is_not_said_to_ask_nothing_of_the_host():
    from wizard.core.advice.state import Advice

    advice = Advice(fits_now=False, step_seconds=None, alternatives=[_alt("tuning", fits=False), _alt("tuning", 239)])
    assert advice.pick()[0] is None and advice.best_index() == 1
    assert advice.best_said() == "2), the first that fits without changing what is trained"
