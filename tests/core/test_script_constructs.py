"""How real launch scripts launch, one construct at a time, each checked against real bash.

Every script here runs under bash with python stubbed (tests/helpers/bash_argv.py); the reader
must hand verl the same words bash does, placeholders aside.
"""

from pathlib import Path

import pytest

from tests.helpers.bash_argv import FAKE_HOME, bash_argv
from wizard.core.scripts.reader import ScriptError, read_launch_script

M = "python3 -m verl.trainer.main_ppo"


def same_as_bash(text: str, tmp_path: Path, **kw):
    """Read ``text`` as the script ``tmp_path/script.sh`` would be, and check bash agrees word by word."""
    path = tmp_path / "script.sh"
    script = read_launch_script(text, script_path=str(path), **kw)
    argv = bash_argv(text, workdir=str(tmp_path / "work"), script_path=str(path))
    assert argv is not None, "bash never launched verl"
    patterns = script.argv_patterns({"HOME": FAKE_HOME, "PWD": str(tmp_path / "work")})
    assert len(patterns) == len(argv) and all(p.match(a) for p, a in zip(patterns, argv)), (script.argv, argv)
    return script


CONSTRUCTS = {
    "array, += and continuation inside it": (
        'DATA=(\n  data.a=1 \\\n  data.b="two words"   # a comment\n  # data.c=commented\n)\n'
        'DATA+=(data.d=4)\nDATA+=("data.e=$((2 * 3))")\n'
        f'{M} "${{DATA[@]}}" "$@"\n',
        ["data.a=1", "data.b=two words", "data.d=4", "data.e=6"]),
    "launch array (LAUNCH=(python3) ... \"${LAUNCH[@]}\")": (
        'LAUNCH=(python3)\nRAY=(ray_kwargs.x=null)\n"${LAUNCH[@]}" -m verl.trainer.main_ppo "${RAY[@]}" a.b=1\n',
        ["ray_kwargs.x=null", "a.b=1"]),
    "uv run": (
        'LAUNCH=(uv run --frozen --all-packages --extra vllm --extra fsdp python3)\n'
        '"${LAUNCH[@]}" -m verl.trainer.main_ppo a.b=1\n', ["a.b=1"]),
    "wrapper function": (
        f'train() {{\n  local extra="trainer.x=1"\n  {M} "$extra" "$@"\n}}\ntrain a.b=2 "c.d=three four"\n',
        ["trainer.x=1", "a.b=2", "c.d=three four"]),
    "set --": (f'set -- a.b=1 c.d=2\nset -- "$@" e.f=3\n{M} "$@"\n', ["a.b=1", "c.d=2", "e.f=3"]),
    "exec": (f'exec {M} a.b=1\necho never reached\n', ["a.b=1"]),
    "env VAR=... python3": (f'env PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0,1 {M} a.b=1\n', ["a.b=1"]),
    "torchrun -m": ('torchrun --nproc_per_node=1 --master_port 29500 -m verl.trainer.main_ppo a.b=1\n', ["a.b=1"]),
    "python3.11 with options": ('python3.11 -u -X faulthandler -m verl.trainer.main_ppo a.b=1\n', ["a.b=1"]),
    "$PYTHON with a default": ('PYTHON=${PYTHON:-python3}\n"$PYTHON" -m verl.trainer.main_ppo a.b=1\n', ["a.b=1"]),
    "the entry as a file": ('python3 verl/trainer/main_ppo.py a.b=1\n', ["a.b=1"]),
    "case on the script's default": (
        'BACKEND=${BACKEND:-megatron}\ncase "$BACKEND" in\n  fsdp) S=fsdp2 ;;\n  megatron|mcore) S=megatron ;;\n'
        f'  *) echo "unknown $BACKEND"; exit 1 ;;\nesac\n{M} actor.strategy=$S\n', ["actor.strategy=megatron"]),
    "[ ] && x=a || x=b": (
        f'PP=${{PP:-2}}\nVPP=4\n[ "$PP" -gt 1 ] && V=$VPP || V=null\n{M} vpp=$V\n', ["vpp=4"]),
    "if with && and { ||; }": (
        'B=${B:-sglang}\nL=(python3)\nif [ "${USE_UV:-1}" != 0 ] && { [ "$B" = vllm ] || [ "$B" = sglang ]; }; then\n'
        '  L=(uv run --extra "$B" python3)\nfi\n"${L[@]}" -m verl.trainer.main_ppo r.name=$B\n', ["r.name=sglang"]),
    "(( )) and $(( )) with variables": (
        f'P=1024\nR=$((P * 2))\nif (( R % 8 == 0 )); then OK=yes; else OK=no; fi\n{M} len=$((P + R)) ok=$OK\n',
        ["len=3072", "ok=yes"]),
    "${X:-...} ${X:+...} ${X,,} ${X//a/b} ${#X} ${X:1:3}": (
        'ID=Qwen/Qwen3-8B\nS=${SUF:+-$SUF}\n'
        f'{M} n="$(basename "${{ID,,}}")$S" k="${{ID//Qwen/q}}" l=${{#ID}} s=${{ID:1:3}} d=${{D:--1}}\n',
        ["n=qwen3-8b", "k=q/q3-8B", "l=13", "s=wen", "d=-1"]),
    "\"${@:2}\" and shift in a function": (
        f'run() {{ shift; {M} "${{@:2}}"; }}\nrun a b c.d=1 e.f=2\n', ["c.d=1", "e.f=2"]),
    "for over a known list": (
        f'A=()\nfor k in x y z; do A+=("keys.$k=1"); done\n{M} "${{A[@]}}"\n', ["keys.x=1", "keys.y=1", "keys.z=1"]),
    "heredoc before the launch": (
        f'cat > get.py << EOF\nprint("$HOME")\nEOF\n{M} a.b=1\n', ["a.b=1"]),
    "pipe and redirection after the launch": (f'{M} a.b=1 "$@" 2>&1 | tee log.txt\n', ["a.b=1"]),
}


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_constructs_read_as_bash_runs_them(name, tmp_path):
    text, expected = CONSTRUCTS[name]
    script = same_as_bash(text, tmp_path)
    assert script.args == expected


