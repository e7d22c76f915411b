"""Synthetic generations dumps, written the way verl 0.9.1 writes them, for tests and the bench.

verl's ``_write_generations`` (``trainer/ppo/v1/trainer_base.py``) writes ``<dir>/<step>.jsonl``: one
``json.dumps(entry, ensure_ascii=False)`` line per trajectory with the keys ``input``, ``output``, ``gts``,
``score``, ``step`` and ``uid`` (``<uuid4>_<session>_<index>``, sorted so a prompt's answers are together).
Prompts and responses are decoded without special tokens, so the chat markers are gone and "user\\n...assistant\\n"
is what is left of the chat template.

``recorded_run_dumps`` matches the real H200 run in ../../shared/fixtures/verl-run-h200 (tests/data/verl-run-h200):
3 steps of 16 GSM8K-style prompts x 4 responses from a random-weight model with a 400-token BPE vocabulary
trained on "what is A + B ? let think step by step.\\nthe answer is #### C\\n"; as many responses hit the 512-token
limit as its metrics count (response_length/clip_ratio 0.3125, 0.21875, 0.3125) and two responses of step 3 score
1 (critic/score/mean 0.03125, max 1). The run itself dumped nothing: these are stand-ins with its numbers.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

# pieces of the tiny tokenizer's vocabulary (byte-level BPE over the corpus above): what random weights emit
PIECES = ("what", " is", " +", " ?", " let", " think", " step", " by", " step.", "\n", "the", " answer", " ####",
          " 1", " 2", " 3", " 4", " 5", " 6", " 7", " 8", " 9", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
          "wh", "at", "ink", "th", "ep", " the", " an", "sw", "er", " wh", " le", "t", " s", " b", "y", " i")
RECORDED_CLIP = {1: 20, 2: 14, 3: 20}  # responses at 512 tokens per step: clip_ratio x 64
MAX_TOKENS = 512


def gsm8k_prompt(a: int, b: int) -> str:
    """The prompt as verl dumps it: the chat template's text without its special tokens."""
    return f"user\nwhat is {a} + {b} ? let think step\nassistant\n"


def random_response(rng: random.Random, tokens: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(tokens))


def write_dump(folder: Path, step: int, rows: list[dict]) -> Path:
    """``rows``: dicts with input, output, gts, score, uid; written as verl writes them (keys in its order)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{step}.jsonl"
    with open(path, "w") as fh:
        for row in rows:
            entry = {"input": row["input"], "output": row["output"], "gts": row.get("gts"), "score": row["score"],
                     "step": step, "uid": row["uid"]}
            entry.update(row.get("extra", {}))
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return path


def group_rows(rng: random.Random, prompt: str, gts: str, outputs: list[str], scores: list[float]) -> list[dict]:
    uid = str(uuid.UUID(int=rng.getrandbits(128)))
    return [{"input": prompt, "output": o, "gts": gts, "score": s, "uid": f"{uid}_{i}_0"}
            for i, (o, s) in enumerate(zip(outputs, scores))]


def recorded_run_dumps(folder: Path, seed: int = 0, steps: dict[int, int] | None = None) -> list[Path]:
    """Dumps for the recorded run's steps (``steps``: step -> responses cut at 512 tokens)."""
    rng = random.Random(seed)
    paths = []
    for step, cut in (steps or RECORDED_CLIP).items():
        lengths = [MAX_TOKENS] * cut + [rng.randint(3, 400) for _ in range(64 - cut)]
        rng.shuffle(lengths)
        rows: list[dict] = []
        for p in range(16):
            a, b = rng.randint(1, 40), rng.randint(1, 40)
            outputs = [random_response(rng, n) for n in lengths[4 * p: 4 * p + 4]]
            scores = [0.0] * 4
            if step == 3 and p in (5, 11):  # two responses of step 3 happen to end in "#### <a+b>"
                outputs[1] = outputs[1][:60] + f" the answer is #### {a + b}"
                scores[1] = 1.0
            rows += group_rows(rng, gsm8k_prompt(a, b), str(a + b), outputs, scores)
        paths.append(write_dump(folder, step, rows))
    return paths


def cut_indices(path: Path, pieces_max: int = MAX_TOKENS) -> set[int]:
    """The lines of a ``recorded_run_dumps`` file whose response is 512 pieces long (what the run cut)."""
    out = set()
    for i, line in enumerate(path.read_text().splitlines()):
        text = json.loads(line)["output"]
        if len(text) > 1100:  # 512 pieces are about 1,230 characters, 400 pieces about 960 (pieces average 2.4)
            out.add(i)
    return out


