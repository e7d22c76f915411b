"""What the target Python environment must hold for this config, beyond the packages the doctor checks.

The environment's facts come in as data (``RuleContext.environment``, from the doctor's probe); without them a
rule says what the environment will need rather than whether it has it.
"""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding

CRITIC_KEYS = ["algorithm.adv_estimator", "critic.enable"]
WHY = ("verl 0.9.1 loads the critic through load_valuehead_model (verl/utils/model.py), which passes "
       "attn_implementation=\"flash_attention_2\" itself whatever override_config says, and without flash-attn it "
       "stops with \"... is not a value head model, please install trl to make it valid\"")
INSTALL = "pip install flash-attn==2.8.3 --no-build-isolation (a build for the environment's torch and CUDA)"


@rule("env.flash_attn_critic", Stage.ADVICE)
def critic_needs_flash_attn(ctx: RuleContext):
    """A plan with a critic (GAE, critic.enable) needs flash-attn where it runs; SDPA cannot stand in for it."""
    if not ctx.need_critic:
        return
    env = ctx.environment
    if env is not None and env.flash_attn is False:
        where = f" ({env.python})" if env.python else ""
        yield finding(Severity.ERROR, CRITIC_KEYS,
                      f"This plan trains a critic, and flash-attn does not import in the run's Python{where}: {WHY}",
                      INSTALL, fix_auto=False)
    elif env is None or env.flash_attn is None:
        yield finding(Severity.INFO, CRITIC_KEYS,
                      f"This plan trains a critic, so the environment that runs it needs flash-attn: {WHY}",
                      f"Check the environment with `verl-wizard doctor --deep`; if flash-attn is missing: {INSTALL}",
                      fix_auto=False)
