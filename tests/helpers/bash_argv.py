"""Run a launch script under real bash with every external command stubbed, and capture
the argv that ``python3 -m verl.trainer.main_ppo`` would receive.

Only bash builtins run for real; ``python``/``python3`` are stubs that record their
arguments, and any other command is a no-op (``command_not_found_handle``), so
nothing is downloaded, installed or started.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

ENTRY = "verl.trainer.main_ppo"
FAKE_HOME = "/home/tester"

_STUB = """#!/bin/bash
for a in "$@"; do
  if [ "$a" = "verl.trainer.main_ppo" ]; then
    for b in "$@"; do printf '%s\\0' "$b"; done >> "$ARGV_OUT"
    printf '\\1' >> "$ARGV_OUT"
    exit 0
  fi
done
exit 0
"""


def bash_argv(
    script_text: str, env: dict[str, str] | None = None, timeout: float = 20, workdir: str | None = None
) -> list[str] | None:
    """The main_ppo argv (after ``-m verl.trainer.main_ppo``), or None when bash never reaches it."""
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        stub_bin = tmpdir / "bin"
        stub_bin.mkdir()
        for name in ("python", "python3", "python3.11", "python3.10"):
            (stub_bin / name).write_text(_STUB)
            (stub_bin / name).chmod(0o755)
        script = tmpdir / "script.sh"
        script.write_text(script_text)
        out = tmpdir / "argv.bin"
        out.touch()
        work = Path(workdir) if workdir else tmpdir / "work"
        work.mkdir(parents=True, exist_ok=True)
        run_env = {
            "PATH": str(stub_bin),
            "HOME": FAKE_HOME,
            "ARGV_OUT": str(out),
            "PYTHON": str(stub_bin / "python3"),
        }
        run_env.update(env or {})
        prelude = "command_not_found_handle() { return 0; }; source \"$0\""
        try:
            subprocess.run(
                ["/bin/bash", "-c", prelude, str(script)],
                cwd=work, env=run_env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return None
        data = out.read_bytes()
        if not data:
            return None
        first = data.split(b"\x01")[0]
        argv = [a.decode() for a in first.split(b"\x00")[:-1]]
        idx = argv.index(ENTRY)
        return argv[idx + 1 :]
