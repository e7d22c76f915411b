"""verl's own pre-flight, run in the target Python (where verl is installed).

Reads JSON lines from stdin, one case each::

    {"id": "a", "overrides": ["k=v", ...], "config_name": "ppo_trainer",
     "config_dir": null, "return_config": false}

and writes one JSON line per case::

    {"id": "a", "ok": true|false, "stage": "compose|preflight|startup"|null,
     "error_type": "...", "message": "...", "config": {...}?}

What it runs is what ``verl.trainer.main_ppo`` runs before Ray (Hydra compose,
``validate_config`` with ``need_reference_policy``/``need_critic``), plus the
config dataclasses verl only builds when workers start (rollout, algorithm),
which are safe to build on a CPU. Standalone: verl-wizard need not be installed here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import traceback
import warnings


def _config_dir() -> str:
    spec = importlib.util.find_spec("verl")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("verl is not installed in this Python")
    return os.path.join(os.path.dirname(spec.origin), "trainer", "config")


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


class _Hydra:
    """Hydra, kept initialised across cases.

    Composing re-reads ~40 YAML files each time. Hydra composes in two steps, the
    defaults list and then ``_apply_overrides_to_config`` on the result; when a case
    has only value overrides (no config-group choice), the first step is the same for
    every case, so it is done once per config and the second step, Hydra's own, runs
    on a copy. Cases with a group override (model_engine=...) are composed in full.
    """

    GROUPS = ("model_engine", "actor", "ref", "critic", "rollout", "data", "model", "reward", "algorithm",
              "distillation", "transfer_queue", "engine", "optim", "profiler", "npu_profile")

    def __init__(self) -> None:
        self.stack = contextlib.ExitStack()
        self.config_dir: str | None = None
        self.bases: dict[str, object] = {}

    def compose(self, config_dir: str, config_name: str, overrides: list[str]):
        import pickle

        from hydra import compose, initialize_config_dir
        from hydra._internal.config_loader_impl import ConfigLoaderImpl
        from hydra.core.override_parser.overrides_parser import OverridesParser

        config_dir = os.path.abspath(config_dir)
        if config_dir != self.config_dir:
            self.stack.close()
            self.stack = contextlib.ExitStack()
            self.stack.enter_context(initialize_config_dir(config_dir=config_dir, version_base=None))
            self.config_dir = config_dir
            self.bases = {}
        if os.environ.get("VERL_WIZARD_PROBE_FULL_COMPOSE"):
            return compose(config_name=config_name, overrides=overrides)
        parsed = OverridesParser.create().parse_overrides(overrides)
        if any(o.is_sweep_override() or o.key_or_group.split("@")[0] in self.GROUPS and "." not in o.key_or_group
               for o in parsed):
            return compose(config_name=config_name, overrides=overrides)
        if config_name not in self.bases:  # pickled: unpickling is the fastest full copy of a DictConfig
            self.bases[config_name] = pickle.dumps(compose(config_name=config_name, overrides=[]))
        cfg = pickle.loads(self.bases[config_name])
        ConfigLoaderImpl._apply_overrides_to_config(parsed, cfg)
        return cfg


def _stand_ins() -> None:
    """A check runs verl's checks, not the user's code: the classes and files a config names (checkpoint callback,
    custom sampler, reward manager or function) are stood in for after verl's own checks of their names, so nothing
    of the user's is imported. Whether those import where the run happens is verl's startup, not this probe's."""
    import verl.trainer.ppo.checkpoint_callback as callback
    import verl.trainer.ppo.v1.trainer_base as trainer_base
    import verl.utils.import_utils as import_utils

    real_fqn = callback.load_class_from_fqn

    def class_from_fqn(fqn: str, description: str = "class"):
        return real_fqn(fqn, description) if "." not in fqn else callback.CheckpointCallback  # verl's own ValueError

    callback.load_class_from_fqn = class_from_fqn
    trainer_base.load_extern_type = lambda path, name: trainer_base.ReplayBufferAsync
    import_utils.load_extern_object = lambda module_path, object_name: (lambda *a, **k: 0.0)


