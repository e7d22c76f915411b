"""Find the Python environments on this machine that could run verl, without running any of them.

The desktop bundle holds no torch and no verl: verl runs in the user's own environment, and
``verl-wizard doctor`` (and everything that runs a probe) needs its Python. Newcomers rarely know the
path, so the usual places are looked at: the active venv (``$VIRTUAL_ENV``), the active conda env
(``$CONDA_PREFIX``), ``./.venv``, conda's list of environments (``~/.conda/environments.txt``) and the
usual conda installs (``~/miniconda3``, ``~/anaconda3``, ``~/miniforge3``, ``~/mambaforge``), ``~/.venvs/*``,
pyenv's versions and ``python3`` on PATH.

Discovery must be cheap (it runs before every doctor without ``--python``): nothing is started and
nothing is imported; verl is recognised by its files in site-packages (``verl-X.Y.Z.dist-info`` gives
the version). Inside the bundle its own program is never offered as a Python.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from wizard.adapters.files.bundle import bundle_executable, bundle_root, is_frozen

VERL = "0.9.1"
PYTHON_OK = ((3, 10), (3, 12))  # verl 0.9.1's Requires-Python: >=3.10,<3.13
CONDA_ROOTS = ("miniconda3", "anaconda3", "miniforge3", "mambaforge")
_DIST_INFO = re.compile(r"^verl-(\d[^-]*)\.dist-info$")
_PYDIR = re.compile(r"^python(\d+)\.(\d+)$")


@dataclass(frozen=True)
class PythonEnv:
    """One candidate: the Python to run, the environment folder it belongs to, and what was seen there."""

    python: str
    prefix: str
    origin: str  # why it is a candidate, in words: "active venv ($VIRTUAL_ENV)", "~/.venvs", ...
    verl: str | None  # the verl version found in its site-packages; None: no verl there
    python_version: str | None  # "3.11", from the lib/pythonX.Y folder; None: not known without running it

    @property
    def has_verl(self) -> bool:
        return self.verl is not None

    @property
    def python_ok(self) -> bool | None:
        """Inside verl's Python range? None when the version is not known."""
        if self.python_version is None:
            return None
        major, minor = (int(x) for x in self.python_version.split(".")[:2])
        return PYTHON_OK[0] <= (major, minor) <= PYTHON_OK[1]

    def rank(self) -> tuple[int, int]:
        """Lower is better: verl 0.9.1 first, then another verl, then none; a Python verl refuses last."""
        verl = 0 if self.verl == VERL else 1 if self.verl else 2
        return verl, 1 if self.python_ok is False else 0

    def summary(self) -> str:
        verl = f"verl {self.verl}" if self.verl else "no verl"
        py = f"Python {self.python_version}" if self.python_version else "Python ?"
        if self.python_ok is False:
            py += " (verl needs 3.10-3.12)"
        return f"{verl}, {py}"

    def to_json(self) -> dict:
        return {"python": self.python, "prefix": self.prefix, "origin": self.origin, "verl": self.verl,
                "python_version": self.python_version}


# ------------------------------------------------------------------------------------------------
# Discovery


def discover(include_self: bool | None = None, cwd: str | os.PathLike | None = None,
             which: Callable[[str], str | None] = shutil.which) -> list[PythonEnv]:
    """Every candidate, best first (ties keep the order of the places above).

    ``include_self``: offer the Python verl-wizard runs in (default: yes, except inside the bundle,
    whose program is not a Python).
    """
    if include_self is None:
        include_self = not is_frozen()
    seen: set[str] = set()
    found: list[PythonEnv] = []
    for python, origin in _places(include_self, Path(cwd or os.getcwd()), which):
        env = inspect(python, origin)
        if env is None or _is_bundle(env) or (env.python_ok is False and not env.has_verl):
            continue  # not a Python, the bundle itself, or one verl cannot use and that has no verl anyway
        key = os.path.realpath(env.prefix)
        if key in seen:
            continue
        seen.add(key)
        found.append(env)
    return sorted(found, key=PythonEnv.rank)  # sorted() is stable: ties stay in discovery order


def default_python() -> str | None:
    """The Python to run a probe or verl in when the user named none: the best candidate.

    Outside the bundle that is this Python unless another one has verl and this one has not; inside
    the bundle it is never the bundle's program. None only in a bundle on a machine with no Python.
    """
    found = discover()
    return found[0].python if found else None


def _places(include_self: bool, cwd: Path, which: Callable[[str], str | None]) -> Iterator[tuple[Path, str]]:
    home = Path.home()
    if include_self:
        yield Path(sys.executable), "this Python (verl-wizard runs in it)"
    for var, origin in (("VIRTUAL_ENV", "active venv ($VIRTUAL_ENV)"), ("CONDA_PREFIX", "active conda env ($CONDA_PREFIX)")):
        if os.environ.get(var):
            yield _python_in(Path(os.environ[var])), origin
    yield _python_in(cwd / ".venv"), "./.venv"
    for prefix in _conda_listed(home / ".conda" / "environments.txt"):
        yield _python_in(prefix), "conda (~/.conda/environments.txt)"
    for root in CONDA_ROOTS:
        yield _python_in(home / root), f"conda base (~/{root})"
        for prefix in _subdirs(home / root / "envs"):
            yield _python_in(prefix), f"conda env (~/{root}/envs)"
    for prefix in _subdirs(home / ".venvs"):
        yield _python_in(prefix), "~/.venvs"
    for prefix in _subdirs(home / ".pyenv" / "versions"):
        yield _python_in(prefix), "pyenv (~/.pyenv/versions)"
    on_path = which("python3")
    if on_path and Path(on_path).parent.name != "shims":  # a pyenv shim: its versions are listed above
        yield Path(on_path), "python3 on PATH"


