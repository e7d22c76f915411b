import functools
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# the GUI autosaves its session under XDG_STATE_HOME: keep the tests' autosaves out of the user's
_STATE = __import__("tempfile").mkdtemp(prefix="verl-wizard-test-state-")
os.environ["XDG_STATE_HOME"] = _STATE
# and the schema cache (adapters/schema_cache.py) out of the user's cache folder: one per test session
os.environ["XDG_CACHE_HOME"] = __import__("tempfile").mkdtemp(prefix="verl-wizard-test-cache-")
# and a resident checker (verl-wizard serve) of the user's out of the tests' checks: its socket folder is per session
os.environ["XDG_RUNTIME_DIR"] = __import__("tempfile").mkdtemp(prefix="verl-wizard-test-run-")

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "data" / "verl_scripts"


@pytest.fixture(scope="session")
def schema():
    from wizard.adapters.files.resources import load_schema

    return load_schema()


@pytest.fixture(scope="session")
def moves():
    from wizard.adapters.files.resources import load_moves

    return load_moves()


@pytest.fixture(scope="session")
def check(schema, moves):
    from wizard.core.check.verdict import check_overrides

    def run(overrides, **kw):
        return check_overrides(schema, list(overrides), moves=moves, **kw)

    return run


@functools.cache
def has_verl() -> bool:
    """verl 0.9.1 is installed with what it imports first (torch) and its own config tree.

    Cheap (no import of verl, which costs seconds): the package and torch are found, the distribution is 0.9.1 and
    the config folder the conformance tests compose from is there. A stand-in ``verl`` package that only raises
    ImportError (how a machine without verl is simulated) counts as absent."""
    import importlib.metadata
    import importlib.util

    try:
        spec = importlib.util.find_spec("verl")
        if spec is None or spec.origin is None or importlib.util.find_spec("torch") is None:
            return False
        if importlib.metadata.version("verl") != "0.9.1":
            return False
    except (ImportError, ValueError):
        return False
    return (Path(spec.origin).parent / "trainer" / "config" / "ppo_trainer.yaml").is_file()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    from tests.helpers.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny-model"), shards=1)  # weights: a folder verl could load


def need_verl() -> None:
    """Skip without verl (the fast tier on a machine without it); fail where verl must be there (make test)."""
    if has_verl():
        return
    message = "verl 0.9.1 is not installed: the conformance tests need it (make test installs it)"
    if os.environ.get("VERL_WIZARD_REQUIRE_VERL"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def verl_config_dir():
    import importlib.util

    need_verl()
    return str(Path(importlib.util.find_spec("verl").origin).parent / "trainer" / "config")


# Tiers (see the README's "Tests" section): a folder marks its tests, a test marks what it needs beyond that.
FOLDER_MARKS = {"gui": "gui", "conformance": "verl"}


def pytest_collection_modifyitems(items):
    for item in items:
        parts = Path(str(item.fspath)).relative_to(ROOT / "tests").parts
        mark = FOLDER_MARKS.get(parts[0]) if len(parts) > 1 else None
        if mark:
            item.add_marker(mark)
        if "verl_config_dir" in getattr(item, "fixturenames", ()):
            item.add_marker("verl")


def pytest_runtest_setup(item):
    """A test marked ``verl`` skips without verl, or fails where verl must be there (VERL_WIZARD_REQUIRE_VERL=1)."""
    if item.get_closest_marker("verl") is not None:
        need_verl()


def _hypothesis_profiles() -> None:
    """``ci`` (the default): every property at its full count. ``dev`` (make check): a tenth, for a fast loop."""
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile("ci", settings())
    settings.register_profile("dev", settings(max_examples=10))
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_hypothesis_profiles()


def examples(n: int) -> int:
    """A property's example count: ``n`` in the full suite, a tenth under the dev profile (make check)."""
    return max(5, n // 10) if os.environ.get("HYPOTHESIS_PROFILE") == "dev" else n


sys.path.insert(0, str(ROOT))
