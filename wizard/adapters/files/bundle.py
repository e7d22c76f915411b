"""Where the wizard's own files are when it runs from the desktop bundle (PyInstaller) or from a wheel.

The probe scripts are run by *another* Python (the user's verl environment), so they must be real files
on disk that that Python can open by path. From a wheel, ``importlib.resources`` gives that path. In a
PyInstaller one-folder bundle the Python modules live compiled inside an archive, so the build ships the
probes again as plain data files under ``<bundle>/_internal/wizard/adapters/verl_env/probes/`` (see
``packaging/verl-wizard.spec``) and this module points there. In a bundle ``sys.executable`` is the
bundle's own program, never a Python that could run a probe: ``wizard.adapters.verl_env.python_envs`` finds one.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

PROBES_PACKAGE = "wizard.adapters.verl_env.probes"


def is_frozen() -> bool:
    """True inside the PyInstaller bundle (PyInstaller sets ``sys.frozen`` and ``sys._MEIPASS``)."""
    return bool(getattr(sys, "frozen", False)) and hasattr(sys, "_MEIPASS")


def bundle_root() -> Path | None:
    """The folder the bundle unpacked its files into (``_internal/``), or None outside a bundle."""
    return Path(sys._MEIPASS) if is_frozen() else None  # type: ignore[attr-defined]


def bundle_executable() -> Path | None:
    """The bundle's own program (``verl-wizard``): never to be mistaken for a Python."""
    return Path(sys.executable).resolve() if is_frozen() else None


def probe_path(name: str) -> str:
    """The on-disk path of ``wizard/adapters/verl_env/probes/<name>``, for another Python to run."""
    root = bundle_root()
    if root is not None:
        return str(root / "wizard" / "adapters" / "verl_env" / "probes" / name)
    return str(resources.files(PROBES_PACKAGE) / name)
