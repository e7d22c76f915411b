"""The memory estimate against what real verl 0.9.1 runs did on an H200 (bench/data/verl_real/, vLLM 0.24, no
flash-attn), and the fixes those runs asked for, with the numbers a user sees."""

import json
import shlex
from pathlib import Path

import pytest

from tests.helpers.memory_values import full
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.check.verdict import check_overrides
from wizard.core.hardware.cluster import GPU, Cluster, ClusterNode
from wizard.core.memory.config import FLASH_ATTN, read_config
from wizard.core.memory.estimate import estimate_memory
from wizard.core.memory.terms import GIB
from wizard.core.memory.verdict import DOES_NOT_FIT, FITS, FITS_WHILE_SHORT, memory_verdict
from wizard.core.models.facts import ModelFacts, facts_from_hf_config

DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "verl_real"
MIB = 1024 * 1024
A, AF, R, M = ("actor_rollout_ref.actor", "actor_rollout_ref.actor.fsdp_config", "actor_rollout_ref.rollout",
               "actor_rollout_ref.model")


def memory_plan(schema, overrides, *, moves, models, cluster):
    """The memory plan of a config, as ``plan`` makes it: from the check's one composition."""
    return check_overrides(schema, overrides, moves=moves, models=models, cluster=cluster).memory


def h200(n=1):
    return Cluster(source="spec", nodes=[ClusterNode(name="node0", gpu_count=n, gpus=[
        GPU(index=i, name="NVIDIA H200", memory_total_bytes=143771 * MIB) for i in range(n)])])


def recorded(name: str):
    """(overrides, model facts) of a recorded run, as the bench replays it."""
    folder = DATA / name
    cmd = folder / "command.sh"
    if cmd.exists():
        words = shlex.split(cmd.read_text().strip().splitlines()[-1])
        args = words[words.index("verl.trainer.main_ppo") + 1:]
    else:
        args = json.loads((folder / "spec.json").read_text())["args"]
    facts = facts_from_hf_config(json.loads((folder / "model.json").read_text()), name=name, source="config")
    return [a for a in args if not a.startswith("hydra.")], facts


def plan(name: str, extra=()):
    overrides, facts = recorded(name)
    models = {"actor": facts, "ref": facts}
    mp = memory_plan(load_schema(), [*overrides, *extra], moves=load_moves(), models=models, cluster=h200())
    return mp, models


def phase(report, name):
    return next(p for p in report.groups[0].phases if p.name == name)


def gib(n):
    return n / GIB


def test_generation_of_a_recorded_run_within_one_percent_of_nvml():
    mp, _ = plan("grpo-1.5b-fsdp2-u0.5")
    assert mp.verdict.word == FITS
    gen = phase(mp.report, "generation")
    assert gib(gen.total) == pytest.approx(91719 * MIB / GIB, rel=0.01)  # NVML used at the peak: 89.57 GiB
    # vLLM 0.24 sizes its share of CUDA's total (139.8 of NVML's 140.4 GiB) and counts its CUDA graphs in it
    engine = sum(t.bytes for t in gen.terms if t.key == "engine_rollout")
    assert gib(engine) == pytest.approx(0.5 * 139.8, abs=0.05)
    assert not any(t.key == "graphs_rollout" for t in gen.terms)


def test_kv_cache_matches_what_vllm_logged():
    mp, _ = plan("grpo-1.5b-fsdp2-u0.5")
    # vLLM: "Available KV cache memory: 65.62 GiB", "GPU KV cache size: 2,457,568 tokens"
    kv = mp.report.kv["rollout"]
    assert gib(kv.kv_bytes) == pytest.approx(65.62, rel=0.01)
    assert kv.tokens == pytest.approx(2_457_568, rel=0.01)


def test_the_engine_that_could_not_start_is_does_not_fit_with_vllms_numbers():
    mp, models = plan("grpo-1.5b-fsdp2-u0.95-startfail")
    assert mp.verdict.word == DOES_NOT_FIT and mp.verdict.cause == "engine_start"
    found = check_overrides(load_schema(), recorded("grpo-1.5b-fsdp2-u0.95-startfail")[0], moves=load_moves(),
                            models=models, cluster=h200())
    start = next(f for f in found.findings if f.rule == "memory.engine_start")
    # vLLM said: Free memory on device (132.13/139.8 GiB) on startup is less than desired GPU memory utilization
    # (0.95, 132.81 GiB)
    assert "asks for 0.95 x 139.8 = 132.8 GiB" in start.message and "131.7 GiB free" in start.message


