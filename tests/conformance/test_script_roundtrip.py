"""Import a real verl launch script, write it back as run.sh: bash hands verl the same overrides.

Both scripts run under real bash with every external command stubbed (tests/helpers/bash_argv.py);
the overrides python3 would receive are compared, and composed with verl's config tree.
"""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.helpers.bash_argv import bash_argv
from tests.helpers.script_corpus import main_ppo_scripts
from wizard.core.verl.compose import CONFIG_NAME_ENGINES, compose
from wizard.core.plan.emit import RUNTIME_OK, render_run_sh
from wizard.core.scripts.reader import read_launch_script
from wizard.core.verl.overrides import parse_override
from wizard.core.plan.convert import plan_from_overrides

MAIN = [p for p in main_ppo_scripts() if p.name != "tests__special_e2e__run_test.sh"]


def _key(arg: str):
    try:
        p = parse_override(arg)
        return (p.kind, p.key, repr(p.value()) if p.kind != "~" else "")
    except Exception:  # noqa: BLE001
        return ("raw", arg, "")


def _overrides(argv):
    return [a for a in argv if not a.startswith(("--config-path", "--config-name"))]


def _effective(argv):
    """The overrides as Hydra applies them: a plain key set twice counts once, with its last value (run.sh writes
    a plan field once: wizard/core/plan/convert.py); everything else as written."""
    keys = [_key(a) for a in _overrides(argv)]
    last = {k[1]: i for i, k in enumerate(keys) if k[0] == ""}
    return sorted(k for i, k in enumerate(keys) if k[0] != "" or last[k[1]] == i)


def _roundtrip(path: Path, workdir: Path):
    text = path.read_text()
    script = read_launch_script(text)
    env = {name: f"/env/{name}" for name in script.env
           if name != "HOME" and (name not in script.defaults or name in script.required)}
    original = bash_argv(text, env, workdir=str(workdir))
    plan = plan_from_overrides(script.args, config_name=script.config_name, config_path=script.config_path,
                               script_env=script.env, script_runtime=script.runtime_values)
    ours = bash_argv(render_run_sh(plan), env, workdir=str(workdir))
    return script, original, ours


def test_every_statically_known_script_round_trips_exactly(tmp_path, schema):
    exact, runtime_only, never_launched = [], [], []
    for path in MAIN:
        script, original, ours = _roundtrip(path, tmp_path / "work")
        if original is None:
            never_launched.append(path.name)  # the script itself stops before launching (e.g. a failed source)
            continue
        # $RANDOM differs from run to run ($(date) is stubbed: the written run.sh computes it again, as the
        # script did); a knob read before its default (${X} then X=${X:-d}) reads empty in the reader, set in
        # this environment
        # this environment; a command of the script's own ($(now), a function) stays text in run.sh
        if (any(v == "$RANDOM" or not RUNTIME_OK.fullmatch(v) for v in script.runtime_values)
                or any(n in script.defaults for n in script.env)):
            runtime_only.append(path.name)
            continue
        assert ours is not None, f"{path.name}: the written run.sh did not launch"
        assert _effective(ours) == _effective(original), path.name
        if script.config_name in CONFIG_NAME_ENGINES and not script.config_path:
            a, b = compose(schema, _overrides(original)), compose(schema, _overrides(ours))
            assert OmegaConf.to_container(a.cfg) == OmegaConf.to_container(b.cfg), path.name
        exact.append(path.name)
    print(f"\nround trip: {len(exact)} exact, {len(runtime_only)} with run-time values, "
          f"{len(never_launched)} that never launch under bash, of {len(MAIN)}")
    assert len(exact) >= 180, (exact, runtime_only, never_launched)
    assert len(never_launched) <= 3, never_launched


@pytest.mark.parametrize("value", ["/data/my files/train.parquet", "/data/$weird/x.parquet", "it's \"quoted\" `x`"])
def test_paths_with_spaces_dollars_and_quotes_survive_bash(tmp_path, value):
    from wizard.core.plan.model import Plan

    plan = Plan()
    plan.data.train_files = value
    plan.trainer.experiment_name = value
    argv = bash_argv(render_run_sh(plan), workdir=str(tmp_path))
    assert parse_override(argv[0]).value() == value
    assert parse_override(argv[1]).value() == value


def test_a_date_the_script_computes_is_computed_again_and_nothing_else_runs(tmp_path):
    text = ("NAME=${NAME:-run_$(date +%Y%m%d_%H%M)}\n"
            f"python3 -m verl.trainer.main_ppo trainer.experiment_name=$NAME trainer.project_name='p$(touch {tmp_path}/x)'\n")
    script = read_launch_script(text)
    plan = plan_from_overrides(script.args, script_runtime=script.runtime_values)
    # a plan file from elsewhere that says any command is a run-time value: still text, never run
    plan.script_runtime.append(f"$(touch {tmp_path}/pwned)")
    plan.trainer.project_name = f"p$(touch {tmp_path}/pwned)"
    run_sh = render_run_sh(plan)
    assert 'trainer.experiment_name="\'run_$(date +%Y%m%d_%H%M)\'"' in run_sh
    argv = bash_argv(run_sh, workdir=str(tmp_path))
    name = next(parse_override(a).value() for a in argv if a.startswith("trainer.experiment_name="))
    assert name.startswith("run_") and "$(" not in name  # bash computed it (the stubbed date's output)
    project = next(parse_override(a).value() for a in argv if a.startswith("trainer.project_name="))
    assert project == f"p$(touch {tmp_path}/pwned)" and not (tmp_path / "pwned").exists()
