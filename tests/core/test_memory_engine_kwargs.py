"""rollout.engine_kwargs in the memory estimate: kv_cache_memory_bytes pins vLLM's KV cache, the engine's own memory
arguments replace verl's (verl passes them last), and the ones the estimate does not model are named in a finding.

vLLM (0.24, as verl 0.9.1 pins it), ``Worker.determine_available_memory``: with ``cache_config.kv_cache_memory_bytes``
set it runs the profile and returns that number ("reserved ... GiB memory for KV Cache as specified by
kv_cache_memory_bytes config and skipped memory profiling. This does not respect the gpu_memory_utilization
config"), so the KV cache is exactly it and weights, activations, non-torch memory and CUDA graphs come on top;
``init_device`` still refuses to start when free memory < gpu_memory_utilization x total.
"""

from __future__ import annotations

from tests.core.test_memory import P7, Q7, R, cluster, phase, report, term
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.check.verdict import check_overrides
from wizard.core.memory.terms import CONSTANTS as C
from wizard.core.memory.terms import GIB

PIN = f"{R}.engine_kwargs"


def pinned(kv_bytes: int, **vllm) -> dict:
    return {PIN: {"vllm": {"kv_cache_memory_bytes": kv_bytes, **vllm}, "sglang": {}, "trtllm": {}}}


def vllm_footprint(kv_bytes: int) -> float:
    """What vLLM holds with the KV cache pinned, for BASE (Qwen2.5-7B, TP 2, 8192 batched tokens, 256 sequences,
    CUDA graphs on): bf16 weights over TP + the profile run's activations + non-torch (TP > 1) + graph pool + KV."""
    weights = 2 * P7 / 2
    act = 8192 * (7 * 18944 / 2 + 10 * 3584) + 256 * 152064 * 4
    return weights + act + C.vllm_non_torch_tp + C.cuda_graphs + kv_bytes


def test_kv_cache_memory_bytes_is_the_kv_cache_and_the_engine_holds_exactly_it_on_top_of_its_fixed_memory():
    kv = 12 * GIB
    rep = report(pinned(kv))
    assert rep.kv["rollout"].kv_bytes == kv and rep.kv["rollout"].pinned
    assert rep.kv["rollout"].tokens == kv // (2 * 28 * 2 * 128 * 2)  # per replica; 2 of the 4 KV heads per rank
    gen = phase(rep, "generation")
    assert abs(term(gen, "engine_rollout") - vllm_footprint(kv)) <= 1
    assert "pinned" in next(t.label for t in gen.terms if t.key == "engine_rollout")


def test_the_generation_phase_moves_by_the_pin_minus_the_kv_cache_the_utilisation_gave():
    free = report()
    unpinned_kv = free.kv["rollout"].kv_bytes
    for delta in (-5 * GIB, 3 * GIB):
        rep = report(pinned(unpinned_kv + delta))
        assert abs(phase(rep, "generation").total - phase(free, "generation").total - delta) <= 2
        assert rep.kv["rollout"].kv_bytes == unpinned_kv + delta


def test_with_a_pin_the_utilisation_no_longer_sizes_the_engine():
    low, high = report({**pinned(8 * GIB), f"{R}.gpu_memory_utilization": 0.3}), report(
        {**pinned(8 * GIB), f"{R}.gpu_memory_utilization": 0.8})
    assert term(phase(low, "generation"), "engine_rollout") == term(phase(high, "generation"), "engine_rollout")


def test_a_pin_larger_than_the_gpu_turns_the_verdict():
    assert report(pinned(10 * GIB)).fits is True
    assert report(pinned(70 * GIB)).fits is False


def test_engine_kwargs_replace_verls_own_memory_arguments():
    rep = report({PIN: {"vllm": {"gpu_memory_utilization": 0.4}, "sglang": {}, "trtllm": {}}})
    assert term(phase(rep, "generation"), "engine_rollout") == int(0.4 * (80 * GIB - C.driver_reserved))


def _check(*overrides: str):
    cl = cluster(per_node=8, gib=80)
    return check_overrides(load_schema(), ["algorithm.adv_estimator=grpo", f"{R}.name=vllm",
                                           "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct", *overrides],
                           moves=load_moves(), models={"actor": Q7, "ref": Q7}, cluster=cl)


def test_a_plus_key_on_the_command_line_reaches_the_estimate():
    res = _check(f"+{PIN}.vllm.kv_cache_memory_bytes={9 * GIB}")
    assert res.memory.judged.kv["rollout"].kv_bytes == 9 * GIB


def test_an_engine_kwarg_that_sizes_memory_but_is_not_modelled_is_named_in_a_finding():
    res = _check(f"+{PIN}.vllm.kv_cache_dtype=fp8", f"+{PIN}.vllm.cpu_offload_gb=4")
    found = [f for f in res.findings if f.rule == "memory.engine_kwargs_unread"]
    assert len(found) == 1
    assert f"{PIN}.vllm.kv_cache_dtype=fp8" in found[0].message and "cpu_offload_gb=4" in found[0].message
    assert found[0].keys == [f"{PIN}.vllm.kv_cache_dtype", f"{PIN}.vllm.cpu_offload_gb"]
    assert not [f for f in _check().findings if f.rule == "memory.engine_kwargs_unread"]


def test_sglang_kwargs_are_named_when_sglang_runs():
    res = _check(f"{R}.name=sglang", f"+{PIN}.sglang.kv_cache_dtype=fp8_e4m3")
    assert any(f.rule == "memory.engine_kwargs_unread" and "kv_cache_dtype=fp8_e4m3" in f.message
               for f in res.findings)
    # the token cap, the prefill chunk and the graphs' batch size are read (tests/core/test_memory_sglang.py)
    res = _check(f"{R}.name=sglang", f"+{PIN}.sglang.max_total_tokens=65536")
    assert not [f for f in res.findings if f.rule == "memory.engine_kwargs_unread"]