def test_the_3b_run_that_died_waking_up_for_its_second_generation_does_not_fit():
    mp, _ = plan("grpo-3b-fsdp2-u0.75-eager")
    assert mp.verdict.word == DOES_NOT_FIT and mp.verdict.cause == "generation"
    gen = phase(mp.report, "generation")
    assert gib(gen.total) > 140.4  # AdamW's 23 GiB + the engine's 104.9 GiB + the rest
    adam = sum(t.bytes for t in gen.terms if t.key == "actor_adam")
    assert gib(gen.total - adam) == pytest.approx(118.36, rel=0.01)  # the first generation, before AdamW: it ran


def test_without_flash_attn_the_update_keeps_a_log_softmax_and_the_allocators_cache():
    mp, models = plan("grpo-1.5b-fsdp2-u0.5")
    values = mp.values
    torch_path, _ = estimate_memory({**values, FLASH_ATTN: False}, models, h200())
    flash_path, _ = estimate_memory({**values, FLASH_ATTN: True}, models, h200())
    upd_torch, upd_flash = phase(torch_path, "actor_update"), phase(flash_path, "actor_update")
    assert gib(upd_torch.total) == pytest.approx(37.58, rel=0.03)  # NVML used at the update's peak
    assert upd_flash.total < upd_torch.total
    # the recorded configs set attn_implementation=sdpa: read as "no flash-attn" unless the environment says otherwise
    assert read_config(values).flash_attn is False


def test_fsdp1_on_one_gpu_keeps_the_reference_on_the_gpu_at_load():
    mp, _ = plan("launch-smoke-0.5b-fsdp1-u0.4")
    load = phase(mp.report, "load")
    ref = sum(t.bytes for t in load.terms if t.key == "ref_params")
    assert gib(ref) == pytest.approx(4 * 494_032_768 / GIB, rel=0.001)  # fp32 Qwen2.5-0.5B: 1.84 GiB
    assert gib(load.total) == pytest.approx(62.04, rel=0.02)  # NVML used before the first step


def test_deprecated_global_micro_batch_keys_are_sized_as_meant():
    values = {"trainer.n_gpus_per_node": 8, "data.max_prompt_length": 512, "data.max_response_length": 1024,
              f"{A}.ppo_micro_batch_size": 64, f"{R}.log_prob_micro_batch_size": 128, f"{R}.n": 5}
    cfg = read_config(full(values))
    assert cfg.actor_tokens == 8 * 1536 and cfg.logprob_tokens == 16 * 1536  # 64 / 8 GPUs, 128 / 8 GPUs
    assert any("ppo_micro_batch_size=64 (deprecated, global) is sized as 8 per GPU" in n for n in cfg.notes)
    unset = read_config(full({k: v for k, v in values.items() if "micro" not in k}))
    assert unset.actor_tokens == 1536  # what an unset micro batch gave before: one sample


Q32 = ModelFacts(source="config", name="Qwen/Qwen2.5-32B-Instruct", model_type="qwen2", hidden_size=5120,
                 intermediate_size=27648, num_layers=64, num_attention_heads=40, num_kv_heads=8, head_dim=128,
                 vocab_size=152064, tie_word_embeddings=False, max_position_embeddings=32768, attention_bias=True)
LORA = {"trainer.n_gpus_per_node": 8, "algorithm.adv_estimator": "grpo", f"{R}.name": "vllm", f"{R}.n": 4,
        f"{R}.tensor_model_parallel_size": 4, f"{R}.gpu_memory_utilization": 0.4, "data.train_batch_size": 64,
        f"{A}.ppo_mini_batch_size": 16, f"{A}.ppo_micro_batch_size_per_gpu": 1, f"{R}.log_prob_micro_batch_size_per_gpu": 2,
        f"{M}.lora_rank": 32, f"{A}.strategy": "fsdp", f"{AF}.param_offload": True, f"{AF}.optimizer_offload": True}
LORA = full(LORA)


