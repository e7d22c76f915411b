"""SGLang 0.5.12 as a rollout engine: its memory, term by term, from its own code (each term cites file:line).

Split from :mod:`wizard.core.memory.terms`, whose vLLM-measured pieces (weights, activations) it reuses. Pure.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from wizard.core.memory.terms import (CONSTANTS, KvCache, MemoryConstants, engine_weights, engine_activation,
                                      vllm_activation)
from wizard.core.models.facts import ModelFacts

# SGLang 0.5.12 (verl 0.9.1's sglang extra pins it). "sglang" below is python/sglang/srt/ of its wheel; "verl" is
# verl/workers/rollout/sglang_rollout/async_sglang_server.py of verl 0.9.1, which starts the engine with
# mem_fraction_static = rollout.gpu_memory_utilization, disable_cuda_graph = enforce_eager,
# max_running_requests = max_num_seqs, enable_memory_saver = True and attention_backend = flashinfer, then
# **engine_kwargs.sglang (lines 286-341); it passes no context_length, chunked_prefill_size or max_total_tokens.

SGLANG_QWEN_WORKSPACE = ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "MiMoForCausalLM", "Qwen3VLForConditionalGeneration",
                         "Qwen3VLMoeForConditionalGeneration")


class SglangArgs(BaseModel):
    """The engine arguments that size SGLang's memory beyond verl's rollout keys (engine_kwargs.sglang); None:
    SGLang's own default."""

    model_config = ConfigDict(frozen=True)

    chunked_prefill_size: int | None = None  # -1: chunked prefill off (then max_prefill_tokens)
    max_prefill_tokens: int = 16384  # server_args.py:424
    cuda_graph_max_bs: int | None = None
    max_total_tokens: int | None = None
    disable_piecewise_cuda_graph: bool = False
    lora_adapter: bool = False  # LoRA served as an adapter: verl's sleep keeps the base weights (sleep_level 1)
    attention_backend: str = "flashinfer"  # verl's choice (async_sglang_server.py:286-341); "triton" sizes its own
    triton_kv_splits: int = 8  # triton_attention_num_kv_splits (server_args.py:748)


def sglang_gpu_defaults(capacity: int, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks from the GPU's memory (nvidia-smi's memory.total in MiB,
    utils/common.py:1647-1677) when they are not set: server_args.py:1424-1482 (_handle_gpu_memory_settings)."""
    mib = capacity / (1 << 20)
    if mib < 20 * 1024:  # T4, 4080
        return 2048, 8
    if mib < 35 * 1024:  # A10, 4090, 5090
        return 2048, 24 if tp < 4 else 80
    if mib < 60 * 1024:  # A100 40GB, L40
        return 4096, 32 if tp < 4 else 160
    if mib < 160 * 1024:  # H100, A100 80GB, H20, H200
        return 8192, 256 if tp < 4 else 512
    return 16384, 512  # B200, MI300


def sglang_graph_batch_sizes(cuda_graph_max_bs: int, max_running_requests: int) -> list[int]:
    """The decode batch sizes SGLang captures a CUDA graph for: server_args.py:1604-1635
    (_generate_cuda_graph_batch_sizes) cut at the request pool's size (cuda_graph_runner.py:515-541)."""
    sizes = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16), *range(512, cuda_graph_max_bs + 1, 32)]
    sizes = [bs for bs in sizes if bs <= cuda_graph_max_bs]
    if cuda_graph_max_bs not in sizes:
        sizes.append(cuda_graph_max_bs)
    if max(sizes) > max_running_requests:
        sizes.append(max_running_requests)
    return sorted({bs for bs in sizes if bs <= max_running_requests})


