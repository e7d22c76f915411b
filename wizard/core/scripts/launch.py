"""Tell, from the words a command runs with, whether it launches verl's main_ppo and with what.

Transparent wrappers (``exec``, ``env VAR=…``, ``nohup``, ``time``, ``uv run``, ``conda run``,
``torchrun``, ``python -m torch.distributed.run``) are looked through; the interpreter may be any
``python``/``python3.x``, a path to one, or a variable (``"$PYTHON" -m …``). Schedulers and remote
runners (``srun``, ``ray job submit``, ``mpirun``, ``docker``…) are refused: the wizard writes the
script they would run, not the wrapper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ENTRY = "verl.trainer.main_ppo"
ENTRY_SCRIPT = "verl/trainer/main_ppo.py"
_PYTHON = re.compile(r"^(?:.*/)?(?:python|pypy)(?:\d+(?:\.\d+)*)?$")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
REMOTE = {"srun", "salloc", "sbatch", "mpirun", "mpiexec", "ray", "deepspeed", "accelerate", "docker", "podman",
          "kubectl", "ssh", "pdsh", "bsub", "qsub", "apptainer", "singularity", "parallel", "xargs"}
_SIMPLE_WRAPPERS = {"nohup": 0, "time": 0, "command": 0, "stdbuf": 0, "nice": 0, "setsid": 0, "exec": 0,
                    "ionice": 0, "chrt": 0, "taskset": 0}
_WRAPPER_VALUE_OPTS = {"nice": {"-n", "--adjustment"}, "exec": {"-a"}, "timeout": {"-s", "-k", "--signal",
                       "--kill-after"}, "ionice": {"-c", "-n", "-p"}}
_UV_VALUE_OPTS = {"--extra", "--with", "--with-requirements", "--with-editable", "--python", "-p", "--group",
                  "--only-group", "--no-group", "--package", "--project", "--directory", "--env-file", "--index",
                  "--default-index", "--index-url", "--extra-index-url", "--find-links", "-f", "--no-extra",
                  "--config-file", "--cache-dir", "--python-preference", "--color", "--script", "--module", "-m"}
_CONDA_VALUE_OPTS = {"-n", "--name", "-p", "--prefix", "--cwd", "--dev"}
_TORCHRUN_FLAGS = {"--standalone", "--no_python", "--no-python", "--run_path", "--run-path", "-m", "--module",
                   "--no-python", "--master-addr-local"}
_PY_VALUE_OPTS = {"-X", "-W", "--check-hash-based-pycs"}


@dataclass
class Command:
    """What a command line runs, once the wrappers are looked through."""

    kind: str  # "launch" (main_ppo), "other" (another verl/recipe entry), "remote" (srun & co), "command"
    program: str = ""
    module: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    via: list[str] = field(default_factory=list)
    probe: bool = False  # python -c CODE: a question to the machine, not a launch


def classify(argv: list[str], render) -> Command:
    """``render`` turns a value holding markers into the script's text (to match program names)."""
    env: dict[str, str] = {}
    via: list[str] = []
    i = _unwrap(argv, 0, env, via, render)
    rest = argv[i:]
    if not rest:
        return Command("command", via=via)
    prog = render(rest[0])
    base = prog.rsplit("/", 1)[-1]
    if base == "torchrun" or (len(rest) > 2 and rest[1] == "-m" and rest[2] in ("torch.distributed.run",
                                                                                "torch.distributed.launch")):
        return _torchrun(rest, base, env, via)
    if _PYTHON.match(base) or (len(rest) > 2 and rest[1] == "-m" and rest[2].startswith(("verl.", "recipe."))):
        if not _PYTHON.match(base):
            via.append(f"the interpreter {prog}")
        return _python(rest, 1, prog, env, via)
    if base in REMOTE and _mentions_verl(rest):
        return Command("remote", program=base, args=rest[1:], env=env, via=via)
    return Command("command", program=base, args=rest[1:], env=env, via=via)