def test_a_large_lora_run_on_fsdp1_does_not_fit_at_the_sync_unless_layered():
    cl = Cluster(source="spec", nodes=[ClusterNode(name="node0", gpu_count=8, gpus=[
        GPU(index=i, name="H100", memory_total_bytes=80 * GIB) for i in range(8)])])
    report, _ = estimate_memory(LORA, {"actor": Q32}, cl)
    sync = phase(report, "weight_sync")
    summon = sum(t.bytes for t in sync.terms if t.key == "sync_copy")
    assert gib(summon) == pytest.approx(4 * Q32.param_count / GIB, rel=0.001)  # 122 GiB of fp32 on every GPU
    assert memory_verdict(report, LORA, {"actor": Q32}, cl).word == DOES_NOT_FIT
    layered = {**LORA, f"{R}.layered_summon": True}
    report, _ = estimate_memory(layered, {"actor": Q32}, cl)
    assert not any(t.key == "sync_copy" for t in phase(report, "weight_sync").terms)
    assert memory_verdict(report, layered, {"actor": Q32}, cl).word != DOES_NOT_FIT


def test_fits_while_short_names_the_average_length():
    overrides, facts = recorded("grpo-1.5b-fsdp2-u0.5")
    # the campaign's grpo-1.5b-nogc-micro32 (not run for lack of device time): 32 samples per micro-batch, no
    # gradient checkpointing; the activations of 32 x 1,024 tokens overflow, 32 x ~950 do not (no-checkpointing
    # activations are live at the peak, not cached: grpo-0.5b-nogc-micro8 measured it)
    big = [*overrides, f"{A}.ppo_micro_batch_size_per_gpu=32", f"{A}.ppo_mini_batch_size=16",
           f"{M}.enable_gradient_checkpointing=false"]
    mp = memory_plan(load_schema(), big, moves=load_moves(), models={"actor": facts, "ref": facts}, cluster=h200())
    v = mp.verdict
    assert v.word == FITS_WHILE_SHORT and v.fits is False and v.cause == "actor_update"
    assert 880 <= v.fits_up_to_avg_tokens <= 1000
    # over memory at the configured lengths, said first: "FITS WHILE ... (43.3 GiB over)" read as FITS
    assert v.text() == ("over memory at the configured lengths; fits while samples average <= "
                        f"{v.fits_up_to_avg_tokens:,} tokens")


def test_engines_and_models_not_modelled_get_no_verdict_but_a_reason():
    mp, _ = plan("grpo-1.5b-fsdp2-u0.5", [f"{R}.name=sglang"])  # SGLang: modelled from its code (test_memory_sglang)
    assert mp.verdict.word is not None and mp.verdict.reason is None
    overrides, facts = recorded("grpo-1.5b-fsdp2-u0.5")
    vl = facts.model_copy(update={"architecture": "Qwen2_5_VLForConditionalGeneration", "model_type": "qwen2_5_vl"})
    mp = memory_plan(load_schema(), overrides, moves=load_moves(), models={"actor": vl, "ref": vl}, cluster=h200())
    assert mp.verdict.word is None and "vision-language" in mp.verdict.reason
    mp = memory_plan(load_schema(), [*overrides, f"{A}.strategy=veomni"], moves=load_moves(),
                     models={"actor": facts, "ref": facts}, cluster=h200())
    assert mp.verdict.word is None and "veomni" in mp.verdict.reason


def measured_peak_gib(name: str, phase_name: str) -> float:
    """The recorded NVML peak of one phase (the reading of the run the bench shares: tests/helpers/real_records.py)."""
    from tests.helpers.real_records import load_run

    return load_run(DATA / name).phases[phase_name].peak_mib * MIB / GIB


def test_fsdp1_param_offload_on_one_gpu_leaves_the_params_on_it_through_generation():
    # verl 0.9.1 measured: the weight sync loads the FSDP1 params back and nothing puts them away before the update
    mp, _ = plan("grpo-1.5b-fsdp1-offload-u0.1")
    values = {**mp.values, FLASH_ATTN: False}
    report, _ = estimate_memory(values, {"actor": recorded("grpo-1.5b-fsdp1-offload-u0.1")[1]}, h200())
    gen = phase(report, "generation")
    params = sum(t.bytes for t in gen.terms if t.key == "actor_params")
    assert gib(params) == pytest.approx(4 * 1_543_714_304 / GIB, rel=0.01)  # fp32 Qwen2.5-1.5B: 5.75 GiB
    assert gib(gen.total) == pytest.approx(measured_peak_gib("grpo-1.5b-fsdp1-offload-u0.1", "generation"), rel=0.05)
    # the reference pass comes after old_log_prob, whose offload does put them away
    assert not any(t.key == "actor_params" for t in phase(report, "ref_log_prob").terms)


