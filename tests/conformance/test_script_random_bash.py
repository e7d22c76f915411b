"""Random small scripts (assignments, defaults, arrays, tests, case, functions, quoting), read by the wizard and
run by real bash (python stubbed): the same argv, script after script.

Seeded, so the same scripts every run. A few readings may differ where the reader must guess (a transform of a
value read from the environment, a case on it); the test allows 2 % and prints each difference.
"""

import random

from tests.helpers.bash_argv import FAKE_HOME, bash_argv
from wizard.core.scripts.reader import ScriptError, read_launch_script

NAMES = ["A", "B", "C", "D"]
VALUES = ["1", "x y", "", "a*b", "p/q.r", "-1", "'q'", "[1,2]", " lead", "trail ", "k=v", "$HOME/d", "~/z", "a\\ b"]


class Scripts:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def value(self) -> str:
        v, r = self.rng.choice(VALUES), self.rng.random()
        if r < 0.3:
            return f'"{v}"' if "'" not in v else v
        if r < 0.5:
            return "'" + v.replace("'", "") + "'"
        return v.replace(" ", "\\ ") if " " in v and "\\" not in v else v

    def ref(self) -> str:
        n = self.rng.choice(NAMES)
        return self.rng.choice([
            f"${n}", f"${{{n}}}", f"${{{n}:-{self.rng.choice(['d', 'x y', '1'])}}}", f"${{{n}:+alt}}", f"${{#{n}}}",
            f"${{{n}//a/b}}", f"${{{n}%.r}}", f"${{{n}#p/}}", f"$(({self.rng.randint(0, 9)}*3+1))", "${ARR[@]}",
            "${ARR[1]}", "${#ARR[@]}", "$1", "${1:-one}", f"${{{n},,}}"])

    def word(self) -> str:
        parts = []
        for _ in range(self.rng.randint(1, 3)):
            r = self.rng.random()
            parts.append(self.ref() if r < 0.35 else f'"{self.ref()}"' if r < 0.55 else
                         self.rng.choice(["x", "k.v=", "+a.b=", "z"]) if r < 0.7 else self.value())
        return "".join(parts)

    def line(self) -> str:
        r, n, rng = self.rng.random(), self.rng.choice(NAMES), self.rng
        if r < 0.4:
            return f"{n}={self.value()}"
        if r < 0.5:
            return f"{n}=${{{n}:-{self.value()}}}"
        if r < 0.6:
            return f"ARR=({' '.join(self.word() for _ in range(rng.randint(0, 3)))})"
        if r < 0.65:
            return f"ARR+=({self.word()})"
        if r < 0.75:
            return (f'if [ "{self.ref()}" = "{rng.choice(VALUES).strip()}" ]; then {n}={self.value()}; '
                    f"else {n}={self.value()}; fi")
        if r < 0.8:
            return f'case "{self.ref()}" in 1|x*) {n}=c1 ;; *) {n}=c2 ;; esac'
        if r < 0.85:
            return f'[ -n "{self.ref()}" ] && {n}=yes || {n}=no'
        return f"export {n}={self.value()}" if r < 0.9 else f"{n}+={self.value()}"

    def script(self) -> str:
        lines = ["set -e"] + [self.line() for _ in range(self.rng.randint(1, 6))]
        launch = "python3 -m verl.trainer.main_ppo " + " ".join(self.word() for _ in range(self.rng.randint(1, 5)))
        if self.rng.random() < 0.3:
            lines += ['run() { ' + launch + ' "$@"; }', "run " + " ".join(self.word() for _ in range(2))]
        else:
            lines.append(launch + ' "$@"')
        return "\n".join(lines) + "\n"


def _same(text: str, tmp) -> str | None:
    """None when bash and the reader agree, else what differs."""
    path, work = str(tmp / "s.sh"), str(tmp / "work")
    try:
        script = read_launch_script(text, script_path=path)
    except ScriptError as exc:
        argv = bash_argv(text, workdir=work, script_path=path)
        return None if argv is None else f"the reader refuses ({exc}), bash hands verl {argv}"
    env = {n: f"/env/{n}" for n in script.environment if n not in ("HOME", "PWD")}
    argv = bash_argv(text, env, workdir=work, script_path=path)
    if argv is None:
        return "bash stops before launching"
    patterns = script.argv_patterns({"HOME": FAKE_HOME, "PWD": work, **env})
    if len(patterns) == len(argv) and all(p.match(a) for p, a in zip(patterns, argv)):
        return None
    return f"reader {script.argv}, bash {argv}"


def test_random_scripts_read_as_bash_runs_them(tmp_path):
    scripts = Scripts(2026)
    differences = []
    for i in range(200):
        text = scripts.script()
        case = tmp_path / f"case{i}"
        case.mkdir()
        why = _same(text, case)
        if why:
            differences.append(f"{text}-> {why}")
    print("\n\n".join(differences))
    assert len(differences) <= 4, f"{len(differences)} of 200 differ"