def _unwrap(argv: list[str], i: int, env: dict, via: list, render) -> int:
    while i < len(argv):
        word = render(argv[i])
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if word == "env":
            via.append("env")
            i = _env(argv, i + 1, env)
        elif word == "timeout":
            via.append("timeout")
            i = _skip_options(argv, i + 1, _WRAPPER_VALUE_OPTS["timeout"]) + 1  # then the duration
        elif word in _SIMPLE_WRAPPERS:
            via.append(word)
            i = _skip_options(argv, i + 1, _WRAPPER_VALUE_OPTS.get(word, set()))
            if word == "taskset":
                i += 1  # the CPU mask
        elif word == "uv" and nxt == "run":
            via.append("uv run")
            i = _skip_options(argv, i + 2, _UV_VALUE_OPTS)
        elif word in ("conda", "mamba", "micromamba") and nxt == "run":
            via.append(f"{word} run")
            i = _skip_options(argv, i + 2, _CONDA_VALUE_OPTS)
        elif word in ("poetry", "pipenv", "pixi", "hatch", "pdm", "rye") and nxt == "run":
            via.append(f"{word} run")
            i = _skip_options(argv, i + 2, set())
        else:
            return i
    return i


def _env(argv: list[str], i: int, env: dict) -> int:
    while i < len(argv):
        word = argv[i]
        if word in ("-u", "--unset", "-C", "--chdir"):
            i += 2
        elif word.startswith("-") and word != "-":
            i += 1
        elif _ASSIGN.match(word):
            m = _ASSIGN.match(word)
            env[m.group(1)] = m.group(2)
            i += 1
        else:
            return i
    return i


def _skip_options(argv: list[str], i: int, value_opts: set[str]) -> int:
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return i + 1
        takes_value = argv[i] in value_opts
        i += 2 if takes_value else 1
    return i


def _python(rest: list[str], i: int, prog: str, env: dict, via: list) -> Command:
    while i < len(rest):
        word = rest[i]
        if word == "-m" or (word.startswith("-m") and len(word) > 2 and not word.startswith("--")):
            module = rest[i + 1] if word == "-m" and i + 1 < len(rest) else word[2:]
            args = rest[i + 2:] if word == "-m" else rest[i + 1:]
            return _entry(module, args, prog, env, via)
        if word == "-c" or (word.startswith("-c") and not word.startswith("--")):
            return Command("command", program=prog, args=rest[i:], env=env, via=via, probe=True)
        if word in _PY_VALUE_OPTS:
            i += 2
        elif word == "--":
            i += 1
            break
        elif word.startswith("-") and word != "-":
            i += 1
        else:
            break
    if i >= len(rest):
        return Command("command", program=prog, env=env, via=via)
    script = rest[i]
    if script.endswith(ENTRY_SCRIPT) or script == "main_ppo.py":
        via.append(f"the file {script}")
        return Command("launch", program=prog, module=ENTRY, args=rest[i + 1:], env=env, via=via)
    if "verl/" in script or "recipe/" in script:
        return Command("other", program=prog, module=script, args=rest[i + 1:], env=env, via=via)
    return Command("command", program=prog, args=rest[i:], env=env, via=via)


def _torchrun(rest: list[str], base: str, env: dict, via: list) -> Command:
    via.append("torchrun")
    i = 1 if base == "torchrun" else 3
    module_flag = False
    while i < len(rest) and rest[i].startswith("-"):
        word = rest[i]
        if word in ("-m", "--module"):
            module_flag = True
            i += 1
        elif word in _TORCHRUN_FLAGS or "=" in word:
            i += 1
        else:
            i += 2
    if i >= len(rest):
        return Command("command", program="torchrun", env=env, via=via)
    if module_flag:
        return _entry(rest[i], rest[i + 1:], "torchrun", env, via)
    return _python(["python"] + rest[i:], 1, "torchrun", env, via)


def _entry(module: str, args: list[str], prog: str, env: dict, via: list) -> Command:
    if module == ENTRY:
        return Command("launch", program=prog, module=module, args=args, env=env, via=via)
    if module.startswith(("verl.", "recipe.", "verl_")):
        return Command("other", program=prog, module=module, args=args, env=env, via=via)
    return Command("command", program=prog, module=module, args=args, env=env, via=via)


def _mentions_verl(words: list[str]) -> bool:
    return any("verl." in w or "main_ppo" in w or ENTRY_SCRIPT in w for w in words)


def looks_like_override(word: str) -> bool:
    return bool(re.match(r"^[+~]{0,2}[A-Za-z_][\w]*(\.[\w@]+)+=", word))
