"""Data files as the config names them: what verl's dataset reader accepts (utils/dataset/rl_dataset.py:169-178)."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding

FORMATS = (".parquet", ".json", ".jsonl")


def _paths(value) -> list[str]:
    return [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


@rule("data.file_format", Stage.STARTUP)
def file_format(ctx: RuleContext):
    """RLHFDataset reads .parquet, .json and .jsonl only, by the file name; anything else stops the TaskRunner."""
    if ctx.get("data.custom_cls.path"):
        return  # a custom dataset class reads its own files
    for key in ("data.train_files", "data.val_files"):
        for path in _paths(ctx.get(key)):
            if not path.endswith(FORMATS):
                yield finding(Severity.ERROR, [key],
                              f"{key} has {path!r}: verl reads .parquet, .json and .jsonl files only, and the "
                              f"TaskRunner stops loading it with: Unsupported file format: {path}",
                              "Convert it to parquet (verl-wizard data --help shows how) and point the key at it",
                              fix_auto=False)
