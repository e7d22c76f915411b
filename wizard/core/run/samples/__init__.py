"""The generations a run dumped (``trainer.rollout_data_dir``), read and judged.

``dump`` reads verl's per-step JSONL into ``Sample``s (and holds the one search and sort the GUI and CLI use);
``checks`` flags each answer and each GRPO group; ``verdict`` says what a step's flags mean, in one line and as
findings with the numbers. Pure: lines in, samples and verdicts out.
"""