def test_a_value_known_only_at_run_time_is_a_placeholder_never_a_parse_error(tmp_path):
    from wizard.core.verl.overrides import parse_override

    text = (f'NAME=${{NAME:-run_$(date +%Y%m%d_%H%M)}}\nSEED=$RANDOM\nN=$(nproc)\n'
            f'{M} trainer.experiment_name=$NAME data.seed=$SEED trainer.n_gpus_per_node=$N\n')
    script = same_as_bash(text, tmp_path)
    assert script.argv == ["trainer.experiment_name=run_$(date +%Y%m%d_%H%M)", "data.seed=$RANDOM",
                           "trainer.n_gpus_per_node=$(nproc)"]
    assert [parse_override(a).key for a in script.args] == ["trainer.experiment_name", "data.seed",
                                                            "trainer.n_gpus_per_node"]
    notes = [(n.line, n.kind) for n in script.notes if n.kind == "runtime"]
    assert notes == [(1, "runtime"), (2, "runtime"), (3, "runtime")]


def test_a_test_known_only_at_run_time_is_one_finding_with_both_sides(tmp_path):
    text = f'if [ -f /etc/verl_big_node ]; then TP=4; else TP=8; fi\n{M} rollout.tp=$TP a.b=1\n'
    script = same_as_bash(text, tmp_path)  # bash on this machine: no such file, like the reader's reading
    assert script.args == ["rollout.tp=8", "a.b=1"]
    [note] = [n for n in script.notes if n.kind == "branch"]
    assert note.line == 1 and note.severity == "warning"
    assert "read as false" in note.message and "rollout.tp=4 (not 8)" in note.message
    assert note.data["other"] == [{"option": "true", "changed": [{"key": "rollout.tp", "from": "8", "to": "4"}],
                                   "added": [], "removed": []}]


def test_a_case_on_a_run_time_value_takes_its_first_arm_and_names_the_others():
    text = f'case "$(hostname)" in\n  node*) N=2 ;;\n  *) N=1 ;;\nesac\n{M} trainer.nnodes=$N\n'
    script = read_launch_script(text)
    assert script.args == ["trainer.nnodes=2"]
    [note] = [n for n in script.notes if n.kind == "branch"]
    assert note.line == 1 and "the node*) arm" in note.message and "trainer.nnodes=1 (not 2)" in note.message