@pytest.mark.parametrize("name", ["ppo-0.5b-critic-fsdp1-u0.06", "ppo-0.5b-critic-fsdp2-u0.06"])
def test_ppo_updates_on_one_gpu_keep_the_other_models_blocks_cached(name):
    overrides, facts = recorded(name)
    models = {"actor": facts, "ref": facts, "critic": facts}
    mp = memory_plan(load_schema(), overrides, moves=load_moves(), models=models, cluster=h200())
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    for name_phase in ("actor_update", "critic_update"):
        assert gib(phase(report, name_phase).total) == pytest.approx(measured_peak_gib(name, name_phase), rel=0.10)
    assert any(t.key == "allocator_critic" for t in phase(report, "actor_update").terms)


@pytest.fixture(scope="module")
def compared():
    """(phase rows, verdict) of every recorded run against the estimate, as bench/bench_memory_real.py prints them."""
    from tests.helpers.real_memory import rows_for
    from tests.helpers.real_records import load_runs

    return [rows_for(run) for run in load_runs(DATA)]


def test_every_run_alone_that_recorded_its_host_ram_is_within_10_percent_of_the_node_estimate():
    """host.jsonl (the node's used RAM once a second, less its first reading and the campaign's own tools) or Ray's
    kill report against the estimate's node total: the 14B LoRA run Ray killed, the 7B LoRA run with vLLM's level-1
    sleep copy, and a 1.5B PPO run whose peak is its processes (rank 0's read at start was over by then, not added
    to them)."""
    from tests.helpers.real_memory import host_row
    from tests.helpers.real_records import load_runs

    rows = {r["run"]: r for r in (host_row(run) for run in load_runs(DATA)) if r}
    assert {"advised-grpo-14b-1gpu", "advised-grpo-7b-full-1gpu-safetensors-h100",
            "advised-ppo-1.5b-critic-4096-h100"} <= set(rows)
    # over by 10.04 %, on the safe side: the second PPO run at 4,096 tokens (15.9 GiB measured, 17.5 estimated).
    # The advisor's later PPO choice read 21.0 GiB (-17 %) until the campaign's own make_models.py, writing the next
    # run's model beside its start (16 GiB), was taken out of the readings: 16.4 GiB (+6.9 %), as its siblings
    assert [(n, round(r["error"], 2)) for n, r in rows.items() if abs(r["error"]) > 0.10] == [
        ("advised-ppo-1.5b-critic-4096-h100-3", 0.10)]
    assert 0 < rows["advised-ppo-1.5b-critic-4096-h100-5"]["error"] < 0.10


def test_every_recorded_verdict_is_right(compared):
    judged = [verdict for _, verdict in compared]
    judged = [v for v in judged if v["right"] is not None]
    assert len(judged) >= 20
    assert [v["run"] for v in judged if not v["right"]] == []


@pytest.mark.parametrize("name", ["launch-smoke-0.5b-u0.06-dumps", "grpo-0.5b-fsdp2-offload-u0.06",
                                  "grpo-0.5b-lora32-fsdp2-u0.06", "grpo-3b-lora64-fsdp2-u0.1"])
def test_the_weight_sync_holds_verls_send_buffer_and_its_peak_matches_the_run(name):
    # the sync lasts 0.1-0.2 s: its measured peak is NVML's level before it plus the trainer's torch peak counter
    from tests.helpers.real_records import load_run

    mp, models = plan(name)
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    sync = phase(report, "weight_sync")
    bucket = sum(t.bytes for t in sync.terms if t.key == "sync_bucket")
    assert bucket == 2048 * MIB  # checkpoint_engine.update_weights_bucket_megabytes, allocated whole
    measured = load_run(DATA / name).phases["weight_sync"]
    predicted = sync.total - (0 if measured.step >= 1 else sum(t.bytes for t in sync.terms if t.key == "actor_adam"))
    assert gib(predicted) == pytest.approx(measured.peak_mib * MIB / GIB, rel=0.10)
    # the buffer is the configured size (1024 still holds the fp32 embedding whole, which verl needs to use it)
    mp2, _ = plan(name, ["actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=1024"])
    report2, _ = estimate_memory({**mp2.values, FLASH_ATTN: False}, models, h200())
    assert sync.total - phase(report2, "weight_sync").total == (2048 - 1024) * MIB