def startup(cfg, to_dataclass, need_reference_policy) -> None:
    """What verl runs when the TaskRunner and its workers start, before any model is loaded, that a CPU can run:
    verl's own code, in verl's order (main_ppo.py:133-150, trainer_base.py:120-394, engine_workers.py:540-679)."""
    to_dataclass(cfg.actor_rollout_ref.rollout)  # each rollout replica and worker (replica.py:104)
    if not cfg.trainer.get("use_v1", True):
        return
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls
    from verl.trainer.ppo.v1 import get_trainer_cls

    trainer = get_trainer_cls(cfg.trainer.v1.trainer_mode)(cfg)  # the trainer's __init__: modes, KL, replay buffer
    trainer._init_resource_pool_mgr()  # trainer_base.py:788: reward and teacher pools
    if trainer.use_teacher_policy:
        to_dataclass(cfg.distillation)  # trainer_base.py:360
    to_dataclass(cfg.actor_rollout_ref.rollout.checkpoint_engine)  # trainer_base.py:381
    if cfg.reward.reward_model.enable:
        to_dataclass(cfg.reward.reward_model.rollout)  # the reward model's replicas (replica.py:104)
    resolve_reward_manager_cls(cfg)  # each reward worker (trainer/ppo/reward.py:89)
    get_custom_reward_fn(cfg)
    if need_reference_policy(cfg) and not _ref_in_actor(cfg):
        _build_ref(cfg, to_dataclass)


def _ref_in_actor(cfg) -> bool:
    """trainer_base.py:805-808: with LoRA the actor is its own reference; no reference worker."""
    model = cfg.actor_rollout_ref.model
    rank = model.get("lora", {}).get("rank", 0)
    if rank <= 0:
        rank = model.get("lora_rank", 0)
    return rank > 0 or model.get("lora_adapter_path") is not None


def _build_ref(cfg, to_dataclass) -> None:
    """engine_workers.py:543-553, verl's lines: the reference worker renames its keys, then builds ActorConfig."""
    import copy

    from omegaconf import open_dict

    config = copy.deepcopy(cfg).actor_rollout_ref
    with open_dict(config.ref):
        config.ref.ppo_mini_batch_size = config.actor.ppo_mini_batch_size
        config.ref.ppo_micro_batch_size = config.ref.pop("log_prob_micro_batch_size", None)
        config.ref.ppo_micro_batch_size_per_gpu = config.ref.pop("log_prob_micro_batch_size_per_gpu", None)
        config.ref.use_dynamic_bsz = config.ref.pop("log_prob_use_dynamic_bsz", False)
        config.ref.ppo_max_token_len_per_gpu = config.ref.pop("log_prob_max_token_len_per_gpu", None)
    to_dataclass(config.ref)


def run_case(case: dict, default_dir: str, hydra: _Hydra) -> dict:
    from omegaconf import OmegaConf

    out = {"id": case.get("id"), "ok": True, "stage": None, "error_type": None, "message": None}
    config_dir = case.get("config_dir") or default_dir
    stage = "compose"
    try:
        cfg = hydra.compose(config_dir, case.get("config_name") or "ppo_trainer", list(case.get("overrides", [])))
        if case.get("return_config"):
            out["config"] = OmegaConf.to_container(cfg, resolve=False)
        stage = "preflight"
        from verl.trainer.ppo.utils import need_critic, need_reference_policy
        from verl.utils.config import omega_conf_to_dataclass, validate_config

        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
        stage = "startup"
        startup(cfg, omega_conf_to_dataclass, need_reference_policy)
    except Exception as exc:  # noqa: BLE001 - every failure is a verdict to report
        out.update(ok=False, stage=stage, error_type=type(exc).__name__, message=_message(exc))
        if os.environ.get("VERL_WIZARD_PROBE_TRACE"):
            out["traceback"] = traceback.format_exc()
    return out


def main() -> int:
    warnings.filterwarnings("ignore")
    real_stdout = sys.stdout
    try:
        default_dir = _config_dir()
    except ModuleNotFoundError as exc:
        real_stdout.write(json.dumps({"fatal": str(exc)}) + "\n")
        return 3
    with contextlib.redirect_stdout(sys.stderr):  # verl prints; stdout carries only our JSON
        try:
            import verl  # noqa: F401 - import once, outside the per-case timing
        except Exception as exc:  # noqa: BLE001
            real_stdout.write(json.dumps({"fatal": f"import verl failed: {_message(exc)}"}) + "\n")
            return 3
        try:
            _stand_ins()
        except Exception:  # noqa: BLE001 - a verl without these modules: startup() reports what fails
            pass
        hydra = _Hydra()
        for line in sys.stdin:
            if not line.strip():
                continue
            result = run_case(json.loads(line), default_dir, hydra)
            real_stdout.write(json.dumps(result, default=str) + "\n")
            real_stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
