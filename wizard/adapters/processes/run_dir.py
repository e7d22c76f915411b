"""A local run's folder as the launcher keeps it: made (an earlier run's files kept as backups), the exact command
written beside the log, the file logger's JSONL followed as it grows; and whether a model path is a local folder
(the launch turns Hugging Face offline mode on for it). ``launcher`` starts and stops the run's processes."""

from __future__ import annotations

import os
from pathlib import Path

from wizard.adapters.files.disk import backup_path, write_atomic
from wizard.core.run import COMMAND, LOG, METRICS

EARLIER = ("run.json", "gpus.csv", "rollout", "validation", "report.md")


class LaunchError(RuntimeError):
    """The run could not be started; the message is one line."""


def prepare_run_dir(out: str | Path) -> Path:
    """The run directory, created; an earlier run's log, metrics, record and dumps there are kept as
    ``<name>.<time>.bak``."""
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        for name in (LOG, METRICS, *EARLIER):
            if (path / name).exists():
                (path / name).rename(backup_path(path / name))
    except OSError as exc:
        raise LaunchError(f"cannot use {path} as the run directory: {exc.strerror or exc}") from None
    return path


def write_command_file(run_dir: Path, rendered: str) -> Path:
    """The exact command, as a shell line, next to the log (secrets stay ``${NAME}`` references)."""
    path = run_dir / COMMAND
    write_atomic(path, "#!/usr/bin/env bash\n# written by verl-wizard launch: the exact command of this run\n"
                 + rendered + "\n", mode=0o755)
    return path


def model_is_local(path: str | None) -> bool:
    """A model path that is a folder here: the launch turns Hugging Face offline mode on for it."""
    return bool(path) and Path(os.path.expandvars(os.path.expanduser(path))).is_dir()


def tail_jsonl(path: str | Path, offset: int, state) -> tuple[int, list]:
    """Events from the new complete lines of the file logger's JSONL since ``offset`` (``state`` is a
    ``wizard.core.run.logparse.RunLog``); a line still being written waits for the next call."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(1 << 20)
    except OSError:
        return offset, []
    end = data.rfind(b"\n") + 1
    if end == 0:
        return offset, []
    events = []
    for line in data[:end].decode("utf-8", "replace").splitlines():
        events += state.feed_jsonl(line)
    return offset + end, events


__all__ = ["LaunchError", "model_is_local", "prepare_run_dir", "tail_jsonl", "write_command_file"]
