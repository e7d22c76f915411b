"""The estimate's SGLang terms against SGLang's own code: runs sglang 0.5.12's functions (taken from its wheel's
source with ``ast``, on stand-ins for the objects they read) beside ``wizard.core.memory.terms`` and prints both.

SGLang cannot be installed here (it needs CUDA kernels), so its functions run on their own: server_args.py's
``_handle_gpu_memory_settings`` (chunked_prefill_size, cuda_graph_max_bs and the capture lists by GPU memory),
cuda_graph_runner.py's ``get_batch_sizes_to_capture`` (cut at max_running_requests),
model_runner_kv_cache_mixin.py's ``_profile_available_bytes`` and ``_resolve_max_num_reqs``, and
pool_configurator.py's ``DefaultPoolConfigurator`` cell size and pool size. Get the source with

    cd /tmp && python3 -m pip download --no-deps sglang==0.5.12 && unzip -q sglang-0.5.12-*.whl -d sglang-src
    .venv/bin/python bench/bench_sglang_terms.py /tmp/sglang-src/sglang/srt

It prints one line per case and "mismatches: N"; exit status 1 when any term differs.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wizard.core.memory.sglang import SglangArgs, sglang_gpu_defaults, sglang_memory  # noqa: E402
from wizard.core.memory.terms import CONSTANTS as C, GIB  # noqa: E402
from tests.helpers.hf_configs import QWEN25_05B, QWEN25_7B  # noqa: E402
from wizard.core.models.facts import ModelFacts, facts_from_hf_config  # noqa: E402

MIB = 1 << 20
Q7 = facts_from_hf_config(QWEN25_7B, name="Qwen/Qwen2.5-7B-Instruct", source="config")
Q05 = facts_from_hf_config(QWEN25_05B, name="Qwen/Qwen2.5-0.5B-Instruct", source="config")
GPUS = {"T4": 15_360, "A10": 23_028, "A100-40GB": 40_960, "H100": 81_559, "H200": 143_771, "B200": 183_359}


def functions(path: Path, names: set[str], glb: dict) -> dict:
    """The named top-level functions or methods of ``path``, compiled on their own with ``glb`` as globals."""
    tree = ast.parse(path.read_text())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names and node.name not in found:
            node.decorator_list = []
            module = ast.Module(body=[node], type_ignores=[])
            ns = dict(glb)
            exec(compile(ast.fix_missing_locations(module), str(path), "exec"), ns)
            found[node.name] = ns[node.name]
    missing = names - set(found)
    if missing:
        raise SystemExit(f"not found in {path}: {', '.join(sorted(missing))}")
    return found


def sglang_settings(srt: Path, gpu_mib: float, tp: int) -> SimpleNamespace:
    """ServerArgs after SGLang's own _handle_gpu_memory_settings, as verl sets it (mem_fraction_static given)."""
    fns = functions(srt / "server_args.py", {"_handle_gpu_memory_settings", "_generate_cuda_graph_batch_sizes",
                                               "_generate_piecewise_cuda_graph_tokens"},
                    {"envs": SimpleNamespace(SGLANG_SYMM_MEM_PREALLOC_GB_SIZE=None), "logger": None})
    s = SimpleNamespace(chunked_prefill_size=None, cuda_graph_max_bs=None, tp_size=tp, pp_size=1, device="cuda",
                        cuda_graph_bs=None, disable_cuda_graph_padding=False, speculative_algorithm=None,
                        piecewise_cuda_graph_max_tokens=None, max_total_tokens=None, model_path="Qwen/Qwen2.5-7B",
                        piecewise_cuda_graph_tokens=None, mem_fraction_static=0.5, enable_symm_mem=False,
                        use_mla_backend=lambda: False)
    s._generate_cuda_graph_batch_sizes = lambda: fns["_generate_cuda_graph_batch_sizes"](s)
    s._generate_piecewise_cuda_graph_tokens = lambda: fns["_generate_piecewise_cuda_graph_tokens"](s)
    fns["_handle_gpu_memory_settings"](s, gpu_mib)
    return s


def captured(srt: Path, settings: SimpleNamespace, max_running: int) -> list[int]:
    fn = functions(srt / "model_executor" / "cuda_graph_runner.py", {"get_batch_sizes_to_capture"}, {
        "require_gathered_buffer": lambda a: False, "get_attention_tp_size": lambda: 1,
        "get_attention_cp_size": lambda: 1})["get_batch_sizes_to_capture"]
    settings = SimpleNamespace(**{**vars(settings), "cuda_graph_bs": list(settings.cuda_graph_bs),
                                  "enable_two_batch_overlap": False, "enable_torch_compile": False,
                                  "torch_compile_max_bs": 32})
    runner = SimpleNamespace(server_args=settings, req_to_token_pool=SimpleNamespace(size=max_running))
    return fn(runner)[0]