# --- a varied step: the flags one by one -------------------------------------------------------------------

ENGLISH = ("Natalia sold 48/2 = 24 clips in May. Natalia sold 48+24 = 72 clips altogether in April and May. "
           "So the answer is #### 72")


def varied_step(folder: Path, step: int = 1, seed: int = 1) -> Path:
    """8 prompts x 4 responses, each group showing one thing: healthy, a loop, an empty answer, a switch to
    Chinese, four identical answers, all scored 0, a cut answer (2,000 characters), and a mixed healthy one."""
    rng = random.Random(seed)
    prompt = "user\nNatalia sold clips to 48 of her friends in April, and then she sold half as many clips in " \
             "May. How many clips did Natalia sell altogether in April and May?\nassistant\n"
    loop = "Let me check again. " * 30
    groups = [
        ([ENGLISH, ENGLISH.replace("So", "Thus"), "I think it is #### 70", "The total is #### 71"], [1, 1, 0, 0]),
        ([ENGLISH, loop, ENGLISH + " Done.", "#### 72"], [1, 0, 1, 1]),
        (["", ENGLISH, "#### 72.", "It is #### 12"], [0, 1, 1, 0]),
        ([ENGLISH, "娜塔莉亚在五月卖出了二十四个夹子，所以总数是七十二个。答案是 72", ENGLISH + " OK", "#### 7"], [1, 0, 1, 0]),
        (["#### 72"] * 4, [1, 1, 1, 1]),
        (["I do not know.", "Maybe 10.", "The answer is 5.", "It is 3."], [0, 0, 0, 0]),
        (["Step by step: " + "we add the numbers and carry the digits, " * 48, ENGLISH, "#### 72", "#### 73"],
         [0, 1, 1, 0]),
        ([ENGLISH, "48 + 24 = 72, so #### 72", "#### 96", "Half of 48 is 24; #### 72"], [1, 1, 0, 1]),
    ]
    rows = []
    for outputs, scores in groups:
        rows += group_rows(rng, prompt, "72", outputs, [float(s) for s in scores])
    return write_dump(folder, step, rows)


# --- a step whose text would drive a terminal ----------------------------------------------------------------

HOSTILE = "\x1b[2J\x1b]0;pwned\x07"  # clear the screen, retitle the window, ring the bell
HOSTILE_OUTPUTS = [f"sure {HOSTILE} the answer is #### 2", "\x9b2J\rnothing here, #### 3", "#### 2\x00",
                   "tab\tbed #### 4", "<b>bold</b> &lt;i&gt; #### 5"]


def hostile_step(folder: Path, step: int = 1) -> Path:
    """One prompt with an escape sequence, its 5 responses with escape sequences, a C1 CSI, a carriage return, a
    NUL, a tab and text that reads like HTML; the ground truth ends in a bell."""
    prompt = f"user\nwhat is 1 + 1 ?{HOSTILE}\nassistant\n"
    return write_dump(folder, step, group_rows(random.Random(3), prompt, "2\x07", HOSTILE_OUTPUTS,
                                               [1.0, 0.0, 1.0, 0.0, 0.0]))


def big_dumps(folder: Path, samples: int = 10_000, per_step: int = 1000, seed: int = 2) -> list[Path]:
    """``samples`` responses of GSM8K-like English (a few loops, empties, switches), ``per_step`` a step."""
    rng = random.Random(seed)
    words = ("we", "add", "the", "clips", "sold", "in", "May", "April", "half", "of", "so", "total", "is", "then",
             "first", "check", "sum", "each", "friend", "more", "left", "number", "answer", "both", "months")
    paths = []
    for step in range(1, samples // per_step + 1):
        rows: list[dict] = []
        for _ in range(per_step // 4):
            a, b = rng.randint(1, 99), rng.randint(1, 99)
            outputs = []
            for _ in range(4):
                r = rng.random()
                if r < 0.03:
                    outputs.append("")
                elif r < 0.08:
                    outputs.append("Wait, let me re-check. " * rng.randint(20, 60))
                elif r < 0.1:
                    outputs.append("我们先计算五月卖出的数量，然后相加。答案是 72")
                else:
                    outputs.append(" ".join(rng.choice(words) if rng.random() < 0.8 else str(rng.randint(1, 999))
                                            for _ in range(rng.randint(5, 400))) + f". #### {a + b}")
            scores = [float(rng.random() < 0.3) for _ in outputs]
            rows += group_rows(rng, gsm8k_prompt(a, b), str(a + b), outputs, scores)
        paths.append(write_dump(folder, step, rows))
    return paths