def test_a_smaller_send_buffer_is_offered_only_where_verl_can_use_it():
    # the buffer must hold the largest weight at the trainer's dtype (verl's direct path otherwise), and LoRA's
    # first sync sends CPU tensors that path cannot take
    from wizard.core.advice.moves import moves_for

    def offered(values, facts, smaller=True):
        return [dict(m.changes)[key] for m in moves_for(values, {"actor": facts}, None, None, (), ())
                for key in [f"{R}.checkpoint_engine.update_weights_bucket_megabytes"] if key in dict(m.changes)
                and (dict(m.changes)[key] < 2048) == smaller]

    mp, models = plan("launch-smoke-0.5b-u0.06-dumps")  # FSDP1, fp32 embedding of Qwen2.5-0.5B: 519 MiB
    assert offered(mp.values, models["actor"]) == [1024]
    assert offered({**LORA, f"{M}.lora_rank": 0}, Q32) == []  # Qwen2.5-32B's fp32 lm_head: 2,970 MiB
    assert offered(LORA, Q32) == [] and offered({**mp.values, f"{M}.lora_rank": 32}, models["actor"]) == []
    # and LoRA on it would send that lm_head through the buffer at the first sync: the LoRA move has vLLM load the
    # base weights instead, and raises no buffer
    assert offered({**LORA, f"{M}.lora_rank": 0}, Q32, smaller=False) == []
    lora = next(m for m in moves_for({**LORA, f"{M}.lora_rank": 0}, {"actor": Q32}, None, None, (), ())
                if "LoRA" in m.name)
    assert dict(lora.changes)[f"{R}.load_format"] == "safetensors"


def test_a_critic_with_param_offload_starts_on_the_gpu_and_leaves_no_cache_behind():
    name = "ppo-0.5b-critic-fsdp1-offload-u0.06"
    overrides, facts = recorded(name)
    models = {"actor": facts, "ref": facts, "critic": facts}
    mp = memory_plan(load_schema(), overrides, moves=load_moves(), models=models, cluster=h200())
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    # FSDP1 on one GPU: the critic's params are there when vLLM starts, offload or not
    assert any(t.key == "critic_params" for t in phase(report, "load").terms)
    assert gib(phase(report, "load").total) == pytest.approx(measured_peak_gib(name, "load"), rel=0.10)
    # putting its params away empties the allocator: the actor's update does not find the critic's blocks cached
    update = phase(report, "actor_update")
    assert not any(t.key == "allocator_critic" for t in update.terms)
    assert gib(update.total) == pytest.approx(measured_peak_gib(name, "actor_update"), rel=0.10)


def test_without_checkpointing_the_activations_are_live_at_the_peak_not_cached():
    name = "grpo-0.5b-nogc-micro8-u0.06"
    mp, models = plan(name)
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    update = phase(report, "actor_update")
    terms = {t.key: t.bytes for t in update.terms}
    assert terms["activations"] > terms["allocator"]  # every layer's activations, and a cache without them
    assert gib(update.total) == pytest.approx(measured_peak_gib(name, "actor_update"), rel=0.10)


def test_fsdp2_param_offload_streams_the_sync_from_the_cpu_except_with_lora():
    # measured: torch's counter stays at 0 through the sync of grpo-0.5b-fsdp2-offload; verl stages LoRA models on
    # the GPU for it (get_per_tensor_param: _skip_staging = fsdp_version == 2 and not _is_peft)
    mp, models = plan("grpo-0.5b-fsdp2-offload-u0.06")
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    assert not any(t.key == "actor_params" for t in phase(report, "weight_sync").terms)
    mp, models = plan("grpo-0.5b-lora32-fsdp2-u0.06", [f"{AF}.param_offload=true", f"{AF}.optimizer_offload=true"])
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    assert any(t.key == "actor_params" for t in phase(report, "weight_sync").terms)


