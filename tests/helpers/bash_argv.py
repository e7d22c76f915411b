"""Run a launch script under real bash with every external command stubbed, and capture
the argv that ``python3 -m verl.trainer.main_ppo`` would receive.

Only bash builtins run for real; ``python``/``python3`` are stubs that record their
arguments, and any other command is a no-op (``command_not_found_handle``), so
nothing is downloaded, installed or started. The stubs model a CUDA machine:
``python3 -c CODE`` (a probe such as ``import torch_npu``) fails, as it does where torch_npu
is not installed; ``uv run``, ``env``, ``torchrun``, ``nohup`` and ``timeout`` run the command they
wrap; ``dirname``/``basename`` are the real coreutils (pure text); ``ulimit`` succeeds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ENTRY = "verl.trainer.main_ppo"
FAKE_HOME = "/home/tester"

_PYTHON = """#!/bin/bash
for a in "$@"; do
  if [ "$a" = "-c" ]; then exit 1; fi
  if [ "$a" = "verl.trainer.main_ppo" ] || [ "${a%verl/trainer/main_ppo.py}" != "$a" ]; then
    for b in "$@"; do printf '%s\\0' "$b"; done >> "$ARGV_OUT"
    printf '\\1' >> "$ARGV_OUT"
    exit 0
  fi
done
exit 0
"""
# uv run [options] CMD...: skip uv's options (those that take a value, then flags)
_UV = """#!/bin/bash
[ "$1" = run ] || exit 0
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --extra|--with|--python|-p|--group|--only-group|--package|--project|--directory|--env-file|--index) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
exec "$@"
"""
_ENV = """#!/bin/bash
while [ $# -gt 0 ]; do
  case "$1" in
    -u|--unset|-C|--chdir) shift 2 ;;
    -*) shift ;;
    *=*) export "$1"; shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] && exec "$@"
exit 0
"""
_TORCHRUN = """#!/bin/bash
module=""
while [ $# -gt 0 ]; do
  case "$1" in
    -m|--module) module=1; shift ;;
    --standalone|--no_python|--no-python) shift ;;
    --*=*) shift ;;
    -*) shift 2 ;;
    *) break ;;
  esac
done
if [ -n "$module" ]; then exec python3 -m "$@"; else exec python3 "$@"; fi
"""
_WRAP = """#!/bin/bash
exec "$@"
"""
_TIMEOUT = """#!/bin/bash
while [ $# -gt 0 ]; do case "$1" in -s|-k) shift 2 ;; -*) shift ;; *) break ;; esac; done
shift
exec "$@"
"""
STUBS = {"uv": _UV, "env": _ENV, "torchrun": _TORCHRUN, "nohup": _WRAP, "timeout": _TIMEOUT}
PURE = ("dirname", "basename")


def bash_argv(
    script_text: str, env: dict[str, str] | None = None, timeout: float = 20, workdir: str | None = None,
    script_path: str | None = None,
) -> list[str] | None:
    """The main_ppo argv (after ``-m verl.trainer.main_ppo``), or None when bash never reaches it.
    ``script_path``: where to write the script (files next to it are then there for it to source)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        stub_bin = tmpdir / "bin"
        stub_bin.mkdir()
        for name in ("python", "python3", "python3.11", "python3.10"):
            _write_exe(stub_bin / name, _PYTHON)
        for name, text in STUBS.items():
            _write_exe(stub_bin / name, text)
        for name in PURE:
            real = shutil.which(name, path="/usr/bin:/bin")
            if real:
                os.symlink(real, stub_bin / name)
        script = Path(script_path) if script_path else tmpdir / "script.sh"
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
        # ulimit -n 32768 needs a hard limit this test machine may not grant; a training node does
        prelude = "command_not_found_handle() { return 0; }; ulimit() { return 0; }; source \"$0\""
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
        idx = next(i for i, a in enumerate(argv) if a == ENTRY or a.endswith("verl/trainer/main_ppo.py"))
        return argv[idx + 1 :]


def _write_exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)
