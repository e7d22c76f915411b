"""What the step time's ``attention over the SDPA mask`` term rests on, checked against the transformers verl 0.9.1
installs: verl's trainer hands the model a micro-batch packed into one row (attention_mask None, position_ids
restarting at each sequence; ``workers/engine/fsdp/transformer_impl.py``), and with attn_implementation=sdpa
transformers turns that into one (T x T) boolean mask over the whole row (not causal-only, so torch cannot skip the
masked pairs), while the same sequences as separate rows get a causal attention per row. And the probe that times it
on the lent GPU (bench/real/attn_probe.py) runs end to end on the CPU, its report read back."""

import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import ROOT, need_verl


def _sdpa_calls(position_ids, rows: int = 1):
    import torch
    import transformers.integrations.sdpa_attention as sdpa
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2)
    cfg._attn_implementation = "sdpa"
    model = Qwen2ForCausalLM(cfg).eval()
    calls, real = [], sdpa.torch.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kw):
        calls.append((tuple(q.shape), None if attn_mask is None else (tuple(attn_mask.shape), attn_mask.dtype), is_causal))
        return real(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kw)

    sdpa.torch.nn.functional.scaled_dot_product_attention = spy
    try:
        ids = torch.randint(0, 128, tuple(position_ids.shape))
        with torch.no_grad():
            model(input_ids=ids, attention_mask=None, position_ids=position_ids, use_cache=False)
    finally:
        sdpa.torch.nn.functional.scaled_dot_product_attention = real
    return calls


@pytest.mark.verl
def test_a_packed_micro_batch_reaches_sdpa_as_one_mask_over_all_its_tokens():
    need_verl()
    import torch

    packed = torch.cat([torch.arange(10), torch.arange(20), torch.arange(5)]).unsqueeze(0)  # verl's (1, total) row
    [(q, mask, causal)] = _sdpa_calls(packed)
    assert mask is not None and mask[0][-2:] == (35, 35) and mask[1] == torch.bool and causal is False
    [(q, mask, causal)] = _sdpa_calls(torch.arange(12).repeat(3, 1))  # the same kind of tokens as separate rows
    assert mask is None and causal is True  # causal within each row: the masked half is skipped


@pytest.mark.verl
def test_the_probe_runs_and_its_report_reads_it(tmp_path):
    need_verl()
    out = tmp_path / "probe.jsonl"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "real" / "attn_probe.py"), str(out), "--tiny"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    spec = importlib.util.spec_from_file_location("bench_attention_probe", ROOT / "bench" / "bench_attention_probe.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = bench.per_layer(bench.rows([out]), "forward")
    assert {r["T"] for r in table} == {64, 128} and all(r["layer_s"] is not None for r in table)
    assert any(r["kind"] == "kernels" for r in bench.rows([out]))
