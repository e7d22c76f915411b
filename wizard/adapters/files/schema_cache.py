"""verl's key schema with its default configs built, kept between runs in the user's cache folder.

Building the schema's key table and verl's default config (a ~1,300-node OmegaConf tree per model engine)
is most of what a first ``verl-wizard check`` computes; loading the pickled result takes a tenth of that. The
cache file is keyed by the snapshot's bytes (so verl's version and any re-extracted schema), verl-wizard's
version and the Python and OmegaConf versions the objects were pickled with; a stale or unreadable file is
rebuilt, never trusted. ``VERL_WIZARD_CACHE=0`` turns it off; ``XDG_CACHE_HOME`` moves it.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path

from wizard import __version__

FORMAT = 2  # bump when the pickled classes change shape (2: warmed variant caches)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "verl-wizard"


def enabled() -> bool:
    return os.environ.get("VERL_WIZARD_CACHE", "1") not in ("0", "false", "no", "off")


def cache_file(version: str, raw: bytes) -> Path:
    import omegaconf

    salt = f"{FORMAT}|{__version__}|{sys.version_info[:3]}|{omegaconf.__version__}".encode()
    key = hashlib.blake2b(raw + salt, digest_size=10).hexdigest()
    return cache_dir() / f"schema-{version}-{key}.pickle"


def load_schema_cached(version: str, raw: bytes):
    """The VerlSchema of a snapshot's bytes, with every variant's default config built."""
    from wizard.core.verl import VerlSchema, build_base_configs

    path = cache_file(version, raw) if enabled() else None
    if path is not None:
        try:
            with open(path, "rb") as fh:
                schema = pickle.load(fh)  # noqa: S301 - our own file, in the user's own cache folder
            if isinstance(schema, VerlSchema) and schema.verl_version == version:
                return schema
        except FileNotFoundError:
            pass
        except Exception:  # noqa: BLE001 - a torn or foreign file: rebuilt below
            pass
    schema = VerlSchema.from_dict(json.loads(raw))
    build_base_configs(schema)
    if path is not None:
        _warm(schema)
        _store(path, schema, version)
    return schema


def _warm(schema) -> None:
    """One check of verl's defaults per engine before the schema is kept: the values every later check reads
    unchanged (resolved defaults, fields left at ``???``) are remembered on the variants and kept with them."""
    from wizard.core.check import check_overrides
    from wizard.core.verl import CONFIG_NAME_ENGINES

    for config_name in CONFIG_NAME_ENGINES:
        try:
            check_overrides(schema, [], config_name=config_name)
        except Exception:  # noqa: BLE001 - a warm cache is an optimisation; the real check reports any failure
            pass


def _store(path: Path, schema, version: str) -> None:
    """Best effort: a cache that cannot be written costs time, never a failure."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(schema, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        for old in path.parent.glob(f"schema-{version}-*.pickle"):  # the stale ones of this verl version
            if old != path:
                old.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError, RecursionError):
        pass