def test_the_npu_probe_reads_as_a_cuda_machine_and_says_what_npu_gives(tmp_path):
    text = ("DEVICE=${DEVICE:-$(python3 -c 'import torch_npu' 2>/dev/null && echo npu || echo gpu)}\n"
            'case "$DEVICE" in\n  gpu) G=8 ;;\n  npu) G=16 ;;\nesac\n'
            f'{M} trainer.n_gpus_per_node=$G\n')
    script = same_as_bash(text, tmp_path)
    assert script.args == ["trainer.n_gpus_per_node=8"] and script.defaults["DEVICE"] == "gpu"
    [note] = [n for n in script.notes if n.kind == "branch"]
    assert "read as failing" in note.message and "trainer.n_gpus_per_node=16 (not 8)" in note.message


def test_a_sourced_file_next_to_the_script_is_read(tmp_path):
    from wizard.adapters.files.script_source import read_script

    (tmp_path / "env.sh").write_text("TP=2\nexport VLLM_USE_V1=1\n")
    text = ('SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'
            '[ -f "$SCRIPT_DIR/env.sh" ] && source "$SCRIPT_DIR/env.sh"\n'
            '[ -f "$SCRIPT_DIR/missing.sh" ] && source "$SCRIPT_DIR/missing.sh"\n'
            f'TP=${{TP:-8}}\n{M} rollout.tp=$TP\n')
    path = tmp_path / "script.sh"
    path.write_text(text)
    script = read_script(text, str(path))
    assert script.args == ["rollout.tp=2"]
    assert bash_argv(text, workdir=str(tmp_path / "work"), script_path=str(path)) == ["rollout.tp=2"]
    assert not [n for n in script.notes if n.kind == "branch"]  # both tests were decided by looking


def test_a_file_away_from_the_script_is_said_once_and_the_rest_is_still_read():
    text = f"source /opt/site/env.sh\nsource /opt/site/env.sh\n{M} a.b=1 data.train_batch_size=$((4 * 8))\n"
    script = read_launch_script(text, files={})
    assert script.args == ["a.b=1", "data.train_batch_size=32"]
    notes = [n for n in script.notes if n.kind == "source"]
    assert [n.line for n in notes] == [1, 2] and "/opt/site/env.sh" in notes[0].message


def test_knobs_left_at_their_defaults_are_one_note_with_the_full_list():
    text = "".join(f"K{i}=${{K{i}:-{i}}}\n" for i in range(30)) + f"{M} " + " ".join(
        f"x.k{i}=$K{i}" for i in range(30)) + "\n"
    script = read_launch_script(text)
    [note] = [n for n in script.notes if n.kind == "defaults"]
    assert note.severity == "info" and note.line == 1 and "and 24 more" in note.message
    assert [d["name"] for d in note.data["defaults"]] == [f"K{i}" for i in range(30)]
    assert script.warnings == []


@pytest.mark.parametrize("text, reason", [
    (f"echo hi\nsrun -N 2 {M} a=1\n", "line 2: verl is started through 'srun'"),
    ("ray job submit --address x -- python3 -m verl.trainer.main_ppo a=1\n", "line 1: verl is started through 'ray'"),
    (f"run() {{ {M} a=1; }}\n", "line 1: the verl.trainer.main_ppo launch never runs .* function run"),
    (f"run() {{ {M} \"$@\"; }}\nrun a=1\nrun a=2\n", "launches verl.trainer.main_ppo 2 times \\(lines 1, 1\\)"),
    (f"MODE=${{MODE:-eval}}\nif [ \"$MODE\" = train ]; then\n  {M} a=1\nfi\n", "line 3: .* never runs .* if at line 2"),
    ('echo start\nexit 0\npython3 -m verl.trainer.main_ppo a=1\n', "line 2: the script stops here \\(exit 0\\)"),
    (f"while read -r x; do\n  {M} a=$x\ndone < list.txt\n", "line 2: .* inside the loop at line 1"),
    (f"{M} a=1 'unterminated\n", "line 1: unterminated single quote"),
    (f'{M} --config-name="$1"\n', "--config-name is \\$1 \\(an argument of the script\\), known only when the script runs"),
])
def test_refusals_name_the_line_and_why(text, reason):
    with pytest.raises(ScriptError, match=reason):
        read_launch_script(text)


def test_a_script_read_under_set_u_says_what_bash_would_stop_on():
    text = f'set -u\nNAME=run_$B\nB=${{B:-vllm}}\n{M} trainer.experiment_name=$NAME rollout.name=$B\n'
    script = read_launch_script(text)
    assert script.args == ["trainer.experiment_name=run_", "rollout.name=vllm"]
    assert any(n.line == 2 and "unbound variable" in n.message for n in script.notes)
