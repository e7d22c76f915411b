"""What a rule sees: the composed config (with verl's defaults), what was set, the hardware."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from omegaconf import DictConfig, OmegaConf

from typing import TYPE_CHECKING

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.gpus import GpuSpec
from wizard.core.models import ModelFacts
from wizard.core.schema import SchemaVariant

if TYPE_CHECKING:
    from wizard.core.cluster import Cluster


class _Unresolvable:
    def __repr__(self) -> str:
        return "<unresolvable>"


UNRESOLVABLE = _Unresolvable()


@dataclass
class Context:
    cfg: DictConfig
    variant: SchemaVariant
    set_keys: set[str] = field(default_factory=set)
    gpus: GpuSpec | None = None
    # Facts of the models the config names, by role ("actor", "ref", "critic", "reward"), when known.
    models: Mapping[str, ModelFacts] = field(default_factory=dict)
    # The detected or planned machines (per-GPU memory, links), when known; ``gpus`` is its shape.
    cluster: "Cluster | None" = None
    _memo: dict = field(default_factory=dict, repr=False)

    def get(self, key: str, default=None):
        """The resolved value of ``key`` as verl would read it; UNRESOLVABLE if it cannot resolve."""
        memo_key = (key, default if isinstance(default, (int, str, bool, type(None))) else id(default))
        if memo_key not in self._memo:
            self._memo[memo_key] = self._get(key, default)
        return self._memo[memo_key]

    def _get(self, key: str, default=None):
        try:
            value = OmegaConf.select(self.cfg, key, default=default, throw_on_missing=False)
        except Exception:  # noqa: BLE001 - interpolation errors are reported by their own rule
            return UNRESOLVABLE
        if OmegaConf.is_config(value):
            return OmegaConf.to_container(value, resolve=True)
        return value

    def int(self, key: str) -> int | None:
        """The value if it is an int verl can do arithmetic with, else None."""
        value = self.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def num(self, key: str) -> float | None:
        value = self.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def missing(self, key: str) -> bool:
        try:
            return _is_missing(self.cfg, key) if "." in key else OmegaConf.is_missing(self.cfg, key)
        except Exception:  # noqa: BLE001
            return False

    # Derived facts, computed exactly as verl computes them.
    @property
    def n_gpus(self) -> int | None:
        per_node, nodes = self.int("trainer.n_gpus_per_node"), self.int("trainer.nnodes")
        return per_node * nodes if per_node is not None and nodes is not None else None

    @property
    def dynamic_bsz(self) -> bool:
        return bool(self.get("actor_rollout_ref.actor.use_dynamic_bsz"))

    @property
    def strategy(self):
        return self.get("actor_rollout_ref.actor.strategy")

    @property
    def need_ref(self) -> bool:
        """verl.trainer.ppo.utils.need_reference_policy."""
        return bool(self.get("algorithm.use_kl_in_reward", False) or self.get("actor_rollout_ref.actor.use_kl_loss"))

    @property
    def need_critic(self) -> bool:
        """verl.trainer.ppo.utils.need_critic."""
        enable = self.get("critic.enable")
        if enable is not None:
            return bool(enable)
        return self.get("algorithm.adv_estimator") == "gae"

    def is_set(self, key: str) -> bool:
        return key in self.set_keys


def _is_missing(cfg: DictConfig, key: str) -> bool:
    parent_key, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_key)
    return OmegaConf.is_config(parent) and leaf in parent.keys() and OmegaConf.is_missing(parent, leaf)


def finding(
    rule: str,
    severity: Severity,
    stage: Stage,
    keys: list[str],
    message: str,
    fix: str | None = None,
    fix_overrides: list[str] | None = None,
    fix_auto: bool = True,
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        stage=stage,
        keys=keys,
        message=message,
        fix=fix,
        fix_overrides=fix_overrides or [],
        fix_auto=fix_auto,
    )


def choices(values) -> str:
    return ", ".join(str(v) for v in values)
