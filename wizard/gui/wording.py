"""The window's words for advice the core writes for the command line.

The rules, the catalogue and the memory plan say what to do once, in the words a terminal user acts on
(``--gpus 8xH100-80GB``, ``verl-wizard detect``). The window has no flags: it shows the same advice with the
field, button or step that does the same thing. Only the words change here; what a finding says is wrong, its
keys and its fix overrides are the core's.

Each entry is a pattern of the CLI wording and its window wording; a test drives the window through the findings
that carry them (no GPU model, an unknown model, a machine without GPUs) and fails on any ``--flag`` or
``verl-wizard`` left in what it shows.
"""

from __future__ import annotations

import re

from wizard.core.findings import Finding

START_GPUS = "the GPUs field of the Start step (e.g. 8xH100-80GB)"
HARDWARE_SPEC = "a cluster spec on the Hardware step"

_WINDOW_WORDS: tuple[tuple[str, str], ...] = (
    # the memory plan (wizard.core.memory), written for both front ends: the window keeps its own half
    (r"\s*\(--gpus \S+ or --cluster FILE on the command line; the GPUs field of the Start step or the Hardware step "
     r"in the window\)", f" ({START_GPUS}, or {HARDWARE_SPEC})"),
    # the memory plan's GPU count (wizard.core.memory: a config asking for more GPUs than the machines have)
    (r"size the config to the cluster \(trainer\.nnodes x trainer\.n_gpus_per_node\), or name the cluster it will "
     r"run on", "set Nodes and GPUs per node on the Hardware step to what the cluster has, or name the cluster it "
     f"will run on ({START_GPUS}, or {HARDWARE_SPEC})"),
    # the GPU catalogue (wizard.core.hardware): an unknown model with nothing close
    (r"; `verl-wizard detect --catalogue` lists them", "; the GPUs field offers the known models as you type"),
    # discovery without GPUs (wizard.core.hardware.topology)
    (r"plan for other hardware with --cluster FILE or --gpus \S+",
     f"plan for other hardware with {START_GPUS} or {HARDWARE_SPEC}"),
    (r"elsewhere plan with --cluster FILE or --gpus \S+", f"elsewhere plan with {START_GPUS} or {HARDWARE_SPEC}"),
    (r"the indices/UUIDs `verl-wizard detect` lists", "the indices/UUIDs the Hardware step lists"),
    (r"\(verl-wizard detect lists them\)", "(Detect this machine on the Hardware step lists them)"),
    (r"check with verl-wizard detect;", "check with Detect this machine on the Hardware step;"),
    # the environment probe (wizard.adapters.verl_env.doctor): the window's Python field, not an option
    (r"^--python (.+?): (no such file|not executable|is a folder|cannot run it)", r"The Python \1: \2"),
    # the data step (wizard.adapters.files.dataset)
    (r"verl-wizard data convert turns", "Convert a file… on the Data step turns"),
    # the run's triage (wizard.core.run)
    (r"\(verl-wizard doctor --python PATH checks it\)", "(the Environment step checks it)"),
    (r"`verl-wizard doctor --python PATH` in the run's environment prints it \(or `verl-wizard report --python "
     r"PATH`\)", "the Environment step checks the run's environment"),
    (r"verl-wizard check names the key it moved to", "the findings name the key it moved to"),
    (r"verl-wizard check and doctor catch", "the findings and the Environment step catch"),
    (r"the value verl-wizard plan says fits", "the value the Placement step says fits"),
    # verl's own composition (wizard.core.verl)
    (r"Run the verl pre-flight \(verl-wizard check --verl\) for an exact verdict",
     "For an exact verdict let verl compose it: a smoke run on the Run step"),
    (r" \(verl-wizard keys\)", ""),
    # the memory rules (wizard.core.check.rules.memory): the engine's share of a step, in words
    (r"but the batch sends ([\d,]+) at once",
     r"but one step puts \1 sequences on each replica at once (prompts × responses per prompt, shared by the "
     r"replicas, at most max_num_seqs each)"),
    # the advisor, which the window runs when asked (the Make it fit button)
    (r" \(verl-wizard plan prints them\)", " (the Make it fit button shows them)"),
    # the cluster launch material (wizard.core.cluster_launch): the Write step's Image field
    (r" and pass --image$", " and put its name in the Image field"),
    # data and rewards (wizard.core.data, wizard.core.reward)
    (r"`verl-wizard data convert [^`]*`", "Convert a file… on the Data step"),
    (r"`verl-wizard data reward [^`]*`", "Test the reward… on the Data step"),
    (r"run `verl-wizard data check FILE`", "Check the training file on the Data step"),
)
_COMPILED = tuple((re.compile(pattern), words) for pattern, words in _WINDOW_WORDS)
# The wizard's own command line in a text (another tool's command, e.g. ``hf download --local-dir``, is fine).
CLI_ADVICE = re.compile(r"(?<![\w-])--(?:gpus|cluster|set|python|verl|catalogue|preset|ray-address|gpus-per-node|fix"
                        r"|batch|format|image)\b|verl-wizard (?:detect|doctor|check|plan|keys|data|report|launch|generate)")


def window_text(text: str | None) -> str | None:
    """``text`` with its command-line advice in the window's words."""
    if not text:
        return text
    for pattern, words in _COMPILED:
        text = pattern.sub(words, text)
    return text


def window_finding(finding: Finding) -> Finding:
    """``finding`` as the window shows it (message and fix in the window's words; keys, overrides unchanged)."""
    message, fix = window_text(finding.message), window_text(finding.fix)
    if message == finding.message and fix == finding.fix:
        return finding
    return finding.model_copy(update={"message": message, "fix": fix})
