"""The V1 trainer's own checks when the TaskRunner builds it (trainer/ppo/v1/*.py), before any model loads.

They pass verl's pre-flight and stop the run inside the TaskRunner, after Ray has started; the trainer modes
(sync, colocate_async, separate_async) each add their own. The legacy trainer (trainer.use_v1=false) has other
checks: these rules stay silent there.
"""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.keys import R, RM

SA = "trainer.v1.separate_async"
HR = f"{SA}.hybrid_rollout"
S = "trainer.v1.sampler"
FG = "algorithm.filter_groups"


HYBRID = "trainer.hybrid_switch"  # trainer.separate_async reports the hybrid switch's own limits under this id


def _v1(ctx: RuleContext) -> bool:
    return bool(ctx.get("trainer.use_v1"))


def _err(keys: list[str], message: str, fix: str, overrides=(), auto=True, rule: str | None = None):
    return finding(Severity.ERROR, keys, message, fix, list(overrides), fix_auto=auto, rule=rule)


@rule("trainer.separate_async", Stage.STARTUP, also={HYBRID: Stage.STARTUP})
def separate_async(ctx: RuleContext):
    """PPOTrainerSeparateAsync.__init__ (trainer_separate_async.py:59-108)."""
    if not _v1(ctx) or ctx.get("trainer.v1.trainer_mode") != "separate_async":
        return
    tbs, step, mini = ctx.get("data.train_batch_size"), ctx.int(f"{SA}.parameter_sync_step"), ctx.int("actor_rollout_ref.actor.ppo_mini_batch_size")
    if None not in (tbs, step, mini) and tbs != step * mini:  # verl compares as Python does: '64' != 64
        yield _err(["data.train_batch_size", f"{SA}.parameter_sync_step",
                   "actor_rollout_ref.actor.ppo_mini_batch_size"],
                   f"separate_async trains parameter_sync_step x ppo_mini_batch_size = {step} x {mini} = {step * mini} "
                   f"prompts per step, but data.train_batch_size={tbs!r}; the TaskRunner stops with: train_batch_size must "
                   f"equal parameter_sync_step * ppo_mini_batch_size in separate async training",
                   f"Set data.train_batch_size={step * mini} (or {SA}.parameter_sync_step to train_batch_size / mini)",
                   [f"data.train_batch_size={step * mini}"])
    for key in (f"{R}.nnodes", f"{R}.n_gpus_per_node"):
        value = ctx.get(key)
        if isinstance(value, (int, float)) and value <= 0:
            name = key.rsplit(".", 1)[1]
            yield _err([key],
                       f"{key}={value}: separate_async runs the rollout on its own GPUs, sized by {R}.nnodes x "
                       f"{R}.n_gpus_per_node; the TaskRunner stops with: {name} must be > 0 in separate async training",
                       f"Set {key} to the rollout pool's size, e.g. {key}=1", [f"{key}=1"], auto=False)
    if ctx.get(f"{R}.checkpoint_engine.backend") == "naive":
        yield _err([f"{R}.checkpoint_engine.backend"],
                   "separate_async sends weights to rollout GPUs over the network, which the 'naive' checkpoint engine "
                   "cannot; the TaskRunner stops with: please use nccl/nixl/mooncake, etc. backend for separate async training",
                   f"Set {R}.checkpoint_engine.backend=nccl", [f"{R}.checkpoint_engine.backend=nccl"])
    if ctx.get(f"{RM}.enable") and not ctx.get(f"{RM}.enable_resource_pool"):
        yield _err([f"{RM}.enable_resource_pool"],
                   "Colocate reward model (reward.reward_model.enable_resource_pool=False) is not supported in separate "
                   "async mode, because the standalone rollout never pauses to free GPU memory.",
                   f"Set {RM}.enable_resource_pool=true with its own {RM}.n_gpus_per_node / nnodes",
                   [f"{RM}.enable_resource_pool=true"], auto=False)
    yield from _hybrid_switch(ctx)


