"""Extract verl's PPO config key schema from an installed verl.

Run with the Python of the environment that has verl installed::

    python extract_verl_schema.py [--out FILE]

It composes ``ppo_trainer`` with Hydra exactly as ``verl.trainer.main_ppo`` does
(config dir ``verl/trainer/config``, no overrides), once per ``model_engine``
choice, and writes every key with its raw default (interpolations kept as text)
and its type. Keys that are fields of the ``_target_`` dataclass but absent from
the YAML (they need ``+key=value``) are listed too, with the dataclass' type.

This file is standalone on purpose: it runs in the *target* environment, where
verl-wizard itself may not be installed. Nothing in the output is typed by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.metadata as md
import importlib.util
import json
import os
import sys
import typing

CONFIG_NAME = "ppo_trainer"


def _config_dir() -> str:
    spec = importlib.util.find_spec("verl")
    if spec is None or spec.origin is None:
        raise SystemExit("verl is not installed in this Python")
    return os.path.join(os.path.dirname(spec.origin), "trainer", "config")


def _compose(config_dir: str, overrides: list[str]):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name=CONFIG_NAME, overrides=overrides)


def _value_type(value) -> str:
    if isinstance(value, str) and value == "???":
        return "missing"
    if isinstance(value, str) and "${" in value:
        return "interpolation"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return type(value).__name__


def _type_name(tp) -> str:
    """A readable, stable name for a dataclass field annotation."""
    if isinstance(tp, str):
        return tp
    if tp is type(None):
        return "None"
    origin = typing.get_origin(tp)
    if origin is None:
        return getattr(tp, "__name__", str(tp))
    args = typing.get_args(tp)
    name = getattr(origin, "__name__", str(origin))
    if name in ("Union", "UnionType"):
        return " | ".join(_type_name(a) for a in args)
    if args:
        return f"{name}[{', '.join(_type_name(a) for a in args)}]"
    return name


def _dataclass_fields(target: str) -> dict[str, tuple[str, object]] | None:
    """{field: (type name, default)} of the class verl builds at a section; the default is ``dataclasses.MISSING``
    unless it is a plain value (a number, text, a flag or None): what verl uses when no key sets the field."""
    module, _, cls_name = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), cls_name)
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - a target we cannot import just has no field types
        return None
    if not dataclasses.is_dataclass(cls):
        return None
    plain = (int, float, str, bool, type(None))
    return {
        f.name: (_type_name(hints.get(f.name, f.type)),
                 f.default if isinstance(f.default, plain) and f.default is not dataclasses.MISSING else dataclasses.MISSING)
        for f in dataclasses.fields(cls)
        if not f.name.startswith("_")
    }


def _walk(tree: dict, prefix: str, out: list[dict], targets: dict[str, str]) -> None:
    fields = None
    if isinstance(tree.get("_target_"), str):
        targets[prefix] = tree["_target_"]
        fields = _dataclass_fields(tree["_target_"])
    for key, value in tree.items():
        if "." in str(key):
            raise SystemExit(f"key with a dot cannot be addressed by an override: {prefix}{key}")
        path = f"{prefix}.{key}" if prefix else str(key)
        entry = {"key": path, "type": _value_type(value)}
        if fields and key in fields:
            entry["field_type"] = fields[key][0]
        if isinstance(value, dict) and value:
            entry["type"] = "dict"
            out.append(entry)
            _walk(value, path, out, targets)
            continue
        entry["default"] = value
        out.append(entry)
    if fields:
        for name, (tp, default) in fields.items():
            if name not in tree:
                entry = {"key": f"{prefix}.{name}", "type": "plus_only", "field_type": tp}
                if default is not dataclasses.MISSING:
                    entry["default"] = default  # the dataclass's own: what verl uses while no '+' sets it
                out.append(entry)


def extract() -> dict:
    from omegaconf import OmegaConf

    config_dir = _config_dir()
    engines = sorted(
        f[: -len(".yaml")] for f in os.listdir(os.path.join(config_dir, "model_engine")) if f.endswith(".yaml")
    )
    default_engine = OmegaConf.select(_compose(config_dir, []), "model_engine")
    variants = {}
    for engine in engines:
        overrides = [] if engine == default_engine else [f"model_engine={engine}"]
        cfg = _compose(config_dir, overrides)
        tree = OmegaConf.to_container(cfg, resolve=False)
        keys: list[dict] = []
        targets: dict[str, str] = {}
        _walk(tree, "", keys, targets)
        variants[engine] = {"overrides": overrides, "keys": keys}
    groups = sorted(
        d for d in os.listdir(config_dir) if os.path.isdir(os.path.join(config_dir, d)) and not d.startswith("_")
    )
    return {
        "format": 1,
        "generated_by": "wizard/adapters/verl_env/probes/extract_verl_schema.py",
        "config_name": CONFIG_NAME,
        "verl_version": md.version("verl"),
        "hydra_core_version": md.version("hydra-core"),
        "omegaconf_version": md.version("omegaconf"),
        "default_model_engine": default_engine,
        "config_groups": groups,
        "variants": variants,
    }


def _dumps(doc: dict) -> str:
    """JSON with one key entry per line: compact, and diffs read key by key."""
    lines = ["{"]
    items = list(doc.items())
    for i, (name, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if name != "variants":
            lines.append(f" {json.dumps(name)}: {json.dumps(value)}{comma}")
            continue
        lines.append(' "variants": {')
        engines = list(value.items())
        for j, (engine, variant) in enumerate(engines):
            lines.append(f"  {json.dumps(engine)}: {{")
            lines.append(f'   "overrides": {json.dumps(variant["overrides"])},')
            lines.append('   "keys": [')
            keys = variant["keys"]
            for k, entry in enumerate(keys):
                lines.append("    " + json.dumps(entry) + ("," if k < len(keys) - 1 else ""))
            lines.append("   ]")
            lines.append("  }" + ("," if j < len(engines) - 1 else ""))
        lines.append(" }" + comma)
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write JSON here instead of stdout")
    args = parser.parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore")
    text = _dumps(extract())
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, args.out)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
