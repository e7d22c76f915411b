"""The wizard's steps in order: name in the step list, page title, one-line subtitle.

Kept apart from the pages so the window can list every step (and show the Start step) before the
modules behind the other steps are imported: see ``WizardWindow(progressive=True)``.
"""

from __future__ import annotations

START = ("Start", "What do you want to run?",
         "Start from a preset an expert would run, or import an existing verl script or YAML.")
ENVIRONMENT = ("Environment", "Where will verl run?",
               "The Python environment that has verl: versions of Python, torch, CUDA, vLLM and Ray checked against "
               "what verl 0.9.1 needs. Probing takes a few seconds and runs in the background.")
HARDWARE = ("Hardware", "Which GPUs?",
            "Detect this machine's GPUs and how they are linked, read a cluster spec, or ask a running Ray cluster. "
            "The plan is checked against what you choose.")
MODEL = ("Model", "Which models?",
         "The policy (actor) to train; a critic for PPO/GAE; a reward model if rewards come from one.")
DATA = ("Data", "Which data, in what batches?",
        "verl reads parquet with chat-format prompts; it loads the validation files too, always.")
ALGORITHM = ("Algorithm", "How does the policy learn?",
             "The advantage estimator decides whether a critic is trained and how many answers per prompt you need.")
ROLLOUT = ("Rollout & training", "Generation and updates",
           "How answers are generated (vLLM/SGLang) and how the actor is updated; sizes are per GPU unless said.")
DATAFLOW = ("Dataflow", "What feeds what",
            "The stages of one training step and the data between them. Link a critic's values into the advantage "
            "for PPO/GAE; cut the KL link to drop the reference model. Every edit changes the verl keys behind it "
            "(and Ctrl+Z undoes it).")
PLACEMENT = ("Placement", "What runs where",
             "Your GPUs with the memory each phase needs (generation, log-probs, update), the pools verl 0.9.1 "
             "builds and the roles on them. Drag a role to another pool; moves verl cannot run are refused with "
             "the reason.")
REVIEW = ("Review", "Review",
          "The files verl-wizard will write, and every value this plan changes from verl's defaults. The findings "
          "panel says what verl 0.9.1 would reject and what it would only find later.")
WRITE = ("Write", "Write the files",
         "run.sh (verl overrides), config.yaml (for --config-path/--config-name) and plan.json. Files already "
         "there are kept as .bak copies.")
RUN = ("Run", "Run a smoke test",
       "Start the plan on this machine for a few steps, follow its log, metrics and GPUs, and stop it cleanly. "
       "When it fails, the cause and the fix are shown above the log.")

# The window's order (Run comes after Write: a smoke run uses the written files' overrides).
STEPS = (START, ENVIRONMENT, HARDWARE, MODEL, DATA, ALGORITHM, ROLLOUT, DATAFLOW, PLACEMENT, REVIEW, WRITE, RUN)