def _hybrid_switch(ctx: RuleContext):
    """HybridRolloutSwitchConfig.__post_init__ (trainer/config/config.py:85-89) and the switch's own limits."""
    ratio, window = ctx.num(f"{HR}.switch_threshold_ratio"), ctx.num(f"{HR}.switch_cost_window_size")
    if ratio is not None and not 0.0 < ratio <= 1.0:
        yield _err([f"{HR}.switch_threshold_ratio"],
                   f"switch_threshold_ratio must be in (0, 1], got {ratio}", f"Set {HR}.switch_threshold_ratio=0.4",
                   [f"{HR}.switch_threshold_ratio=0.4"], rule=HYBRID)
    elif window is not None and window <= 0:
        yield _err([f"{HR}.switch_cost_window_size"],
                   f"switch_cost_window_size must be positive (got {window})", f"Set {HR}.switch_cost_window_size=3",
                   [f"{HR}.switch_cost_window_size=3"], rule=HYBRID)
    elif (ctx.get(f"{HR}.enable_switch") and ctx.get("actor_rollout_ref.hybrid_engine", True)
          and ctx.get(f"{R}.disaggregation.enabled")):
        yield _err([f"{HR}.enable_switch", f"{R}.disaggregation.enabled"],
                   "trainer.v1.separate_async.hybrid_rollout.enable_switch does not support rollout disaggregation: "
                   "step-boundary redistribution relies on paused replicas queueing new requests",
                   f"Turn one off: {HR}.enable_switch=false", [f"{HR}.enable_switch=false"], auto=False, rule=HYBRID)


@rule("trainer.replay_buffer", Stage.STARTUP)
def replay_buffer(ctx: RuleContext):
    """ReplayBuffer.__init__ (replay_buffer.py:165-199) and the DAPO filter it is given (trainer_base.py:187-212)."""
    if not _v1(ctx) or (ctx.get(f"{S}.custom_sampler.path") and ctx.get(f"{S}.custom_sampler.name")):
        return
    filtering = bool(ctx.get(f"{FG}.enable"))
    if filtering and not ctx.get(f"{FG}.metric"):
        yield _err([f"{FG}.metric"],
                   "algorithm.filter_groups.metric must be set when group filtering is enabled (it names the reward "
                   "field DAPO keeps or drops a group by)", f"Set {FG}.metric=acc (or reward)", [f"{FG}.metric=reward"], auto=False)
        return
    if filtering and ctx.get(f"{RM}.enable") and not ctx.get(f"{RM}.enable_resource_pool"):
        yield _err([FG + ".enable", f"{RM}.enable_resource_pool"],
                   "algorithm.filter_groups requires the reward metric at sampling time: use rule-based reward or "
                   "reward.reward_model.enable_resource_pool=True. A colocated reward model computes rewards only after "
                   "replay-buffer sampling.", f"Set {RM}.enable_resource_pool=true, or turn filter_groups off",
                   [f"{RM}.enable_resource_pool=true"], auto=False)
        return
    threshold = ctx.get(f"{S}.max_off_policy_threshold")
    if threshold is not None and not (isinstance(threshold, int) and threshold > 0):
        yield _err([f"{S}.max_off_policy_threshold"],
                   f"Invalid max off policy threshold: {threshold}, must be an integer greater than 0, or null to "
                   "disable off-policy version control", f"Set {S}.max_off_policy_threshold=8 (or null)",
                   [f"{S}.max_off_policy_threshold=8"])
    elif ctx.get(f"{S}.max_off_policy_strategy") not in ("drop", "wait"):
        value = ctx.get(f"{S}.max_off_policy_strategy")
        yield _err([f"{S}.max_off_policy_strategy"],
                   f"Invalid max off policy strategy: {value}, must be one of ['drop', 'wait']",
                   f"Set {S}.max_off_policy_strategy=drop", [f"{S}.max_off_policy_strategy=drop"])
    elif filtering and ctx.get("trainer.v1.trainer_mode") == "sync":
        inflight = ctx.get(f"{FG}.max_inflight_gen_batches", 1)
        if not isinstance(inflight, int) or inflight <= 0:
            yield _err([f"{FG}.max_inflight_gen_batches"],
                       f"max_inflight_gen_batches must be a positive integer (got {inflight!r})",
                       f"Set {FG}.max_inflight_gen_batches=2", [f"{FG}.max_inflight_gen_batches=2"])


@rule("trainer.kl_horizon", Stage.STARTUP)
def kl_horizon(ctx: RuleContext):
    """core_algos.get_kl_controller (core_algos.py:209): an adaptive in-reward KL needs a positive horizon."""
    if not _v1(ctx) or not ctx.get("algorithm.use_kl_in_reward") or ctx.get("algorithm.kl_ctrl.type") != "adaptive":
        return
    horizon = ctx.num("algorithm.kl_ctrl.horizon")
    if horizon is not None and not horizon > 0:
        yield _err(["algorithm.kl_ctrl.horizon"],
                   f"The adaptive KL controller adjusts kl_coef over algorithm.kl_ctrl.horizon steps, but horizon="
                   f"{horizon}; the TaskRunner stops with: horizon must be larger than 0. Got {horizon}",
                   "Set algorithm.kl_ctrl.horizon=10000 (verl's default)", ["algorithm.kl_ctrl.horizon=10000"])