def kv_tokens(srt: Path, facts: ModelFacts, pre_gib: float, util: float, tp: int, max_num_seqs: int
              ) -> tuple[int, int, int]:
    """(cell_size, max_total_num_tokens, max_running_requests) as SGLang computes them on one rank with ``pre_gib``
    free before loading and bf16 weights of 2 x params / tp."""
    weights_gib = 2 * facts.param_count / tp / GIB
    mixin = functions(srt / "model_executor" / "model_runner_kv_cache_mixin.py",
                      {"_profile_available_bytes", "_resolve_max_num_reqs"}, {
                          "get_available_gpu_memory": lambda *a, **k: pre_gib - weights_gib,
                          "get_world_group": lambda: SimpleNamespace(world_size=1, cpu_group=None)})
    cell_fn = functions(srt / "model_executor" / "pool_configurator.py", {"_compute_cell_size"}, {
        "torch": SimpleNamespace(_utils=SimpleNamespace(_element_size=lambda dtype: 2)),
        "get_attention_tp_size": lambda: tp, "is_float4_e2m1fn_x2": lambda dtype: False,
        "is_deepseek_nsa": lambda cfg: False})["_compute_cell_size"]
    heads = max(1, facts.num_kv_heads // tp)
    mc = SimpleNamespace(get_num_kv_heads=lambda t: heads, head_dim=facts.head_dim, v_head_dim=facts.head_dim,
                         context_len=facts.max_position_embeddings, hf_config=None)
    runner = SimpleNamespace(device="cuda", gpu_id=0, mem_fraction_static=util, mambaish_config=None,
                             model_config=mc, kv_cache_dtype=None, use_mla_backend=False, dp_size=1,
                             server_args=SimpleNamespace(max_running_requests=max_num_seqs))
    cell = cell_fn(None, runner, facts.num_layers)
    available = mixin["_profile_available_bytes"](runner, pre_gib)
    tokens = available // cell  # DefaultPoolConfigurator.calculate_pool_sizes, page_size 1
    return cell, tokens, mixin["_resolve_max_num_reqs"](runner, tokens)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("srt", type=Path, help="python/sglang/srt of an unpacked sglang 0.5.12 wheel")
    args = ap.parse_args()
    if not (args.srt / "server_args.py").is_file():
        print(f"{args.srt}: no server_args.py there; give python/sglang/srt of an unpacked sglang 0.5.12 wheel "
              "(see this script's docstring)", file=sys.stderr)
        return 2
    bad = 0
    print("GPU        TP  sglang (chunk, max_bs, #graphs@256, #graphs@48, #piecewise)   estimate")
    for gpu, mib in GPUS.items():
        for tp in (1, 2, 4, 8):
            s = sglang_settings(args.srt, mib, tp)
            theirs = (s.chunked_prefill_size, s.cuda_graph_max_bs, len(captured(args.srt, s, 256)),
                      len(captured(args.srt, s, 48)), len(s.piecewise_cuda_graph_tokens))
            chunk, max_bs = sglang_gpu_defaults(mib * MIB, tp)
            ours = []
            for running in (256, 48):
                m = sglang_memory(Q7, capacity=mib * MIB, free=100 * GIB, util=0.5, tp=tp, max_num_seqs=running,
                                  disable_cuda_graph=False)
                ours.append(len(m.graph_batch_sizes))
            mine = (chunk, max_bs, *ours, m.piecewise_sizes)
            bad += theirs != mine
            print(f"{gpu:10s} {tp:2d}  {str(theirs):55s} {mine}{'' if theirs == mine else '  MISMATCH'}")
    print("\nmodel       TP  free GiB  util  sglang (cell, tokens, max_running)   estimate")
    for facts in (Q7, Q05):
        for tp, pre, util, seqs in ((1, 130.0, 0.5, 256), (2, 70.6, 0.6, 1024), (1, 60.0, 0.3, 8192), (4, 20, 0.9, 64)):
            if facts.num_kv_heads % tp and tp < facts.num_kv_heads:
                continue
            theirs = kv_tokens(args.srt, facts, pre, util, tp, seqs)
            m = sglang_memory(facts, capacity=143_771 * MIB, free=int(pre * GIB) + C.sglang_context +
                              (C.nccl_buffers if tp > 1 else 0), util=util, tp=tp, max_num_seqs=seqs,
                              disable_cuda_graph=False, args=SglangArgs())
            mine = (m.cell_size, m.kv_tokens, m.max_running_requests)
            # float GiB arithmetic in SGLang vs integer bytes here: a token either way
            same = theirs[0] == mine[0] and abs(theirs[1] - mine[1]) <= 1 and theirs[2] == mine[2]
            bad += not same
            print(f"{facts.name.split('/')[1][:11]:11s} {tp:2d}  {pre:8.1f}  {util:4.2f}  {str(theirs):36s} {mine}"
                  f"{'' if same else '  MISMATCH'}")
    print(f"mismatches: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
