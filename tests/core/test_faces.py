"""The core packages' public faces: every name a face offers is found where it says, and the code outside the core
asks a package's face for the names it offers instead of reaching into the module behind it (a name spelled like
one of the package's modules, ``health``, ``triage``, ``verdict``, ``key_help``, is imported from that module)."""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.parent.name for p in (ROOT / "wizard" / "core").glob("*/__init__.py"))


@pytest.mark.parametrize("name", PACKAGES)
def test_every_name_a_face_offers_is_there(name):
    package = importlib.import_module(f"wizard.core.{name}")
    offered = getattr(package, "__all__", [])
    assert offered, f"wizard.core.{name} offers no names"
    for attr in offered:
        assert getattr(package, attr) is not None


def test_code_outside_the_core_uses_the_faces():
    faces = {name: set(importlib.import_module(f"wizard.core.{name}").__all__) for name in PACKAGES}
    behind = []
    for path in (ROOT / "wizard").rglob("*.py"):
        if path.is_relative_to(ROOT / "wizard" / "core"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").count(".") >= 3 and \
                    node.module.startswith("wizard.core."):
                package = node.module.split(".")[2]
                offered = [a.name for a in node.names if a.name in faces.get(package, ())]
                if offered and len(offered) == len(node.names):  # (a face leaves out a name its module shares)
                    behind.append(f"{path.relative_to(ROOT)}:{node.lineno}: {', '.join(offered)} from {node.module}")
    assert behind == []
