"""Rollout engine settings the engine refuses are errors, and the memory estimate does not size an engine that never
starts: a memory fraction outside (0, 1] (vLLM's CacheConfig: gpu_memory_utilization gt=0, le=1; SGLang does not
check it and fails sizing its pool), a fraction that is not a number (SGLang gets engine_kwargs.sglang as they are,
after verl's own arguments), and engine_kwargs.vllm.kv_cache_memory_bytes as vLLM's human_readable_int reads the
text verl passes it (10G = 10 GiB, 10g = 10^10 bytes; '10000000000.0' from a float is refused; 0 means unset)."""

from __future__ import annotations

import pytest

from tests.core.test_memory import BASE, Q7, R, cluster
from tests.helpers.memory_values import full
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.check.verdict import check_overrides
from wizard.core.findings import Severity
from wizard.core.memory.estimate import estimate_memory
from wizard.core.memory.terms import GIB

EK = f"{R}.engine_kwargs"
KV = f"{EK}.vllm.kv_cache_memory_bytes"
MFS = f"{EK}.sglang.mem_fraction_static"


def _check(engine: str, *overrides: str):
    return check_overrides(load_schema(), ["algorithm.adv_estimator=grpo", f"{R}.name={engine}",
                                           "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct", *overrides],
                           moves=load_moves(), models={"actor": Q7, "ref": Q7}, cluster=cluster(per_node=8, gib=80))


def _errors(res, rule: str):
    return [f for f in res.findings if f.rule == rule and f.severity is Severity.ERROR]


def _estimate(engine: str, **values):
    return estimate_memory(full({**BASE, f"{R}.name": engine, **values}), {"actor": Q7}, cluster())


@pytest.mark.parametrize("text,gib", [("100G", 100), ("10G", 10), ("1T", 1024)])
def test_kv_cache_memory_bytes_with_a_binary_suffix_is_read_as_vllm_reads_it(text, gib):
    res = _check("vllm", f"+{KV}={text}")
    assert res.memory.judged.kv["rollout"].kv_bytes == gib * GIB
    assert not _errors(res, "rollout.kv_cache_memory_bytes")
    assert not [f for f in res.findings if f.rule == "memory.engine_kwargs_unread"]


def test_a_100g_kv_cache_does_not_fit_an_80gb_gpu():
    res = _check("vllm", f"+{KV}=100G")
    assert res.memory.verdict.fits is False


def test_a_lowercase_suffix_is_a_power_of_1000():
    assert _check("vllm", f"+{KV}=10g").memory.judged.kv["rollout"].kv_bytes == 10**10


def test_a_float_kv_cache_memory_bytes_is_an_error_vllm_will_not_start_with_and_the_fix_is_the_whole_number():
    res = _check("vllm", f"+{KV}=1e10")
    (err,) = _errors(res, "rollout.kv_cache_memory_bytes")
    assert "'10000000000.0'" in err.message and "invalid human_readable_int value" in err.message
    assert err.fix_overrides == [f"++{KV}=10000000000"]
    assert res.memory.judged is None and res.memory.verdict.fits is None


@pytest.mark.parametrize("text", ["abc", "1GiB", "1.5G"])
def test_kv_cache_memory_bytes_vllm_does_not_parse_is_an_error_not_a_note(text):
    res = _check("vllm", f"+{KV}={text}")
    (err,) = _errors(res, "rollout.kv_cache_memory_bytes")
    assert repr(text) in err.message and "--kv-cache-memory-bytes" in err.message
    assert not [f for f in res.findings if f.rule == "memory.engine_kwargs_unread"]
    assert res.memory.judged is None


def test_a_negative_kv_cache_memory_bytes_says_what_vllm_does_and_not_whole_number():
    res = _check("vllm", f"+{KV}=-5")
    (err,) = _errors(res, "rollout.kv_cache_memory_bytes")
    assert "No available memory for the cache blocks" in err.message
    assert "whole number" not in err.message
    assert not any("not a whole number" in f.message for f in res.findings)


