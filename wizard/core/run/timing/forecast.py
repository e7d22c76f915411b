"""How long the configured full run would take, and its GPU-hours, from a smoke run's steady steps.

verl's schedule (``trainer/ppo/v1/trainer_base.py``): ``steps_per_epoch = len(train_dataset) // train_batch_size``
(the dataloader drops the last partial batch; the size is the one after ``filter_overlong_prompts``, which verl
logs as "train dataset size: N"); the run takes ``trainer.total_training_steps`` steps when set, else
``steps_per_epoch × trainer.total_epochs``, and stops at whichever ends first. Validation runs before training when
``trainer.val_before_train`` (verl's default: true) and every ``trainer.test_freq`` steps and at the last step
when ``test_freq > 0``. Every assumption the figure rests on is stated with it. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.plan.model import Plan
from wizard.core.run.timing.steps import TimingSummary, fmt_s

VERL_EPOCHS = 30  # trainer.total_epochs default (ppo_trainer.yaml)
VERL_BATCH = 1024  # data.train_batch_size default
VERL_TEST_FREQ = -1
VERL_VAL_BEFORE_TRAIN = True


@dataclass
class Forecast:
    steps: int
    step_s: float  # the steady step of the smoke run
    training_s: float
    validations: int
    validation_s: float  # all validations together (0 when not measured)
    startup_s: float | None  # start to the first step, measured in the smoke run's log
    warmup_s: float  # what the first step took beyond a steady one
    total_s: float
    n_gpus: int | None
    schedule: str  # how the steps come about, in words
    assumptions: list[str] = field(default_factory=list)

    @property
    def gpu_hours(self) -> float | None:
        return self.total_s * self.n_gpus / 3600 if self.n_gpus else None

    def line(self) -> str:
        gpus = f" on {self.n_gpus} GPU{'s' if self.n_gpus != 1 else ''}" if self.n_gpus else ""
        hours = f" ({self.gpu_hours:.2g} GPU-hours)" if self.gpu_hours is not None else ""
        parts = [f"{fmt_s(self.training_s)} of training"]
        if self.validations and self.validation_s:
            parts.append(f"{fmt_s(self.validation_s)} of validation ({self.validations}×)")
        if self.startup_s:
            parts.append(f"{fmt_s(self.startup_s)} of start-up")
        if self.warmup_s:
            parts.append(f"{fmt_s(self.warmup_s)} of first-step warm-up")
        return (f"The full run: {self.steps} steps ({self.schedule}), about {fmt_s(self.total_s)}{gpus}{hours}: "
                + " + ".join(parts) + ".")

    def to_json(self) -> dict:
        return {**self.__dict__, "gpu_hours": self.gpu_hours, "line": self.line()}


@dataclass(frozen=True)
class Schedule:
    """The plan's schedule, with where each value came from."""

    batch: int
    epochs: int
    own_steps: int | None  # trainer.total_training_steps of the plan (None: unset, or not known)
    test_freq: int | None  # None: not known (the folder has only the smoke run's own value)
    val_before_train: bool | None
    n_gpus: int | None
    notes: tuple[str, ...] = ()


def schedule_of(plan: Plan, smoke_only: bool = False) -> Schedule:
    """``smoke_only``: the plan was read back from the smoke run's command, whose step count and validation are
    the smoke run's, not the plan's."""
    notes = []
    batch = plan.data.train_batch_size or VERL_BATCH
    if not plan.data.train_batch_size:
        notes.append(f"data.train_batch_size is verl's default {VERL_BATCH}")
    epochs = plan.trainer.total_epochs or VERL_EPOCHS
    if not plan.trainer.total_epochs:
        notes.append(f"trainer.total_epochs is verl's default {VERL_EPOCHS}")
    hw = plan.hardware
    gpus = (hw.nnodes or 1) * hw.n_gpus_per_node if hw.n_gpus_per_node else None
    if smoke_only:
        notes.append("this folder holds only the smoke run's command, so the plan's own "
                     "trainer.total_training_steps and validation settings are unknown: the steps come from the epochs")
        return Schedule(batch, epochs, None, None, None, gpus, tuple(notes))
    test_freq = plan.trainer.test_freq if plan.trainer.test_freq is not None else VERL_TEST_FREQ
    before = plan.trainer.val_before_train if plan.trainer.val_before_train is not None else VERL_VAL_BEFORE_TRAIN
    return Schedule(batch, epochs, plan.trainer.total_training_steps, test_freq, before, gpus, tuple(notes))


