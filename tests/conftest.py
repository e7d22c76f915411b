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

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "data" / "verl_scripts"


@pytest.fixture(scope="session")
def schema():
    from wizard.adapters.resources import load_schema

    return load_schema()


@pytest.fixture(scope="session")
def moves():
    from wizard.adapters.resources import load_moves

    return load_moves()


@pytest.fixture(scope="session")
def check(schema, moves):
    from wizard.core.check.verdict import check_overrides

    def run(overrides, **kw):
        return check_overrides(schema, list(overrides), moves=moves, **kw)

    return run


def has_verl() -> bool:
    import importlib.util

    return importlib.util.find_spec("verl") is not None


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    from tests.helpers.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def verl_config_dir():
    import importlib.util

    spec = importlib.util.find_spec("verl")
    if spec is None:
        pytest.fail("verl 0.9.1 is not installed: the conformance tests need it (make test installs it)")
    return str(Path(spec.origin).parent / "trainer" / "config")


sys.path.insert(0, str(ROOT))