@rule("trainer.pools", Stage.STARTUP)
def pools(ctx: RuleContext):
    """PPOTrainer._init_resource_pool_mgr (trainer_base.py:823-842): an own pool needs GPUs."""
    if not _v1(ctx):
        return
    wanted = []
    if ctx.get(f"{RM}.enable_resource_pool"):
        wanted.append((RM, "reward.reward_model.enable_resource_pool=true asks for a reward-model pool"))
    if ctx.get("distillation.enabled"):
        wanted.append(("distillation", "distillation.enabled=true asks for a teacher pool"))
    for prefix, why in wanted:
        for name in ("n_gpus_per_node", "nnodes"):
            value = ctx.num(f"{prefix}.{name}")
            if value is not None and value <= 0:
                yield _err([f"{prefix}.{name}"],
                           f"{why}, but {prefix}.{name}={value:g}; the TaskRunner stops with: config.{prefix}.{name} "
                           "must be greater than 0", f"Set {prefix}.{name}=1 (or more)", [f"{prefix}.{name}=1"], auto=False)
                break


@rule("trainer.setup", Stage.STARTUP, also={"trainer.callback_class": Stage.STARTUP,
                                                 "trainer.agent_loop_manager": Stage.STARTUP})
def setup(ctx: RuleContext):
    """Trainer setup: the checkpoint callback class (checkpoint_callback.py:79, import_utils.py:284), nsys worker
    options (trainer_base.py:296), resuming from a path (trainer_base.py:866)."""
    if not _v1(ctx):
        return
    for rule_id, key, what in (("trainer.callback_class", "trainer.checkpoint_callback_class", "CheckpointCallback"),
                               ("trainer.agent_loop_manager", f"{R}.agent.agent_loop_manager_class", "AgentLoopManager")):
        fqn = ctx.get(key)
        if isinstance(fqn, str) and fqn and "." not in fqn:
            yield _err([key],
                       f"Invalid {what} '{fqn}'. Expected fully qualified class name (e.g., 'mypackage.module.ClassName').",
                       f"Give the class with its module: {key}=mypackage.module.{fqn}", auto=False, rule=rule_id)
    steps = ctx.get("global_profiler.steps")
    if (steps is not None and ctx.get("global_profiler.tool") == "nsys"
            and ctx.get("global_profiler.global_tool_config.nsys.worker_nsight_options") is None):
        yield _err(["global_profiler.global_tool_config.nsys.worker_nsight_options"],
                   "worker_nsight_options must be set when using nsys with profile_steps",
                   "Keep verl's default global_profiler.global_tool_config.nsys.worker_nsight_options")
    if ctx.get("trainer.resume_mode") == "resume_path":
        path = ctx.get("trainer.resume_from_path")
        said = ("resume ckpt must be str type" if not isinstance(path, str)
                else "resume ckpt must specify the global_steps" if "global_step_" not in path else None)
        if said:
            yield _err(["trainer.resume_from_path"],
                       f"trainer.resume_mode=resume_path needs trainer.resume_from_path to be a checkpoint folder "
                       f"named global_step_N, but it is {path!r}; after loading every model verl stops with: {said}",
                       "Set trainer.resume_from_path=<checkpoints>/global_step_N, or trainer.resume_mode=auto",
                       auto=False)


@rule("batch.worker_dynamic", Stage.STARTUP)
def worker_dynamic(ctx: RuleContext):
    """engine_workers.py:616-634: the actor worker asserts the rollout's log-prob pass batches as the actor does."""
    a, r = "actor_rollout_ref.actor", R
    actor, rollout = ctx.get(f"{a}.use_dynamic_bsz"), ctx.get(f"{r}.log_prob_use_dynamic_bsz")
    if actor != rollout:
        yield _err([f"{a}.use_dynamic_bsz", f"{r}.log_prob_use_dynamic_bsz"],
                   f"actor.use_dynamic_bsz={actor} but rollout.log_prob_use_dynamic_bsz={rollout}: the actor worker "
                   "asserts they are equal and dies at startup with a bare AssertionError",
                   f"Set {r}.log_prob_use_dynamic_bsz={str(bool(actor)).lower()} (it follows the actor by default)",
                   [f"{r}.log_prob_use_dynamic_bsz={str(bool(actor)).lower()}"])
    elif actor:
        for key in (f"{r}.log_prob_max_token_len_per_gpu", f"{a}.ppo_max_token_len_per_gpu"):
            if ctx.get(key) is None:
                yield _err([key],
                           f"Dynamic batch size is on, which packs sequences up to {key} tokens per GPU, but it is "
                           "null; the actor worker dies at startup with a bare AssertionError",
                           f"Set {key}=16384 (tokens per GPU per forward)", [f"{key}=16384"])