def sglang_piecewise_tokens(max_tokens: int) -> list[int]:
    """The token counts SGLang captures a piecewise CUDA graph for, up to chunked_prefill_size
    (server_args.py:1513-1519 and 1657-1675)."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
             *range(1280, 4097, 256), *range(4608, max_tokens + 1, 512)]
    return [s for s in sizes if s <= max_tokens]


def sglang_max_running(facts: ModelFacts, kv_tokens: int, max_num_seqs: int, dp: int = 1) -> int:
    """The requests one SGLang rank runs at once (max_running_requests): verl's max_num_seqs per data-parallel rank,
    at most SGLang's own cap from its KV pool, ``max(min(tokens / context_len x 512, 4096), 2048)``
    (model_runner_kv_cache_mixin.py:817-835)."""
    context_len = facts.max_position_embeddings or 32768
    estimated = max(min(int(max(0, kv_tokens) / context_len * 512), 4096), 2048)
    return max(1, min(max_num_seqs // max(1, dp), estimated))


class SglangMemory(BaseModel):
    """One SGLang rank's memory, term by term (bytes), and its KV pool."""

    model_config = ConfigDict(frozen=True)

    free_at_start: int  # what SGLang measures before loading: pre_model_load_memory
    static_bytes: int  # weights + KV pool
    weights_bytes: int
    kv_bytes: int  # <= 0: SGLang does not start
    kv_tokens: int  # max_total_num_tokens of one rank
    cell_size: int  # KV bytes per token on one rank
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    graph_batch_sizes: list[int]
    graph_bytes: int  # decode CUDA graphs (0 with disable_cuda_graph)
    piecewise_bytes: int  # piecewise (prefill) CUDA graphs
    piecewise_sizes: int  # how many token counts they are captured for
    max_running_requests: int
    req_to_token_bytes: int  # the request -> token table, in the kv_cache region
    workspace_bytes: int  # flashinfer's workspace buffer, or the triton backend's decode buffers
    attention_backend: str = "flashinfer"
    activation_bytes: int  # a prefill forward of chunked_prefill_size tokens
    context_bytes: int  # the scheduler process: CUDA context and NCCL
    asleep_bytes: int  # what stays while verl has released weights and kv_cache
    capped: bool = False  # max_total_tokens cut the pool
    keeps_weights: bool = False  # asleep with its base weights (LoRA served as an adapter)

    @property
    def dynamic_bytes(self) -> int:
        """What SGLang allocates after the pool, out of the (1 - mem_fraction_static) x free rest."""
        return (self.graph_bytes + self.piecewise_bytes + self.req_to_token_bytes + self.workspace_bytes
                + self.activation_bytes)

    @property
    def awake_bytes(self) -> int:
        return self.context_bytes + self.static_bytes + self.dynamic_bytes


