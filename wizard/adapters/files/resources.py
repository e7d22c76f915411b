"""Read the data shipped in ``wizard.resources`` (schema snapshots, moves, presets)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:  # imported where used: the GUI's first step reads presets only, and starts sooner
    from wizard.core.verl import Moves, VerlSchema

DEFAULT_VERL = "0.9.1"


def _files():
    """``resources/`` beside the package in a source checkout (so a checkout, a git worktree say, reads its own
    files even where another checkout is installed in editable mode), else the installed ``wizard.resources``."""
    checkout = Path(__file__).resolve().parents[3] / "resources"
    if (checkout / "__init__.py").is_file() and (checkout / "verl-schema").is_dir():
        return checkout
    return resources.files("wizard.resources")


def resource_text(name: str) -> str:
    return (_files() / name).read_text(encoding="utf-8")


# libyaml's parser where PyYAML has it (about 10x faster: the presets are read to draw the first step).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_resource(text: str):
    """A shipped YAML file's contents (safe loading, the same result with or without libyaml)."""
    return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader


@lru_cache(maxsize=4)
def load_schema(version: str = DEFAULT_VERL) -> VerlSchema:
    path = _files() / "verl-schema" / f"{version}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.name[:-5] for p in (_files() / "verl-schema").iterdir() if p.name.endswith(".json")))
        raise ValueError(f"no key schema for verl {version} (have: {known})")
    from wizard.adapters.files.schema_cache import load_schema_cached

    return load_schema_cached(version, path.read_bytes())


@lru_cache(maxsize=4)
def load_key_docs(version: str = DEFAULT_VERL) -> dict[str, str]:
    """{verl key: verl's own comment about it}; empty when no docs ship for ``version``."""
    path = _files() / "verl-key-docs" / f"{version}.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))["docs"]


@lru_cache(maxsize=1)
def load_moves() -> Moves:
    from wizard.core.verl import Moves

    return Moves.from_dict(yaml_resource(resource_text("verl-moves.yaml")))


def load_verl_checks(version: str = DEFAULT_VERL) -> tuple[dict, dict]:
    """(inventory of verl's checks, the reviewed mapping to rules): resources/verl-checks/."""
    inventory = json.loads(resource_text(f"verl-checks/{version}.json"))
    return inventory, yaml_resource(resource_text("verl-checks/mapping.yaml")) or {}


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in (_files() / "presets").iterdir() if p.name.endswith(".yaml"))


def load_preset_doc(name: str) -> dict:
    """A shipped preset by name; a path (``../../x``, ``/etc/x``) is not a name and is refused like an unknown one."""
    if name not in preset_names():
        raise ValueError(f"no preset {name!r}; presets: {', '.join(preset_names())}")
    path = _files() / "presets" / f"{name}.yaml"
    return yaml_resource(path.read_text(encoding="utf-8"))