def _validations(steps: int, s: Schedule) -> int:
    count = 1 if s.val_before_train else 0
    if s.test_freq and s.test_freq > 0:
        count += steps // s.test_freq + (1 if steps % s.test_freq else 0)
    return count


def _steps(s: Schedule, dataset_size: int | None) -> tuple[int, str] | str:
    per_epoch = dataset_size // s.batch if dataset_size else None
    if per_epoch == 0:
        return f"the training set ({dataset_size} rows) is smaller than one batch ({s.batch}): verl runs no step"
    by_epochs = per_epoch * s.epochs if per_epoch is not None else None
    if s.own_steps and (by_epochs is None or s.own_steps <= by_epochs):
        return s.own_steps, f"trainer.total_training_steps={s.own_steps}"
    if by_epochs is None:
        return "the training set's size is not in the log yet (verl prints it once the data is loaded)"
    return by_epochs, f"{s.epochs} epoch{'s' if s.epochs != 1 else ''} × {per_epoch} steps of {s.batch} prompts " \
                      f"from {dataset_size} rows"


def forecast(summary: TimingSummary, schedule: Schedule, *, dataset_size: int | None,
             startup_s: float | None) -> Forecast | str:
    """The full run's time, or one line saying why there is none yet."""
    if not summary.step_s:
        return "no training step has finished yet"
    got = _steps(schedule, dataset_size)
    if isinstance(got, str):
        return got
    steps, how = got
    notes = [f"every step as long as the smoke run's steady step{'s' if len(summary.steady) > 1 else ''} "
             f"({fmt_s(summary.step_s)}, the median of step{'s' if len(summary.steady) > 1 else ''} "
             f"{', '.join(map(str, summary.steady))}); RL steps often grow as responses lengthen", *schedule.notes]
    warm = summary.warmup
    warmup_s = max(0.0, warm.total - summary.step_s) if warm is not None else 0.0
    if warm is not None:
        notes.append(f"the first step's warm-up ({fmt_s(warmup_s)} beyond a steady step) happens once")
    validations = _validations(steps, schedule) if schedule.test_freq is not None else 0
    val_s = (summary.validation_s or 0.0) * validations
    if validations and summary.validation_s is None:
        notes.append(f"{validations} validation{'s' if validations != 1 else ''} not counted: the smoke run "
                     "did not time one")
    if startup_s is None:
        notes.append("start-up not counted: the log has no timestamps to measure it")
    training = steps * summary.step_s
    total = training + val_s + (startup_s or 0.0) + warmup_s
    return Forecast(steps=steps, step_s=summary.step_s, training_s=training, validations=validations,
                    validation_s=val_s, startup_s=startup_s, warmup_s=warmup_s, total_s=total,
                    n_gpus=schedule.n_gpus or summary.n_gpus, schedule=how, assumptions=notes)


__all__ = ["Forecast", "Schedule", "schedule_of", "forecast"]


def predicted_forecast(step_s: float, schedule: Schedule, *, dataset_size: int | None) -> Forecast | str:
    """The full run's time before it starts: the schedule's steps x the predicted steady step (``wizard.core.
    steptime``); validation, start-up and the first step's warm-up are not predicted and say so."""
    got = _steps(schedule, dataset_size)
    if isinstance(got, str):
        if dataset_size is None and not schedule.own_steps:
            return "the number of steps needs the training set's size (data.train_files is not a readable local file)"
        return got
    steps, how = got
    notes = ["every step as long as the predicted steady step; RL steps often grow as responses lengthen",
             "start-up (engines and model load: 4-5 minutes in the H200 runs), the first step's warm-up and "
             "validation are not counted", *schedule.notes]
    training = steps * step_s
    return Forecast(steps=steps, step_s=step_s, training_s=training, validations=0, validation_s=0.0,
                    startup_s=None, warmup_s=0.0, total_s=training, n_gpus=schedule.n_gpus, schedule=how,
                    assumptions=notes)
