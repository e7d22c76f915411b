"""The phases of one training step, as the memory estimate sizes them: one name each, in the order verl 0.9.1 runs
them (``RayPPOTrainer.fit``: engines start and the first weight sync, generation, the reward model, the old and
reference log-probs, the critic's update, the actor's update). Every output names them from here: the estimate's
titles, ``plan``'s table, the placement board's bars and legend, the memory findings."""

from __future__ import annotations

from enum import Enum


class PhaseName(str, Enum):
    LOAD = "load"
    WEIGHT_SYNC = "weight_sync"
    GENERATION = "generation"
    REWARD = "reward"
    OLD_LOG_PROB = "old_log_prob"
    REF_LOG_PROB = "ref_log_prob"
    CRITIC_UPDATE = "critic_update"
    ACTOR_UPDATE = "actor_update"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__

    @property
    def title(self) -> str:
        """In a sentence: "the old log-prob phase"."""
        return _WORDS[self][0]

    @property
    def label(self) -> str:
        """A table column (7 characters at most)."""
        return _WORDS[self][1]

    @property
    def tag(self) -> str:
        """A GPU tile's bar (4 characters at most)."""
        return _WORDS[self][2]


_WORDS = {
    PhaseName.LOAD: ("load (engines start)", "load", "load"),
    PhaseName.WEIGHT_SYNC: ("weight sync", "sync", "sync"),
    PhaseName.GENERATION: ("generation", "gen", "gen"),
    PhaseName.REWARD: ("reward model", "reward", "rm"),
    PhaseName.OLD_LOG_PROB: ("old log-prob", "logprob", "logp"),
    PhaseName.REF_LOG_PROB: ("ref log-prob", "ref", "ref"),
    PhaseName.CRITIC_UPDATE: ("critic update", "critic", "crit"),
    PhaseName.ACTOR_UPDATE: ("actor update", "update", "upd"),
}
PHASES: tuple[PhaseName, ...] = tuple(PhaseName)  # in step order


def phase_of(name: str) -> PhaseName | None:
    """The phase called ``name``, or None for a name the estimate does not use."""
    try:
        return PhaseName(name)
    except ValueError:
        return None


def step_index(name: str) -> int:
    """Where ``name`` comes in a step (unknown names last): the sort key of every phase list."""
    phase = phase_of(name)
    return PHASES.index(phase) if phase is not None else len(PHASES)
