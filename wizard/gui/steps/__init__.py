"""The wizard's steps: one module per step (its page class), one entry per step here, in the window's order.

Adding a step is a module here with its page (a ``wizard.gui.widgets.page.Page`` whose texts come from
:func:`texts`) and its entry in ``STEPS``; the window (``wizard.gui.app``) builds its pages from this list
and knows no step's class. A page that listens to another step connects to it in ``Page.wire``.

The entries hold the texts and the page's module and class name, never the class: the window lists every
step and shows Start before the other steps' modules (and the checker behind them) are imported
(``WizardWindow(progressive=True)``, ``wizard.gui.loading``). Importing this package imports no page.
Shared parts of the pages live in the ``_``-modules: ``_form`` (FormPage), ``_lazy`` (LazyPage),
``_machine`` (the Environment and Hardware steps' tables).
"""

from __future__ import annotations

from wizard.gui.steps._step import Step

# The window's order (Run comes after Write: a smoke run uses the written files' overrides).
STEPS: tuple[Step, ...] = (
    Step("start", "StartPage", "Start", "What do you want to run?",
         "Start from a preset an expert would run, or import an existing verl script or YAML."),
    Step("environment", "EnvironmentPage", "Environment", "Where will verl run?",
         "The Python environment that has verl: versions of Python, torch, CUDA, vLLM and Ray checked against "
         "what verl 0.9.1 needs. Probing takes a few seconds and runs in the background."),
    Step("hardware", "HardwarePage", "Hardware", "Which GPUs?",
         "Detect this machine's GPUs and how they are linked, read a cluster spec, or ask a running Ray cluster. "
         "The plan is checked against what you choose."),
    Step("model", "ModelPage", "Model", "Which models?",
         "The policy (actor) to train; a critic for PPO/GAE; a reward model if rewards come from one."),
    Step("data", "DataPage", "Data", "Which data, in what batches?",
         "verl reads parquet with chat-format prompts; it loads the validation files too, always."),
    Step("algorithm", "AlgorithmPage", "Algorithm", "How does the policy learn?",
         "The advantage estimator decides whether a critic is trained and how many answers per prompt you need."),
    Step("rollout", "RolloutPage", "Rollout & training", "Generation and updates",
         "How answers are generated (vLLM/SGLang) and how the actor is updated; sizes are per GPU unless said."),
    Step("dataflow", "DataflowPage", "Dataflow", "What feeds what",
         "The stages of one training step and the data between them. For PPO, pick gae on Advantage, then link a "
         "critic's values into it; cut the KL link to drop the reference model. Every edit changes the verl keys behind it "
         "(and Ctrl+Z undoes it)."),
    Step("placement", "PlacementPage", "Placement", "What runs where",
         "Your GPUs with the memory each phase needs (generation, log-probs, update), the pools verl 0.9.1 "
         "builds and the roles on them. Drag a role to another pool; moves verl cannot run are refused with "
         "the reason."),
    Step("review", "ReviewPage", "Review", "Review",
         "The files verl-wizard will write, and every value this plan changes from verl's defaults. The findings "
         "panel says what verl 0.9.1 would reject and what it would only find later."),
    Step("write", "WritePage", "Write", "Write the files",
         "run.sh (verl overrides), config.yaml (for --config-path/--config-name) and plan.json. Files already "
         "there are kept as .bak copies."),
    Step("run", "RunPage", "Run", "Run a smoke test",
         "Start the plan on this machine for a few steps, follow its log, metrics and GPUs, and stop it cleanly. "
         "When it fails, the cause and the fix are shown above the log."),
)


def index(key: str) -> int:
    """The step's place in the window (0 for Start); KeyError for a key no step has."""
    for i, s in enumerate(STEPS):
        if s.key == key:
            return i
    raise KeyError(f"no step {key!r}; steps: {', '.join(s.key for s in STEPS)}")


def step(key: str) -> Step:
    return STEPS[index(key)]


def texts(key: str) -> tuple[str, str, str]:
    """A step's name in the list, title and subtitle: what its page class says (``step, title, subtitle``)."""
    return step(key).texts


__all__ = ["STEPS", "Step", "index", "step", "texts"]