def test_fsdp1_reference_pass_on_one_gpu_holds_the_whole_model_in_bf16():
    # verl H200, Qwen2.5-1.5B, FSDP1 on one GPU: the reference pass peaked 2.62 GiB over the old log-prob pass
    # (30.05 against 27.43 GiB used); the model's bf16 weights are 2.87 GiB
    mp, models = plan("grpo-1.5b-fsdp1-u0.1")
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    ref, old = phase(report, "ref_log_prob"), phase(report, "old_log_prob")
    whole = next(t for t in ref.terms if t.key == "fsdp_gather")
    assert whole.bytes == 2 * models["actor"].param_count and "whole" in whole.label
    assert gib(ref.total) == pytest.approx(30.05, rel=0.05)
    assert ref.total > old.total
    # FSDP2 (and FSDP1 over several GPUs) gathers a layer at a time
    mp2, _ = plan("grpo-1.5b-fsdp2-u0.5")
    gather = next(t for t in phase(mp2.report, "ref_log_prob").terms if t.key == "fsdp_gather")
    assert gather.bytes < whole.bytes / 4


@pytest.mark.parametrize("name,measured", [("grpo-1.5b-fsdp1-u0.1", 43.06), ("grpo-1.5b-fsdp1-offload-u0.1", 42.32),
                                           ("grpo-0.5b-fsdp1-u0.06", 21.60)])
def test_fsdp1_update_keeps_about_its_params_more_cached_than_fsdp2(name, measured):
    # torch's peak allocation in the update was the same for FSDP1 and FSDP2 (30.27 GiB at 1.5B), NVML's was not
    mp, models = plan(name)
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    upd = phase(report, "actor_update")
    cache = next(t for t in upd.terms if t.key == "allocator_fsdp1")
    params = next(t for t in upd.terms if t.key == "actor_params")
    assert cache.bytes == params.bytes
    assert gib(upd.total) == pytest.approx(measured, rel=0.10)
    fsdp2, _ = plan(name, [f"{A}.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2"])
    assert not any(t.key == "allocator_fsdp1" for t in phase(fsdp2.report, "actor_update").terms)


def test_a_critic_with_param_offload_empties_fsdp1s_cache_before_the_actor_update():
    mp, models = plan("ppo-0.5b-critic-fsdp1-offload-u0.06")
    models = {**models, "critic": models["actor"]}
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    assert not any(t.key == "allocator_fsdp1" for t in phase(report, "actor_update").terms)


def test_the_first_weight_sync_of_fsdp1_with_offload_also_holds_the_reference():
    # verl H200, Qwen2.5-3B, FSDP1 with param+optimizer offload on one GPU: 37.65 GiB allocated at the first sync
    # (actor + reference + the params loaded again + the send buffer), 46.5 GiB used with vLLM's weights awake
    mp, models = plan("grpo-3b-fsdp1-offload-u0.1")
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    sync = phase(report, "weight_sync")
    ref = next(t for t in sync.terms if t.key == "ref_params")
    assert "first reference pass" in ref.label
    assert gib(sync.total) == pytest.approx(46.50, rel=0.05)
    # without offload the later syncs, with AdamW's moments, are the higher ones: the reference is not counted
    plain, _ = plan("grpo-1.5b-fsdp1-u0.1")
    assert not any(t.key == "ref_params" for t in phase(plain.report, "weight_sync").terms)


def test_recorded_phase_peaks_stay_within_the_bench_tolerance(compared):
    # what the issue asks of the estimate: every recorded phase within 10 % (15 % end to end)
    rows = [r for phase_rows, _ in compared for r in phase_rows if r["error"] is not None]
    assert len(rows) >= 140
    outside = {(r["run"], r["phase"]): round(r["error"], 2) for r in rows if not r["within"]}
    assert outside == {}, outside


