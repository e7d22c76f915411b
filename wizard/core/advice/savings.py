"""Every memory-saving tuning at once (:func:`all_savings`, the bound no tuning can beat, which the search and the
"nothing fits" statement start from) and the moves that reach it, one per knob, in words (:func:`saving_moves`)."""

from __future__ import annotations

from collections.abc import Mapping

from wizard.core.advice.moves import (
    AM, BATCHING, CPU_OPTIMIZER, CPU_OPTIMIZER_NAME, CRITIC_NO_SYNC, CRITIC_RESHARD, FULL_RECOMPUTE, LORA_BF16,
    LORA_BF16_MOVE, NO_SYNC, RECOMPUTE, REF_RESHARD, RESHARD, Move, _int, turn,
)
from wizard.core.memory.batching import critic_batching
from wizard.core.memory.config import read_config
from wizard.core.memory.lora_sync import LOAD_FORMAT_KEY, sends_base
from wizard.core.verl.flags import truthy
from wizard.core.verl.keys import CF, REF, A, AF, M, R
from wizard.core.verl.roles import need_critic, trained_lora_rank


def all_savings(values: Mapping, offload: bool = True) -> dict:
    """Every memory-saving tuning at once (a bound: what no tuning can beat); ``offload=False``: all but CPU offload
    (which spends host RAM instead)."""
    if values.get(f"{A}.strategy") == "megatron":
        # with offload, megatron-core's CPU optimizer (main params and Adam stepped on the host) rather than verl's
        # optimizer_offload, which brings them back to the GPU for every update
        out = {f"{AM}.param_offload": offload, f"{REF}.megatron.param_offload": offload, **dict(FULL_RECOMPUTE),
               **(dict(CPU_OPTIMIZER if values.get(f"{AM}.use_distributed_optimizer") is not False else
                       CPU_OPTIMIZER[:2]) if offload else {f"{AM}.optimizer_offload": False})}
    else:
        out = {f"{AF}.param_offload": offload, f"{AF}.optimizer_offload": offload, f"{AF}.offload_policy": offload,
               f"{M}.enable_gradient_checkpointing": True, NO_SYNC: False, CRITIC_NO_SYNC: False, RESHARD: True,
               REF_RESHARD: True, CRITIC_RESHARD: True,
               f"{A}.strategy": "fsdp2", f"{REF}.strategy": "fsdp2"}
        if trained_lora_rank(values):  # LoRA's frozen base as its checkpoint stores it (moves.LORA_BF16)
            out.update(LORA_BF16)
        if sends_base(values):  # vLLM reads the base itself: no gather of the base on the host at the first sync
            out[LOAD_FORMAT_KEY] = "safetensors"
    seq = read_config(values).seq_tokens
    batching = [(truthy(values, dyn), micro, budget) for _, micro, dyn, budget in BATCHING]
    if need_critic(values):
        if values.get(f"{A}.strategy") != "megatron":
            out.update({f"{CF}.param_offload": offload, f"{CF}.optimizer_offload": offload,
                        f"{CF}.offload_policy": offload, "critic.strategy": "fsdp2",
                        "critic.model.enable_gradient_checkpointing": True})
        dyn, budget, micro = critic_batching(values)
        batching.append((dyn is None or truthy(values, dyn), micro, budget))
    for dynamic, micro, budget in batching:  # one sample a micro-batch
        if dynamic and _int(values, budget):
            out[budget] = seq
        elif not dynamic and micro and _int(values, micro):
            out[micro] = 1
    util = values.get(f"{R}.gpu_memory_utilization")
    if isinstance(util, (int, float)) and util > 0.3:
        out[f"{R}.gpu_memory_utilization"] = 0.3
    return out


