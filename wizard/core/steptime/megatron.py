"""The Megatron training engine's phases of a step (verl 0.9.1, ``actor.strategy=megatron``): formulas, with the
per-token costs and the weight sync's costs measured on four runs alone on an H100 (TP = PP = 1, Qwen2.5-0.5B and
1.5B, a 1.2B Qwen3-MoE:
bench/real/megatron-carry.md); what TP, PP, CP and EP add is from link bandwidth and the schedules, not measured.

Per GPU, on the busiest pipeline stage (the one :mod:`wizard.core.memory.megatron` sizes):

- **compute**: the FLOPs of the FSDP model (2 x active params a token in a log-prob pass, 6 in an update, 8 with full
  recompute) at the efficiencies calibrated on FSDP runs, over all the GPUs (TP and PP split the params, DP and CP
  the tokens), plus the per-token handling measured on a Megatron run, spread the same way;
- **the pipeline bubble**: a stage idles while the pipeline fills and drains, PP - 1 micro-batch times per pass
  (megatron/core/pipeline_parallel/schedules.py: ``forward_backward_pipelining_without_interleaving``), divided by
  VPP with the interleaved schedule: compute x (PP - 1) / (VPP x micro-batches) (arXiv 2104.04473 §2.2);
- **TP's collectives**: per layer and micro-batch, the activations (tokens x hidden x 2 bytes) all-reduced in the
  forward after attention and after a dense MLP (with sequence parallelism an all-gather and a reduce-scatter each,
  the same bytes), 2 (TP - 1) / TP of them through each GPU's link; the backward moves as much again, 1.5 times
  with sequence parallelism (each linear layer all-gathers its input again for its weight gradient:
  tensor_parallel/layers.py, ``LinearWithGradAccumulationAndAsyncCommunication.backward``); not overlapped (verl
  sets no ``tp_comm_overlap``);
- **an MoE layer**: no TP collective after its routed experts; the all-to-all dispatcher sends each GPU's share of the
  tokens (1/TP with sequence parallelism) as top-k copies to their experts and back over EP, (EP - 1) / EP of them
  leaving the GPU (those for ranks on other nodes over the network), then all-gathers them over ETP and
  reduce-scatters them back (transformer/moe/token_dispatcher.py: ``MoEAlltoAllTokenDispatcher``, which verl
  selects: ``moe_token_dispatcher_type: alltoall``, workers/engine/megatron/transformer_impl.py:368);
- **the gradient sync**: once per optimizer step (megatron's DDP accumulates the micro-batches' gradients in its
  buffer; ``overlap_grad_reduce`` is off, megatron-core's default, which verl keeps), the fp32 gradients
  reduce-scattered over the DP x CP ranks (routed experts' over the expert-data-parallel ranks) and the bf16 params
  all-gathered in the optimizer's step (the distributed optimizer), or all-reduced without it;
- **the optimizer step**: the GPU's states read and written at memory bandwidth; the offloads over the host link
  (param_offload copies the bf16 params out and back and frees the gradient buffer, which is not copied:
  verl/utils/megatron_utils.py ``offload_megatron_model_to_cpu``);
- **the weight sync**: megatron-bridge exports each weight gathered over TP (routed experts over ETP, then over EP)
  and sent to every pipeline stage (``get_per_tensor_param``, transformer_impl.py:1033-1063), then the engine takes
  them at the measured rate.
Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.megatron import MegatronTrainer
from wizard.core.memory.megatron_layout import MegatronConfig
from wizard.core.memory.terms import CONSTANTS
from wizard.core.models.facts import ModelFacts
from wizard.core.steptime import comm
from wizard.core.steptime.terms import (
    Calibration, Gpu, PhaseTime, TimeTerm, flops_params, host_term, routed_expert_params,
)

ASSUMPTION = ("the Megatron engine's phases from megatron-core's schedules and collectives (the pipeline bubble, TP's "
              "and EP's collectives, the distributed optimizer's gradient sync) at FSDP's calibrated efficiencies, "
              "with per-token costs measured on four Megatron runs (TP = PP = 1, 0.5B-1.5B dense and a 1.2B MoE on an "
              "H100; taken as is "
              "on other GPUs, as FSDP's are); TP, PP and EP are not measured: their collectives are taken as not "
              "overlapped, CP's K/V exchange as hidden behind attention")


def hf_tensors(f: ModelFacts) -> int:
    """About how many Hugging Face tensors mbridge exports in a weight sync: per layer the attention's (q, k, v, o and
    their biases or norms: 6) and two norms, and a dense MLP's 3 weights or an MoE layer's 3 per routed expert, its
    router and its shared experts'; then the embedding, the final norm and the head."""
    dense_mlp = 3
    moe_layers = (f.num_layers - f.num_dense_layers) if f.num_experts else 0
    moe_mlp = 3 * (f.num_experts or 0) + 1 + (4 if f.shared_expert_intermediate_size else 3 * (f.num_shared_experts or 0))
    return f.num_layers * 8 + (f.num_layers - moe_layers) * dense_mlp + moe_layers * moe_mlp + 3