def _python_in(prefix: Path) -> Path:
    """``bin/python3`` of an environment folder, else ``bin/python`` (inspect() drops it if neither runs)."""
    for name in ("python3", "python"):
        candidate = prefix / "bin" / name
        if candidate.exists():
            return candidate
    return prefix / "bin" / "python3"


def _conda_listed(path: Path) -> list[Path]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [Path(line.strip()).expanduser() for line in lines if line.strip() and not line.startswith("#")]


def _subdirs(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []


def _is_bundle(env: PythonEnv) -> bool:
    """Inside the bundle, its own program (or anything in its folder) is no Python for verl."""
    exe, root = bundle_executable(), bundle_root()
    if exe is None or root is None:
        return False
    real = Path(os.path.realpath(env.python))
    return real == exe or root.parent in real.parents


# ------------------------------------------------------------------------------------------------
# One candidate, by its files only


def inspect(python: str | os.PathLike, origin: str = "given") -> PythonEnv | None:
    """What the files around ``python`` say (prefix, Python version, verl); None if it is not an executable."""
    exe = Path(python)
    if not exe.is_file() or not os.access(exe, os.X_OK):
        return None
    prefix = _prefix(exe)
    sites = list(_site_dirs(prefix))
    version = _python_version(exe, prefix, sites)
    return PythonEnv(python=str(exe), prefix=str(prefix), origin=origin, verl=_verl_in(sites), python_version=version)


def _prefix(exe: Path) -> Path:
    """The environment folder: a venv's own folder (its python is a symlink out of it), else the real install."""
    if (exe.parent.parent / "pyvenv.cfg").is_file() or (exe.parent.parent / "conda-meta").is_dir():
        return exe.parent.parent
    return Path(os.path.realpath(exe)).parent.parent


def _site_dirs(prefix: Path) -> Iterator[Path]:
    """site-packages of a venv/conda env; also dist-packages and the user site for a system Python."""
    for lib in (prefix / "lib", prefix / "local" / "lib"):
        for pydir in _subdirs(lib):
            if _PYDIR.match(pydir.name) or pydir.name == "python3":
                for name in ("site-packages", "dist-packages"):
                    if (pydir / name).is_dir():
                        yield pydir / name
    if not (prefix / "pyvenv.cfg").is_file() and not (prefix / "conda-meta").is_dir():
        for pydir in _subdirs(Path.home() / ".local" / "lib"):
            if _PYDIR.match(pydir.name) and (pydir / "site-packages").is_dir():
                yield pydir / "site-packages"


def _verl_in(sites: list[Path]) -> str | None:
    """verl's version from its dist-info folder (an editable install has one too), else its version file."""
    for site in sites:
        try:
            names = os.listdir(site)
        except OSError:
            continue
        for name in names:
            m = _DIST_INFO.match(name)
            if m:
                return m.group(1)
        if (site / "verl" / "__init__.py").is_file():
            try:
                return (site / "verl" / "version" / "version").read_text(encoding="utf-8").strip() or "unknown"
            except OSError:
                return "unknown"
    return None


def _python_version(exe: Path, prefix: Path, sites: list[Path]) -> str | None:
    m = _PYDIR.match(Path(os.path.realpath(exe)).name)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    cfg = prefix / "pyvenv.cfg"
    if cfg.is_file():
        m = re.search(r"^version(?:_info)?\s*=\s*(\d+)\.(\d+)", cfg.read_text(encoding="utf-8", errors="replace"), re.M)
        if m:
            return f"{m.group(1)}.{m.group(2)}"
    for site in sites:
        m = _PYDIR.match(site.parent.name)
        if m and site.parents[2] == prefix:
            return f"{m.group(1)}.{m.group(2)}"
    return None


# ------------------------------------------------------------------------------------------------
# What to tell a user who has none


def how_to_create(which: Callable[[str], str | None] = shutil.which) -> str:
    """Plain words and the exact commands for a verl 0.9.1 environment, with a Python found on PATH."""
    python = next((name for name in ("python3.12", "python3.11", "python3.10") if which(name)), None)
    lines = [
        f"No Python environment with verl {VERL} was found. verl runs in a Python environment of its own",
        "(Linux, Python 3.10-3.12, an NVIDIA GPU; the vllm extra brings vLLM 0.24.0 and torch 2.11.0 for CUDA 13.0).",
        "Create one (a few GB of downloads), then run `verl-wizard doctor` again: it finds ~/.venvs/* by itself.",
        "",
    ]
    if python is None:
        lines += ["First install Python 3.12 with venv (Debian/Ubuntu: sudo apt install python3.12 python3.12-venv),",
                  "or use conda (below).", ""]
    lines += [
        f"  {python or 'python3.12'} -m venv ~/.venvs/verl",
        f'  ~/.venvs/verl/bin/pip install "verl[vllm]=={VERL}"',
        "",
        "or with conda:",
        "",
        "  conda create -n verl python=3.12 -y",
        f'  conda run -n verl pip install "verl[vllm]=={VERL}"',
        "",
        "Or point at an environment you already have: verl-wizard doctor --python /path/to/env/bin/python",
    ]
    return "\n".join(lines)


def resolve_python(python: str | None) -> str:
    """``python`` if given, else the best candidate; ValueError (one line) when there is none."""
    if python:
        return python
    found = default_python()
    if found is None:
        raise ValueError("no Python with verl was found on this machine; give --python PATH "
                         "(`verl-wizard doctor` says how to create one)")
    return found