_NAMES = {LOAD_FORMAT_KEY: "rollout.load_format", f"{AF}.param_offload": "param offload",
          f"{AF}.optimizer_offload": "optimizer offload",
          f"{AF}.offload_policy": "FSDP2's CPU offload policy (optimizer on the CPU)",
          f"{M}.enable_gradient_checkpointing": "gradient checkpointing", f"{A}.strategy": "actor strategy",
          NO_SYNC: "unsharded actor gradient held across micro-batches",
          CRITIC_NO_SYNC: "unsharded critic gradient held across micro-batches",
          RESHARD: "actor params resharded after each forward",
          REF_RESHARD: "reference params resharded after each forward",
          CRITIC_RESHARD: "critic params resharded after each forward",
          f"{REF}.strategy": "ref strategy", f"{A}.ppo_micro_batch_size_per_gpu": "actor micro-batch",
          f"{R}.log_prob_micro_batch_size_per_gpu": "log-prob micro-batch",
          f"{REF}.log_prob_micro_batch_size_per_gpu": "ref micro-batch",
          f"{A}.ppo_max_token_len_per_gpu": "actor micro-batch token budget",
          f"{R}.log_prob_max_token_len_per_gpu": "log-prob micro-batch token budget",
          f"{REF}.log_prob_max_token_len_per_gpu": "ref micro-batch token budget",
          "critic.ppo_infer_max_token_len_per_gpu": "critic token budget",
          "critic.ppo_max_token_len_per_gpu": "critic token budget",
          f"{CF}.micro_batch_size_per_gpu": "critic micro-batch", "critic.ppo_micro_batch_size_per_gpu": "critic micro-batch",
          f"{CF}.param_offload": "critic param offload", f"{CF}.optimizer_offload": "critic optimizer offload",
          f"{CF}.offload_policy": "the critic's CPU offload policy (its optimizer on the CPU)",
          "critic.strategy": "critic strategy",
          "critic.model.enable_gradient_checkpointing": "critic gradient checkpointing",
          f"{R}.gpu_memory_utilization": "gpu_memory_utilization", f"{R}.tensor_model_parallel_size": "rollout TP",
          f"{AM}.param_offload": "Megatron param offload", f"{AM}.optimizer_offload": "Megatron optimizer offload",
          f"{REF}.megatron.param_offload": "reference param offload",
          f"{RECOMPUTE}.recompute_granularity": "recompute granularity",
          f"{RECOMPUTE}.recompute_method": "recompute method", f"{RECOMPUTE}.recompute_num_layers": "recompute layers"}


def _shown(v) -> object:
    """A knob's value as a person reads it: a token budget with its thousands (32,768)."""
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else v


# the moves a seed takes whole where its target sets all their keys (saving_moves)
_WHOLE = (Move(CPU_OPTIMIZER_NAME, CPU_OPTIMIZER), Move(CPU_OPTIMIZER_NAME, CPU_OPTIMIZER[:2]),
          Move("full recompute (uniform, 1 layer a chunk)", FULL_RECOMPUTE),
          Move("param offload", ((f"{AM}.param_offload", True), (f"{REF}.megatron.param_offload", True))),
          LORA_BF16_MOVE)


def saving_moves(values: Mapping, target: Mapping) -> list[Move]:
    """One move per knob that ``target`` sets differently from ``values`` (a seed of the search, in words)."""
    out, joined = [], set()
    # knobs of several keys, one move each: taken back whole by the pruning, never half (the CPU optimizer's
    # fraction without its switch; Megatron's param offload without the reference's, which verl's YAML makes follow
    # the actor's: megatron_ref.yaml param_offload: ${oc.select:actor_rollout_ref.actor.megatron.param_offload,False})
    for move in _WHOLE:
        keys = dict(move.changes)
        if set(keys) <= joined:
            continue
        if all(target.get(k) == v for k, v in keys.items()) and not all(values.get(k) == v for k, v in keys.items()):
            out.append(move)
            joined |= set(keys)
    for key, want in target.items():
        have = values.get(key)
        if have == want or key in joined:
            continue
        name = _NAMES.get(key, key.rsplit(".", 1)[-1])
        if isinstance(want, bool):
            out.append(Move(name if want else f"no {name}", ((key, want),)))
        else:
            out.append(turn(name, _shown(have), _shown(want), ((key, want),)))
    return out