def _links(cluster: Cluster | None, m: MegatronConfig, c: Calibration) -> dict[str, comm.Link | None]:
    """Each group's ring: megatron-core orders ranks tp-cp-ep-dp-pp, so a TP group is TP consecutive GPUs, a
    data-parallel group spans TP x CP x DP of them (one stage) and the pipeline all of them; the MoE layers' ranks are
    generated again with ETP for TP (parallel_state.py: expert_decoder_rank_generator), so an EP group spans ETP x EP."""
    return {"tp": comm.ring_link(cluster, m.tp, c.host_link_gbs),
            "ep": comm.ring_link(cluster, m.etp * m.ep, c.host_link_gbs) if m.ep > 1 else None,
            "dp": comm.ring_link(cluster, m.world // m.pp, c.host_link_gbs) if m.dp_cp > 1 else None,
            # the expert-data-parallel ranks: ETP x EP apart within a stage
            "edp": comm.ring_link(cluster, m.world // m.pp, c.host_link_gbs) if m.expert_dp > 1 else None,
            "etp": comm.ring_link(cluster, m.etp, c.host_link_gbs) if m.etp > 1 else None,
            "pp": comm.ring_link(cluster, m.world, c.host_link_gbs) if m.pp > 1 else None}


def _over(nbytes: float, link: comm.Link | None) -> float:
    return nbytes / (link.gbs * 1e9) if link is not None and nbytes > 0 else 0.0


def _how(link: comm.Link | None) -> str:
    return f"{link.how} at {link.gbs:.0f} GB/s" if link is not None else "links unknown (not timed)"


class MegatronStep:
    """The trainer's phases of one step under Megatron on the busiest stage's GPUs."""

    def __init__(self, values: Mapping, cfg, actor: ModelFacts, cluster: Cluster | None, gpu: Gpu, c: Calibration,
                 *, seqs: int, mean_seq: int):
        self.t = MegatronTrainer(values, cfg, actor, CONSTANTS)
        self.m, self.f, self.cfg, self.gpu, self.c = self.t.m, actor, cfg, gpu, c
        self.seqs, self.mean_seq = seqs, mean_seq
        self.tokens = seqs * mean_seq
        self.per_gpu = self.tokens / max(1, self.m.world)
        # the engine's own work a token (measured at TP = PP = 1) is mostly the last stage's log-probs and entropy
        # over its vocabulary shard: split by TP with the vocabulary, not by PP (the last stage does all of it)
        self.per_last_stage = self.tokens / max(1, self.m.dp * self.m.cp * self.m.tp)
        self.links, self.cluster, self.node_gpus = _links(cluster, self.m, c), cluster, comm.node_gpus(cluster)
        self.s = self.t.s

    @property
    def unmodelled(self) -> str | None:
        return self.t.unmodelled

    # -- pieces shared by the passes ----------------------------------------------------------

    def _micro_batches(self, tokens_per_micro: int) -> int:
        """Micro-batches one data-parallel rank runs in a pass over the whole batch."""
        per_rank = self.tokens / max(1, self.m.dp) / max(1, self.m.cp)
        return max(1, math.ceil(per_rank / max(1, tokens_per_micro)))

    def _bubble(self, compute: float, micro: int) -> TimeTerm:
        m = self.m
        v = m.vpp or 1
        idle = compute * (m.pp - 1) / (v * micro) if m.pp > 1 else 0.0
        return TimeTerm("pipeline bubble", idle, f"PP {m.pp}" + (f" x VPP {v}" if v > 1 else "") + f": (PP - 1) / "
                        f"({'VPP x ' if v > 1 else ''}{micro} micro-batches) of the compute" if m.pp > 1 else "PP 1")

    def _activation_collectives(self, tokens_per_micro: int, micro: int, passes: float) -> list[TimeTerm]:
        """TP's (and an MoE layer's EP and ETP) collectives of ``micro`` micro-batches over ``passes`` forwards' worth
        (1 for a forward-only pass; an update's backward adds 1, 1.5 with sequence parallelism; full recompute 1)."""
        m, f, s, out = self.m, self.f, self.s, []
        size = 2 * tokens_per_micro * f.hidden_size  # one micro-batch's bf16 activations on a GPU of a CP group
        moe = s.moe_layers if f.num_experts_per_tok else 0
        shared = bool(f.shared_expert_intermediate_size or f.num_shared_experts)
        per_layer = 2 * (s.layers - moe) + (2 if shared else 1) * moe  # after attention, after a dense/shared MLP
        if m.tp > 1 and per_layer:
            nbytes = passes * micro * per_layer * comm.allreduce_bytes(size, m.tp)
            out.append(TimeTerm("TP collectives", _over(nbytes, self.links["tp"]),
                                f"{nbytes / 1e9:,.1f} GB per GPU over {_how(self.links['tp'])} ({per_layer} "
                                f"collectives of a stage's {s.layers} layers x {micro} micro-batches x {passes:g} "
                                "pass(es)); from link bandwidth, not measured"))
        if moe and (m.ep > 1 or m.etp > 1):
            # with sequence parallelism each GPU of a TP group dispatches its 1/TP of the micro-batch's tokens
            copies = passes * micro * moe * 2 * f.num_experts_per_tok * (size / m.tp if m.sp and m.tp > 1 else size)
            if m.ep > 1:
                out.append(self._all_to_all(copies))
            if m.etp > 1:  # the routed copies all-gathered over ETP there and reduce-scattered back
                nbytes = copies * (m.etp - 1)
                out.append(TimeTerm("ETP collectives", _over(nbytes, self.links["etp"]),
                                    f"{nbytes / 1e9:,.1f} GB per GPU over {_how(self.links['etp'])} (the routed "
                                    f"copies gathered over ETP {m.etp} and scattered back); from link bandwidth, not "
                                    "measured"))
        return out

    def _all_to_all(self, copies: float) -> TimeTerm:
        """EP's dispatch and combine: of a GPU's ``copies`` bytes (each token's top-k copies, there and back), those for
        the EP ranks on its node go over its node's links, those for ranks on other nodes over the network, at the same
        time (an all-to-all sends to each peer directly, not round a ring). EP ranks are ETP GPUs apart."""
        m, link = self.m, self.links["ep"]
        per_node = self.node_gpus or m.world
        near = max(1, min(m.ep, per_node // max(1, m.etp)))  # EP ranks on a GPU's own node, itself included
        local, remote = copies * (near - 1) / m.ep, copies * (m.ep - near) / m.ep
        intra = comm.ring_link(self.cluster, min(per_node, m.etp * near), self.c.host_link_gbs) or link
        parts = [(local, intra)] + ([(remote, comm.network_link(self.cluster))] if remote > 0 else [])
        seconds = max(_over(b, ln) for b, ln in parts)
        note = " and ".join(f"{b / 1e9:,.1f} GB per GPU over {_how(ln).replace(' within a node', '')}"
                            for b, ln in parts if b > 0) or "nothing leaves the GPU"
        return TimeTerm("EP all-to-all", seconds, f"{note}, at once (top-{self.f.num_experts_per_tok} copies of each "
                                                  "token to its experts and back); from link bandwidth, not measured")

    # -- the phases ---------------------------------------------------------------------------

    def forward(self, name: str, title: str, tokens_per_micro: int, offload: bool, pageable: bool = False) -> PhaseTime:
        """A forward-only pass; ``offload``: its params loaded for the call and put back after it, ``pageable``: one
        tensor at a time through pageable host memory (the reference, which has no DDP buffer to pin)."""
        c, flops = self.c, self.gpu.tflops * 1e12
        micro = self._micro_batches(tokens_per_micro)
        compute = 2 * flops_params(self.f) * self.per_gpu / (flops * c.fwd_efficiency)
        terms = [TimeTerm("FLOPs", compute, f"2 x {flops_params(self.f) / 1e9:.2f}B params x {self.per_gpu:,.0f} "
                                            f"tokens per GPU at {c.fwd_efficiency:.0%} of {flops / 1e12:g} TFLOP/s"),
                 TimeTerm("per token", self.per_last_stage * c.megatron_fwd_s_per_token,
                          f"{self.per_last_stage:,.0f} tokens x {c.megatron_fwd_s_per_token * 1e6:.1f} us (measured on "
                          "four Megatron runs at TP = PP = 1, beyond the FLOPs: its vocabulary-parallel log-probs, the old "
                          "log-prob pass's entropy, the engine's own work; the last stage's tokens"
                          + (", which PP does not split" if self.m.pp > 1 else "") + ")"),
                 self._bubble(compute, micro), *self._activation_collectives(tokens_per_micro, micro, 1)]
        if offload and pageable:
            moved = 2 * self.t.st.params
            terms.append(TimeTerm("params from and back to the host", moved / (c.pageable_gbs * 1e9),
                                  f"{moved / 1e9:.1f} GB at {c.pageable_gbs:g} GB/s, in and out one tensor at a time "
                                  "through pageable memory (measured on a Megatron reference with param_offload)"))
        elif offload:  # loaded for the call, copied back to the host after it
            terms.append(host_term("params from and back to the host", 2 * self.t.st.params, c, "in and out"))
        return PhaseTime(name, title, tuple(terms))

    def update(self, steps: int, epochs: int) -> PhaseTime:
        """``steps``: optimizer steps over the update (mini-batches x epochs)."""
        m, c, flops, st = self.m, self.c, self.gpu.tflops * 1e12, self.t.st
        full = m.recompute == "full"
        k = 6 + (2 if full else 0)
        tokens = epochs * self.per_gpu
        compute = k * flops_params(self.f) * tokens / (flops * c.train_efficiency)
        last = epochs * self.per_last_stage
        # micro-batches of one mini-batch on a data-parallel rank, at the step's mean length
        micro = max(1, math.ceil(self.tokens * epochs / steps / m.dp / m.cp / max(1, self.t.update_tokens)))
        # the backward moves as much as the forward, 1.5 times with sequence parallelism; full recompute a forward more
        passes = 1 + (1.5 if m.sp and m.tp > 1 else 1) + (1 if full else 0)
        terms = [TimeTerm("FLOPs", compute, f"{k} x {flops_params(self.f) / 1e9:.2f}B params x {tokens:,.0f} tokens "
                          f"per GPU at {c.train_efficiency:.0%} of {flops / 1e12:g} TFLOP/s"
                          + (" (full recompute runs the forward again)" if full else "")),
                 TimeTerm("per token", last * c.megatron_train_s_per_token,
                          f"{last:,.0f} x {c.megatron_train_s_per_token * 1e6:.1f} us (measured on two dense Megatron runs "
                          "at TP = PP = 1, which spent nothing measurable per sequence; the last stage's tokens"
                          + (", which PP does not split" if self.m.pp > 1 else "") + ")"),
                 *self._moe_dispatch(last),
                 self._bubble(compute, micro),
                 *self._activation_collectives(self.t.update_tokens, micro * steps, passes),
                 *self._gradient_sync(steps)]
        on_gpu = 1.0 - m.cpu_optimizer  # optimizer_cpu_offload: megatron-core steps that fraction on the host
        states = st.params + st.grads + m.main_on_gpu * st.main + on_gpu * st.adam
        terms.append(TimeTerm("optimizer step", steps * 2 * states / (self.gpu.bandwidth_gbs * 1e9 *
                                                                       c.bandwidth_efficiency),
                              f"{steps} step(s) x {states / 1e9:.1f} GB of params, gradients and states read and "
                              "written"))
        if m.cpu_optimizer:
            shard = m.cpu_optimizer * st.main / 4  # the host's fp32 main params: its share of this GPU's shard
            terms.append(TimeTerm("optimizer on the CPU", steps * shard * c.cpu_adam_s_per_param,
                                  f"{steps} step(s) x {shard / 1e9:.2f}B params (optimizer_cpu_offload, fraction "
                                  f"{m.cpu_optimizer:g}; torch's CPU Adam as measured with FSDP's offload_policy)"))
            terms.append(host_term("gradients and params over the host link", steps * shard * (4 + 4), c,
                                   "fp32 gradients out and updated params back, each optimizer step"))
        if m.param_offload:  # the gradient buffer is freed and re-made, not copied
            terms.append(host_term("params over the host link", 2 * st.params, c, "in and out once per update"))
        moved = m.main_on_gpu * st.main + on_gpu * st.adam  # the CPU optimizer's share never comes to the GPU
        if m.optimizer_offload and moved > 0:
            # back to the host with non_blocking copies (megatron_utils.py:956-962 offload_megatron_optimizer): they
            # overlap what follows; measured, the 1.5B's update took 1.05 s more with both offloads, where in and out
            # at the host link's rate would be 1.7 s and in alone 1.0 (meg-grpo-1.5b-tp1-u0.5-paramoffload-h100)
            terms.append(host_term("optimizer states over the host link", moved, c,
                                   "in once per update; the copy back out is non-blocking and overlaps what follows"))
        return PhaseTime("update_actor", "actor update", tuple(terms))

    def _moe_dispatch(self, tokens: float) -> list[TimeTerm]:
        """The update's MoE layers beyond their FLOPs: each token's top-k copies permuted to their experts and back,
        per layer of the stage (measured on one MoE run at EP 1)."""
        k, layers = self.f.num_experts_per_tok or 0, self.s.moe_layers
        if not (k and layers):
            return []
        copies = tokens * k * layers
        return [TimeTerm("MoE dispatch", copies * self.c.megatron_moe_train_s_per_copy,
                         f"{tokens:,.0f} tokens x top-{k} x {layers} MoE layers x "
                         f"{self.c.megatron_moe_train_s_per_copy * 1e6:g} us (measured on one MoE run at EP 1, "
                         "beyond its FLOPs: the dispatcher's permutes and the grouped GEMMs)")]

    def _gradient_sync(self, steps: int) -> list[TimeTerm]:
        """Once per optimizer step: the gradients reduce-scattered and the params all-gathered (the distributed
        optimizer) or the gradients all-reduced; dense params over DP x CP, routed experts over expert-DP."""
        m, s = self.m, self.s
        grad = 4 if m.grads_fp32 else 2
        out = []
        for what, params, ranks, link in (("", s.dense, m.dp_cp, self.links["dp"]),
                                          (" (routed experts)", s.expert, m.expert_dp, self.links["edp"])):
            if ranks < 2 or params <= 0:
                continue
            nbytes = (comm.ring_bytes(grad * params, ranks) + comm.ring_bytes(m.param_bytes * params, ranks)
                      if m.dist_opt else comm.allreduce_bytes(grad * params, ranks))
            group = "DP x CP" if not what else "expert-DP"
            out.append(TimeTerm("gradient sync" + what, steps * _over(nbytes, link),
                                f"{steps} step(s) x {nbytes / 1e9:,.1f} GB per GPU over {_how(link)} ("
                                + ("reduce-scatter + the params all-gathered" if m.dist_opt else "all-reduce")
                                + f" over {ranks} {group} ranks); from link bandwidth, not measured"))
        return out

    def weight_sync(self) -> PhaseTime:
        m, c, f = self.m, self.c, self.f
        whole = 2 * f.param_count
        experts = 2 * routed_expert_params(f)
        tensors = hf_tensors(f)
        terms = [TimeTerm("fixed", c.megatron_sync_fixed_s + tensors * c.megatron_sync_s_per_tensor,
                          f"{c.megatron_sync_fixed_s:g} s and about {tensors:,} Hugging Face tensors x "
                          f"{c.megatron_sync_s_per_tensor * 1e3:g} ms (mbridge exports one at a time; measured on four "
                          "Megatron runs at TP = PP = 1)"),
                 TimeTerm("weights into the engine", whole / (c.sync_gbs * 1e9),
                          f"{whole / 1e9:.1f} GB at {c.sync_gbs:g} GB/s")]
        gathers = (("gathered over TP", comm.ring_bytes((whole - experts) / m.pp, m.tp), self.links["tp"]),
                   ("experts gathered over ETP", comm.ring_bytes(experts / m.pp / m.ep, m.etp), self.links["etp"]),
                   ("experts gathered over EP", comm.ring_bytes(experts / m.pp, m.ep), self.links["ep"]),
                   ("sent to every stage", whole * (m.pp - 1) / m.pp, self.links["pp"]))
        for label, nbytes, link in gathers:
            if nbytes > 0:
                terms.append(TimeTerm(label, _over(nbytes, link), f"{nbytes / 1e9:.1f} GB per GPU over {_how(link)}; "
                                                                  "from link bandwidth"))
        return PhaseTime("update_weights", "weight sync", tuple(terms))