def test_the_sdpa_mask_of_a_long_packed_log_prob_pass_is_its_peak_with_the_fused_head(compared):
    # verl H100, the advised 1.5B PPO run at 4,096 tokens with the fused head and log-prob micro-batches of 16
    # (55,000 packed tokens, no flash-attn): 59.4 GiB in its old log-prob pass, 18.6 GiB over the estimate without
    # the mask (the layer's activations its only transient), and the critic's and actor's updates after it kept the
    # blocks (66.0 and 72.7 GiB): each now within 10 % of the worst case (65,536 tokens)
    rows = {(r["run"], r["phase"]): r for phase_rows, _ in compared for r in phase_rows}
    run = "advised-ppo-1.5b-critic-4096-h100-3"
    for name in ("old_log_prob", "critic_update", "actor_update"):
        assert rows[(run, name)]["within"], rows[(run, name)]
    mp, models = plan(run)
    models = {**models, "critic": models["actor"]}
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, h200())
    old = {t.key: t for t in phase(report, "old_log_prob").terms}
    assert "65,536 tokens" in old["sdpa_mask"].label and "logits" not in old
    assert gib(old["sdpa_mask"].bytes + old["sdpa_mask_bias"].bytes) == pytest.approx(24.0, rel=0.01)
    assert any(t.key == "allocator_logprob_mask" for t in phase(report, "actor_update").terms)
    # its first run at 4,096 tokens had micro-batches of 4 (16,384 tokens) and no fused head: the logits, 4.6 GiB,
    # are that pass's moment, the mask (1.5 GiB with the layer's bias) is not counted beside them
    first, _ = plan("advised-ppo-1.5b-critic-4096-h100")
    report, _ = estimate_memory({**first.values, FLASH_ATTN: False}, models, h200())
    keys = {t.key for t in phase(report, "old_log_prob").terms}
    assert "logits" in keys and "sdpa_mask" not in keys


def test_an_fsdp1_plan_that_does_not_fit_one_gpu_is_offered_fsdp2_with_its_peak():
    # the 1.5B FSDP1 run's update: 43.06 GiB measured, 5.3-6.1 GiB of it FSDP1's cache; on a 40 GB A100 it does not
    # fit, and FSDP2 alone is among the advisor's alternatives with the peak it would have (the FSDP2 run of this
    # config: 37.58 GiB)
    from wizard.core.advice import advise

    mp, models = plan("grpo-1.5b-fsdp1-u0.1")
    cl = Cluster(source="spec", nodes=[ClusterNode(name="node0", gpu_count=1, gpus=[
        GPU(index=0, name="NVIDIA A100-SXM4-40GB", memory_total_bytes=40960 * MIB)])])
    values = {**mp.values, FLASH_ATTN: False}
    report, _ = estimate_memory(values, models, cl)
    group = report.groups[0]
    assert group.peak.total > group.capacity_bytes and group.peak.name == "actor_update"
    fsdp2 = {f"{A}.strategy": "fsdp2", "actor_rollout_ref.ref.strategy": "fsdp2"}
    report2, _ = estimate_memory({**values, **fsdp2}, models, cl)
    assert gib(report2.groups[0].peak.total) == pytest.approx(37.58, rel=0.03)
    # within the margin of 40 GiB alone; the advisor offers it with a smaller micro-batch, without offload
    advice = advise(values, models, cl, limit=10)
    alt = next(a for a in advice.alternatives if "FSDP1 -> FSDP2" in a.text)
    assert alt.fits and fsdp2.items() <= alt.changes.items() and not any("offload" in k for k in alt.changes)
    assert alt.peak_bytes < report2.groups[0].peak.total


def test_sglang_s_own_log_lines_match_the_estimate_s_terms():
    # SGLang 0.5.12 on an H100 (bench/data/verl_real/sgl-*): what it logged it found free before loading, the KV pool
    # it made (tokens) and its CUDA graphs, against the estimate's terms for the same plan
    from tests.helpers.real_memory import sglang_rows
    from tests.helpers.real_records import load_runs

    rows = [r for run in load_runs(DATA) if run.name.startswith("sgl-") for r in sglang_rows(run)]
    by_term = {}
    for r in rows:
        by_term.setdefault(r["term"], []).append(r)
    assert len(by_term["KV pool (tokens)"]) >= 3
    # the graphs: SGLang's own reserve for the decode graphs (2 MB a captured batch size) is 0.1-0.15 GiB above what
    # it logged (1.4 MB a size, its triton buffers apart), which the estimate keeps: an over-count of 15-17 % here
    # what was free at start: the trainer's load state without the allocator cache verl empties before the engines
    # start (with it, -1.2 % at 1.5B and -2.2 % at 3B); the KV pool is a fraction of it
    tolerance = {"KV pool (tokens)": 0.02, "free at start (GiB)": 0.01, "weights (GiB)": 0.10, "graphs (GiB)": 0.20}
    off = [(r["run"], r["term"], r["logged"], r["predicted"]) for r in rows if abs(r["error"]) > tolerance[r["term"]]]
    assert off == []


