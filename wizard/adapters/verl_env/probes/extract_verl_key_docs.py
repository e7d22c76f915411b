"""Extract the plain-words description of every verl config key from an installed verl.

Run with the Python of the environment that has verl installed::

    python extract_verl_key_docs.py [--out FILE]

verl's config YAML files carry a comment above each field (a format its CI enforces).
Hydra's own defaults list says which file lands under which package for
``ppo_trainer`` (``rollout/rollout`` -> ``actor_rollout_ref.rollout``), so each comment
gets the full key a user types. Later files in the defaults list win, as their values
do. Standalone on purpose, like extract_verl_schema.py: nothing here is typed by hand.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import re
import sys

CONFIG_NAME = "ppo_trainer"
ENGINES = ("dp", "megatron", "torchtitan", "veomni")
_KEY = re.compile(r"^(\s*)([A-Za-z_][\w\-]*)\s*:(.*)$")
# Lines in verl's comments that talk to verl's developers, not to users.
_SKIP = re.compile(r"^(oc\.select:|Format checks|\d\. |Required when using verl\.utils)", re.I)


def file_docs(text: str) -> dict[str, str]:
    """{dotted key within the file: the comment right above it}."""
    docs: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # (indent, key) of the open mappings
    pending: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            pending = []
            continue
        if stripped.startswith("#"):
            words = stripped.lstrip("#").strip()
            if words and not _SKIP.match(words):
                pending.append(words)
            continue
        m = _KEY.match(line)
        if not m or stripped.startswith("-"):
            pending = []
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        if pending and not key.startswith("_"):
            docs[path] = " ".join(pending)
        pending = []
        if not m.group(3).strip():
            stack.append((indent, key))
    return docs


def _defaults(config_dir: str, engine: str) -> list[tuple[str, str]]:
    from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository
    from hydra._internal.config_search_path_impl import ConfigSearchPathImpl
    from hydra._internal.defaults_list import create_defaults_list
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.plugins import Plugins

    Plugins.instance()  # registers the file:// config source
    search = ConfigSearchPathImpl()
    search.append("main", f"file://{config_dir}")
    repo = CachingConfigRepository(ConfigRepository(search))
    overrides = OverridesParser.create().parse_overrides([f"model_engine={engine}"])
    result = create_defaults_list(repo, CONFIG_NAME, overrides, prepend_hydra=False, skip_missing=True)
    return [(d.config_path, d.package or "") for d in result.defaults if d.config_path]


def extract(config_dir: str) -> dict[str, str]:
    docs: dict[str, str] = {}
    for engine in ENGINES:
        for config_path, package in _defaults(config_dir, engine):
            path = os.path.normpath(os.path.join(config_dir, config_path + ".yaml"))
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            for key, words in file_docs(text).items():
                full = f"{package}.{key}" if package else key
                # The first engine (dp, verl's default) names a key first; later files of one engine refine it.
                if engine == ENGINES[0] or full not in docs:
                    docs[full] = words
    return dict(sorted(docs.items()))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    import verl

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    doc = {"format": 1, "generated_by": "wizard/adapters/verl_env/probes/extract_verl_key_docs.py",
           "verl_version": md.version("verl"), "docs": extract(config_dir)}
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
