"""The notes a plan's report adds to its findings (wizard.usecases.plan_notes): memory not checked with its one
reason, a GPU count the machines cannot hold before an unknown GPU memory, and the --gpus sizing note."""

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.hardware import parse_gpu_spec
from wizard.usecases.assessment import assess_plan
from wizard.usecases.board import board_machine
from wizard.usecases.hardware import machines_for
from wizard.usecases.plan_notes import MEMORY_UNKNOWN, no_estimate_reason, plan_notes
from wizard.usecases.plans import preset_plan, sized_for_gpus


def assessed(gpus: str | None, per_node: int | None = None):
    spec = parse_gpu_spec(gpus) if gpus else None
    plan = preset_plan("grpo-1gpu-smoke", spec)
    if per_node is not None:
        plan = plan.model_copy(deep=True)
        plan.hardware.n_gpus_per_node = per_node
    machine = board_machine(plan, machines_for(spec) if spec is not None else None)
    return assess_plan(plan, gpus=spec, cluster=machine, advise=False)


def test_without_a_gpu_model_the_note_says_the_memory_is_unknown():
    a = assessed(None)
    notes = plan_notes(a.memory, a.findings)
    assert [(n.rule, n.severity, n.stage) for n in notes] == [(MEMORY_UNKNOWN, Severity.INFO, Stage.ADVICE)]
    assert notes[0].message.startswith("No memory estimate: the GPUs' memory is unknown")


def test_a_gpu_count_the_machines_cannot_hold_is_the_reason_before_an_unknown_memory():
    a = assessed("2xRTX-4090-24GB", per_node=4)  # two GPUs named, four a node asked for: no GPU placed at all
    # the memory plan says it first too: with no GPU placed no group has a capacity, which read as unknown memory
    assert a.memory.why.startswith("the config asks for 4 GPUs and the cluster has 2")
    why = no_estimate_reason(a.memory)
    assert why.startswith("the config asks for 4 GPUs and the cluster has 2")
    assert plan_notes(a.memory, a.findings)[0].message == f"No memory estimate: {why}"
    # the command line's own conflict (its --gpus against the sizes it sets) comes first where it has one
    assert no_estimate_reason(a.memory, "the config asks for 4 GPUs per node") == "the config asks for 4 GPUs per node"


def test_a_plan_judged_has_no_note_and_the_checks_own_note_is_not_said_twice():
    a = assessed("1xH100-80GB")
    assert a.memory.judged is not None and no_estimate_reason(a.memory) is None
    assert plan_notes(a.memory, a.findings) == []
    b = assessed(None)
    own = Finding(rule="memory.not_modelled", severity=Severity.INFO, stage=Stage.ADVICE, keys=[], message="x")
    assert plan_notes(b.memory, b.findings + [own]) == []


def test_the_gpus_sizing_note_comes_first_with_the_keys_it_added():
    sized = sized_for_gpus(["data.train_batch_size=16"], parse_gpu_spec("1xH100-80GB"))
    a = assessed(None)
    notes = plan_notes(a.memory, a.findings, sized)
    assert [n.rule for n in notes] == ["gpus.sized", MEMORY_UNKNOWN]
    assert notes[0].fix == "Set trainer.nnodes=1 trainer.n_gpus_per_node=1" and notes[0].message == sized.note