def test_zero_kv_cache_memory_bytes_is_vllms_unset_a_note_and_the_utilisation_sizes_the_kv_cache():
    res = _check("vllm", f"+{KV}=0")
    assert not _errors(res, "rollout.kv_cache_memory_bytes")
    (note,) = [f for f in res.findings if f.rule == "memory.kv_cache_memory_bytes_unset"]
    assert "unset" in note.message and "gpu_memory_utilization=0.5" in note.message
    assert not any("not a whole number" in f.message for f in res.findings)
    assert res.memory.judged.kv["rollout"].pinned is False and res.memory.judged.kv["rollout"].kv_bytes > 0


@pytest.mark.parametrize("value,said", [(1.5, "Input should be less than or equal to 1"),
                                        (0, "Input should be greater than 0"),
                                        (-0.5, "Input should be greater than 0")])
def test_a_vllm_utilisation_outside_0_1_is_the_error_vllm_gives_and_no_memory_story(value, said):
    res = _check("vllm", f"{R}.gpu_memory_utilization={value}")
    (err,) = _errors(res, "rollout.memory_fraction_out_of_range")
    assert f"gpu_memory_utilization={value}" in err.message and "(0, 1]" in err.fix
    assert said in err.message and "CacheConfig" in err.message
    assert err.fix_overrides == [f"{R}.gpu_memory_utilization=0.5"]
    assert not [f for f in res.findings if f.rule.startswith("memory.") and f.severity is Severity.ERROR]
    assert res.memory.judged is None and "not estimated" in res.memory.verdict.reason


@pytest.mark.parametrize("value", [1.5, 0, -0.5])
def test_the_estimate_is_not_made_for_an_out_of_range_fraction(value):
    for engine in ("vllm", "sglang"):
        rep, why = _estimate(engine, **{f"{R}.gpu_memory_utilization": value})
        assert rep is None and f"gpu_memory_utilization={value}" in why


@pytest.mark.parametrize("value", [-0.2, 1.5])
def test_an_sglang_mem_fraction_static_outside_0_1_is_an_error_without_negative_sizes(value):
    res = _check("sglang", f"+{MFS}={value}")
    (err,) = _errors(res, "rollout.memory_fraction_out_of_range")
    assert f"mem_fraction_static={value}" in err.message and "(0, 1]" in err.fix
    assert res.memory.judged is None
    assert not [f for f in res.findings if f.rule == "memory.kv_cache"]


def test_a_string_sglang_mem_fraction_static_is_an_error():
    res = _check("sglang", f"+{MFS}=abc")
    (err,) = _errors(res, "rollout.memory_fraction_not_a_fraction")
    assert "'abc'" in err.message and "SGLang" in err.message
    assert err.fix_overrides == [f"++{MFS}=0.5"]
    assert res.memory.verdict.fits is None


def test_a_valid_sglang_mem_fraction_static_stays_modelled():
    res = _check("sglang", f"+{MFS}=0.85")
    assert not _errors(res, "rollout.memory_fraction_out_of_range")
    assert not _errors(res, "rollout.memory_fraction_not_a_fraction")
    assert res.memory.judged is not None


def test_text_where_verl_needs_a_number_gets_no_memory_verdict():
    """gpu_memory_utilization=abc: types.value reports it; the estimate is not made with the default in its place
    (it said FITS: 47.3 of 79.6 GiB next to the error)."""
    res = _check("vllm", f"{R}.gpu_memory_utilization=abc")
    assert res.memory.report is None and any(f.rule == "types.value" for f in res.findings)
    assert "gpu_memory_utilization='abc' is not a number" in (res.memory.estimate_why or "")
    assert _check("vllm", f"{R}.gpu_memory_utilization=0.5").memory.report is not None


def test_a_kv_cache_pinned_too_small_is_fixed_on_that_key_not_by_the_advisor():
    """kv_cache_memory_bytes=10K: the fix raises the pinned size (or removes it); the advisor's 'nothing fits, not
    even on 512 GPUs' was the answer before."""
    res = _check("vllm", f"+{KV}=10K")
    [f] = [f for f in res.findings if f.rule == "memory.kv_cache"]
    assert KV in f.keys and f.fix.startswith(f"Raise {KV} to at least ") and "or remove it" in f.fix
    assert len(f.fix_overrides) == 1 and f.fix_overrides[0].startswith(f"++{KV}=")
    again = _check("vllm", f"+{KV}=10K", *f.fix_overrides)
    assert not [g for g in again.findings if g.rule.startswith("memory.") and g.severity is Severity.ERROR]