# -- host RAM (Ray's memory monitor kills the run's workers past 95 % of the node's memory) -----------------------

RAY_TOP = r"^\d+\s+([\d.]+)\s+(ray::WorkerDict\S*|VLLM::Worker)$"


def host_node(gib_ram=125):
    cl = h200()
    cl.nodes[0].memory_bytes = gib_ram * GIB  # the device's host RAM (Ray: "125.85GB limit")
    return cl


def test_the_14b_lora_run_ray_killed_for_host_memory_is_over_the_limit_with_its_processes_sizes():
    """advised-grpo-14b-1gpu (H200, 2026-12-06): LoRA 32 on Qwen2.5-14B, vLLM from dummy weights. At the first weight
    sync Ray killed the workers ("120.86GB used / 125.85GB limit"); its report sized the trainer at 56.00 GiB (the
    base model gathered on the CPU in fp32) and the vLLM worker at 52.25 (its level-1 sleep's pinned copy of the
    weights, 27.85 GiB rounded up to powers of two). The estimate said 98.5 GiB and FITS before."""
    import gzip
    import re

    name = "advised-grpo-14b-1gpu"
    log = gzip.decompress((DATA / name / "run.log.gz").read_bytes()).decode()
    ray = {m.group(2).split(".")[0]: float(m.group(1)) for m in re.finditer(RAY_TOP, log, re.M)}
    assert json.loads((DATA / name / "record.json").read_text())["status"] == "host_oom"
    overrides, facts = recorded(name)
    mp = memory_plan(load_schema(), overrides, moves=load_moves(), models={"actor": facts, "ref": facts},
                     cluster=host_node())
    host = mp.report.host[0]
    terms = {t.key: t.bytes / GIB for t in host.terms}
    assert terms["host_lora_base_sync"] + terms["host_trainer"] == pytest.approx(ray["ray::WorkerDict"], rel=0.05)
    assert terms["host_engine_sleep"] + terms["host_engine"] == pytest.approx(ray["VLLM::Worker"], rel=0.05)
    assert host.over and host.total > 0.95 * 125 * GIB
    assert memory_verdict(mp.report, mp.values, mp.models, mp.cluster).word == DOES_NOT_FIT
    found = check_overrides(load_schema(), overrides, moves=load_moves(), models={"actor": facts, "ref": facts},
                            cluster=host_node(), advise=False).findings
    (f,) = [f for f in found if f.rule == "memory.host"]
    assert f.severity.value == "error" and "needs about 122 GiB of host memory of 125 GiB (Ray kills workers at 95 %, 119 GiB)" in f.message


def test_with_vllm_loading_the_base_weights_the_14b_lora_run_fits_the_host():
    """The same run with rollout.load_format=safetensors (verl's LoRA guide): no gather of the base model at the
    first sync; rank 0's read at start is gone before vLLM sleeps, so the node needs the larger of the two."""
    overrides, facts = recorded("advised-grpo-14b-1gpu")
    mp = memory_plan(load_schema(), [*overrides, f"{R}.load_format=safetensors"], moves=load_moves(),
                     models={"actor": facts, "ref": facts}, cluster=host_node())
    host = mp.report.host[0]
    keys = {t.key for t in host.terms}
    assert "host_lora_base_sync" not in keys and {"host_init", "host_engine_sleep"} <= keys
    assert not host.over and host.total < 80 * GIB


def test_the_advisor_has_vllm_load_the_base_for_a_lora_plan_the_host_cannot_hold():
    """The 14B LoRA plan as it ran, over the host limit: the advisor's first fix is the load format (tuning: the
    same training), and it fits."""
    from wizard.core.advice import advise

    overrides, facts = recorded("advised-grpo-14b-1gpu")
    models = {"actor": facts, "ref": facts}
    mp = memory_plan(load_schema(), overrides, moves=load_moves(), models=models, cluster=host_node())
    best = advise({**mp.values, FLASH_ATTN: False}, models, mp.cluster).best
    assert best is not None and best.fits and f"{R}.load_format=safetensors" in best.overrides
    assert "rollout.load_format dummy -> safetensors" in best.text
