"""On the real verl example scripts, the wizard's early verdict is verl's own.

Model paths are pointed at a tiny local model (nothing can be downloaded here); scripts that
compose their own --config-path configs are judged only where that config is verl's.
"""

from tests.conformance.test_verl_parity import _wizard_stage
from tests.conftest import SCRIPTS
from wizard.adapters.verl_preflight import run_preflight
from wizard.core.verl.compose import CONFIG_NAME_ENGINES
from wizard.core.scripts.reader import ScriptError, read_launch_script

MODEL_KEYS = ("actor_rollout_ref.model.path", "critic.model.path", "reward.reward_model.model_path")


def test_verdicts_on_the_real_scripts_match_verl(tiny_model, check):
    cases, skipped = [], []
    for path in sorted(SCRIPTS.glob("*.sh")):
        try:
            script = read_launch_script(path.read_text())
        except ScriptError:
            skipped.append(path.name)
            continue
        if script.config_name not in CONFIG_NAME_ENGINES or script.config_path not in (None, "config", "./config"):
            skipped.append(path.name)
            continue
        overrides = [a for a in script.args if not a.split("=", 1)[0].lstrip("+") in MODEL_KEYS]
        overrides += [f"{k}={tiny_model}" for k in MODEL_KEYS[:2]]
        cases.append((path.name, script.config_name, overrides))
    verdicts = run_preflight([{"id": n, "config_name": c, "overrides": o} for n, c, o in cases])
    disagreements, needs_vllm = [], []
    for (name, config_name, overrides), verl in zip(cases, verdicts):
        if "vllm version None not supported" in (verl["message"] or ""):
            # LoRA + vLLM: verl asks vLLM for its allowed ranks, and vLLM cannot be installed here
            needs_vllm.append(name)
            continue
        mine = _wizard_stage(check(overrides, config_name=config_name).findings)
        theirs = None if verl["ok"] else verl["stage"]
        if mine != theirs:
            disagreements.append(f"{name}: wizard={mine} verl={theirs} ({verl['error_type']}: {verl['message']})")
    print(f"\n{len(cases) - len(needs_vllm)} real scripts judged by both, {len(needs_vllm)} need vLLM to judge, "
          f"{len(skipped)} skipped; "
          f"verl rejected {sum(not v['ok'] for v in verdicts)}")
    assert len(cases) - len(needs_vllm) >= 55 and len(needs_vllm) <= 5
    assert not disagreements, "\n".join(disagreements)
