"""Rewards: how the reward workers find their manager and function, the DAPO manager's overlong penalty, and the
reward model's servers. All of it happens when the reward workers start, after verl's pre-flight passed."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.keys import MGR, RM

OB = "reward.reward_kwargs.overlong_buffer_cfg"


def _err(keys: list[str], message: str, fix: str, overrides=(), auto=True):
    return finding(Severity.ERROR, keys, message, fix, list(overrides), fix_auto=auto)


@rule("reward.loading", Stage.STARTUP)
def loading(ctx: RuleContext):
    """trainer/ppo/reward.py:70-108: a custom function needs a name; the manager source decides how it is found."""
    path = ctx.get("reward.custom_reward_function.path")
    if path and ctx.get("reward.custom_reward_function.name") is None:
        yield _err(["reward.custom_reward_function.name"],
                   f"reward.custom_reward_function.path={path!r} is set but its name is null: each reward worker asserts "
                   "a function name and dies at startup (a bare AssertionError)",
                   "Set reward.custom_reward_function.name=compute_score (the function in that file)",
                   ["reward.custom_reward_function.name=compute_score"], auto=False)
    source = ctx.get(f"{MGR}.source")
    if source == "importlib" and ctx.get(f"{MGR}.module.path") is None:
        yield _err([f"{MGR}.module.path"],
                   f"{MGR}.source=importlib loads the manager class from a file, but {MGR}.module.path is null; the "
                   "reward workers stop with: Module path is required when reward_manager_cfg.source='importlib'",
                   f"Set {MGR}.module.path=/abs/path/my_manager.py and {MGR}.name=<ClassName>", auto=False)
    elif source not in ("register", "importlib"):
        yield _err([f"{MGR}.source"],
                   f"Unknown reward manager source: {source} (verl knows register and importlib)",
                   f"Set {MGR}.source=register", [f"{MGR}.source=register"])


@rule("reward.dapo_overlong", Stage.STARTUP)
def dapo_overlong(ctx: RuleContext):
    """DAPORewardManager.__init__ (reward_manager/dapo.py:39-50): the overlong penalty's lengths."""
    if ctx.get(f"{MGR}.source") != "register" or ctx.get(f"{MGR}.name") != "dapo":
        return
    cfg = ctx.get(OB)
    if not isinstance(cfg, dict) or not cfg.get("enable"):
        return
    max_len, buffer = ctx.get("reward.reward_kwargs.max_resp_len"), cfg.get("len")
    if max_len is None:
        said, keys, fix = (f"max_resp_len must be provided if overlong_buffer_cfg={cfg!r}, but got None",
                           ["reward.reward_kwargs.max_resp_len"], "Set +reward.reward_kwargs.max_resp_len to "
                           "data.max_response_length")
    elif isinstance(max_len, (int, float)) and isinstance(buffer, (int, float)) and max_len < buffer:
        said, keys, fix = (f"max_resp_len must be larger than overlong_buffer.len ({max_len} < {buffer})",
                           ["reward.reward_kwargs.max_resp_len", f"{OB}.len"], f"Lower {OB}.len below {max_len}")
    elif isinstance(buffer, (int, float)) and buffer <= 0:
        said, keys, fix = (f"overlong_buffer.len must be positive when overlong penalty is enabled,but got {buffer}.",
                           [f"{OB}.len"], f"Set {OB}.len (tokens before max_resp_len where the penalty starts), or "
                           f"{OB}.enable=false")
    else:
        return
    yield _err(keys, f"The DAPO reward manager's overlong penalty is on; every reward worker "
               f"stops at startup with: {said}", fix, auto=False)


@rule("reward.model_servers", Stage.STARTUP)
def model_servers(ctx: RuleContext):
    """RewardModelManager.__init__ (experimental/reward_loop/reward_model.py:47): the reward model's servers need its
    tokenizer."""
    if not ctx.get(f"{RM}.enable"):
        return
    # replicas vs the pool's GPUs (reward_model.py:63): placement.reward_groups, which lays the replicas out
    if ctx.get(f"{RM}.rollout.skip_tokenizer_init") is not False:
        yield _err([f"{RM}.rollout.skip_tokenizer_init"],
                   f"{RM}.rollout.skip_tokenizer_init={ctx.get(f'{RM}.rollout.skip_tokenizer_init')!r}: verl asserts it "
                   "is exactly False (Reward model should not skip tokenizer init.)",
                   f"Set {RM}.rollout.skip_tokenizer_init=false", [f"{RM}.rollout.skip_tokenizer_init=false"])