def sglang_memory(facts: ModelFacts, *, capacity: int, free: int, util: float, tp: int, dp: int = 1, pp: int = 1,
                  max_num_seqs: int, disable_cuda_graph: bool, args: SglangArgs | None = None,
                  c: MemoryConstants = CONSTANTS) -> SglangMemory:
    """SGLang's memory on one rank of a replica, ``free`` being the GPU's free memory before its scheduler process
    starts (the trainer's load state already on it).

    KV pool (model_runner_kv_cache_mixin.py:61-74 and pool_configurator.py:182-187): SGLang measures the free memory
    before loading (``pre_model_load_memory``, model_runner.py:1299, after its CUDA context and NCCL exist) and after
    (``post_model_load_memory``); ``rest_memory = post - pre x (1 - mem_fraction_static)``;
    ``max_total_num_tokens = rest_memory // cell_size`` (page_size 1 with flashinfer, server_args.py:2949-2954),
    ``cell_size = kv_heads_per_rank x (head_dim + v_head_dim) x layers x 2 bytes`` (MLA: (kv_lora_rank +
    qk_rope_head_dim) x layers x 2, pool_configurator.py:125-180). post = pre - weights, so the KV pool is
    mem_fraction_static x pre - weights and weights + pool = mem_fraction_static x pre: a fraction of the memory
    free at start, not of the total. max_total_tokens caps it (model_runner_kv_cache_mixin.py:788-815). A pool of
    <= 0 tokens stops the engine: "Not enough memory. Please try to increase --mem-fraction-static."
    (pool_configurator.py:51-56).

    After the pool, out of the (1 - mem_fraction_static) x pre rest: the request table (memory_pool.py:145-150:
    (max_running_requests + 1) x context_len int32, in the kv_cache region; max_running_requests =
    min(max_num_seqs // dp, max(min(tokens / context_len x 512, 4096), 2048)), model_runner_kv_cache_mixin.py:
    817-835), flashinfer's workspace (384 MiB, 512 MiB for Qwen2/Qwen3: environ.py:370, flashinfer_backend.py:
    163-173), the decode CUDA graphs (batch sizes up to cuda_graph_max_bs, default by GPU memory), the piecewise
    prefill graphs (on by default, also under verl's enforce_eager, which only sets disable_cuda_graph) and the
    activations of a prefill batch of chunked_prefill_size tokens (schedule_policy.py:556-602 keeps a batch within
    it). The decode graphs' size is SGLang's own reserve heuristic (server_args.py:1541-1571); the piecewise graphs
    hold the activations of their largest capture plus a fixed part, fitted to SGLang's own log lines on an H100
    (``sglang_piecewise_base``); the activations use the per-token arithmetic of vLLM's profile run
    (:func:`engine_activation`, measured on the H200 with vLLM) [E]."""
    a = args or SglangArgs()
    # verl starts SGLang with tp_size = TP x DP (async_sglang_server.py:313-323); its defaults read that tp_size
    chunk_default, bs_default = sglang_gpu_defaults(capacity, tp * max(1, dp))
    chunk = a.chunked_prefill_size if a.chunked_prefill_size is not None else chunk_default
    max_bs = a.cuda_graph_max_bs or bs_default
    context = c.sglang_context + (c.nccl_buffers if tp * max(1, dp) > 1 else 0)  # SGLang's TP group: TP x DP
    pre = free - context
    weights = engine_weights(facts, tp, pp)
    static = util * pre
    cell = max(1, facts.kv_bytes_per_token(tp) // max(1, pp))
    tokens = int((static - weights) // cell)
    capped = a.max_total_tokens is not None and 0 < a.max_total_tokens < tokens
    if capped:
        tokens = a.max_total_tokens
        static = weights + tokens * cell
    kv = static - weights
    context_len = facts.max_position_embeddings or 32768
    running = sglang_max_running(facts, tokens, max_num_seqs, dp)
    req_table = (running + 1) * (context_len + 4) * 4  # +4: model_runner_kv_cache_mixin.py:243-321
    sizes = [] if disable_cuda_graph else sglang_graph_batch_sizes(max_bs, running)
    graph = c.sglang_graph_per_bs * max(sizes) if sizes else 0
    prefill = chunk if chunk > 0 else a.max_prefill_tokens
    piecewise = 0
    # captured up to chunked_prefill_size, at most max_total_tokens (none with chunked prefill off: "the capture size
    # is not set", model_runner.py:2987-2992; server_args.py:1513-1527); off with LoRA, a multimodal model or PP
    # (server_args.py:1301-1368: _handle_piecewise_cuda_graph)
    pw_tokens = sglang_piecewise_tokens(min(chunk, a.max_total_tokens or chunk))
    if pw_tokens and not (a.disable_piecewise_cuda_graph or a.lora_adapter or facts.vision_params or pp > 1):
        piecewise = c.sglang_piecewise_mla if facts.kv_lora_rank else (
            c.sglang_piecewise_base + engine_activation(facts, pw_tokens[-1], tp, c))
    else:
        pw_tokens = []
    qwen = (facts.architecture or "") in SGLANG_QWEN_WORKSPACE or (
        not facts.architecture and (facts.model_type or "") in ("qwen2", "qwen3", "mimo", "qwen3_vl", "qwen3_vl_moe"))
    workspace = (512 if qwen else 384) << 20
    if a.attention_backend == "triton":
        # no flashinfer workspace; the triton backend's CUDA-graph state instead (triton_backend.py:497-560): the
        # split-KV partial outputs and their log-sum-exp in fp32 per captured request, and KV indices in int64 where
        # flashinfer keeps int32 (an extra 4 bytes x context_len per request)
        bs = max(sizes) if sizes else 0
        heads = max(1, facts.num_attention_heads // max(1, tp))
        v_dim = facts.v_head_dim or facts.head_dim
        workspace = bs * heads * a.triton_kv_splits * (v_dim + 1) * 4 + bs * (context_len * 4)
    act = vllm_activation(facts, prefill, running, tp, c, encoder=False)
    # verl's sleep releases the "kv_cache" and "weights" regions (torch_memory_saver; async_sglang_server.py:
    # 505-525; the base weights stay when LoRA is served as an adapter) and flushes the cache, which empties torch's
    # allocator (scheduler_update_weights_mixin.py:127-158, scheduler.py:3442-3457): the context, the workspace and
    # both kinds of CUDA graphs stay.
    asleep = context + workspace + graph + piecewise + (int(weights) if a.lora_adapter else 0)
    return SglangMemory(free_at_start=int(pre), static_bytes=int(static), weights_bytes=int(weights), kv_bytes=int(kv),
                        kv_tokens=max(0, tokens), cell_size=int(cell), chunked_prefill_size=chunk,
                        cuda_graph_max_bs=max_bs, graph_batch_sizes=sizes, graph_bytes=int(graph),
                        piecewise_bytes=int(piecewise), piecewise_sizes=len(pw_tokens), max_running_requests=running,
                        req_to_token_bytes=req_table,
                        workspace_bytes=int(workspace), attention_backend=a.attention_backend,
                        activation_bytes=int(act), context_bytes=int(context),
                        asleep_bytes=int(asleep), capped=capped, keeps_weights=a.lora_adapter)


def sglang_kv_cache(facts: ModelFacts, s: SglangMemory, *, tp: int, dp: int, pp: int, seq_tokens: int,
                    max_model_len: int | None, max_num_seqs: int, in_flight: int) -> KvCache:
    """An SGLang rank's KV cache as the estimate reports every engine's: its pool (mem_fraction_static x the memory
    free before it loads - weights, :func:`sglang_memory`), times the data-parallel replicas."""
    per_token = max(1, facts.kv_bytes_per_token(tp) // max(1, pp))
    tokens = s.kv_tokens * dp
    return KvCache(engine="sglang", budget_bytes=int(s.static_bytes), weights_bytes=int(s.weights_bytes),
                   activation_bytes=int(s.activation_bytes),
                   other_bytes=int(s.dynamic_bytes - s.activation_bytes + s.context_bytes), kv_bytes=int(s.kv_bytes),
                   bytes_per_token=int(per_token), tokens=tokens, seq_tokens=seq_tokens, max_model_len=max_model_len,
                   sequences=tokens // max(1, seq_tokens), wanted=min(max_num_seqs * dp, in_flight), pinned=False)
