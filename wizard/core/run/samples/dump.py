"""The generations verl dumps, read into samples: what the model wrote, for which prompt, and what it scored.

verl 0.9.1 writes one JSONL file per step when ``trainer.rollout_data_dir`` (training) or
``trainer.validation_data_dir`` (validation) is set: ``<dir>/<step>.jsonl``, one line per trajectory
(``trainer/ppo/v1/trainer_base.py``: ``_log_rollout_data`` and ``_write_generations``)::

    {"input": "<decoded prompt>", "output": "<decoded response>", "gts": <ground truth or null>,
     "score": <sum of the token rewards>, "step": <global step>, "uid": "<prompt uuid>_<session>_<turn>", ...}

Prompt and response are decoded with ``skip_special_tokens=True`` (no EOS marker, no token counts); the
``uid`` is ``{uid}_{session_id}_{index}`` (``trainer/ppo/v1/agent_loop_tq.py``): the prompt's uuid, which of
the ``rollout.n`` answers, and the agent-loop output. Answers to one prompt form a GRPO group. Validation dumps
carry the reward's extra values (``acc``, ...) as more keys. Pure: lines in, samples out.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

DUMP_NAME = re.compile(r"^(\d+)\.jsonl$")
_BASE_KEYS = frozenset({"input", "output", "gts", "score", "step", "uid"})


@dataclass(frozen=True, slots=True)
class Sample:
    """One trajectory of one step, as the dump has it."""

    step: int
    index: int  # the line in the dump (0-based)
    prompt: str
    response: str
    score: float | None  # None when the dump has no number (NaN reads as None too)
    ground_truth: str | None
    group: str  # the prompt's uid (answers to one prompt share it); the prompt text when the dump has no uid
    answer: int = 0  # which of the rollout.n answers (the uid's session id)
    uid: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)  # the reward's extra values (validation dumps)


@dataclass
class DumpRead:
    """A dump file read: its samples, and the lines that were not a sample (with why)."""

    step: int
    samples: list[Sample]
    bad_lines: list[str] = field(default_factory=list)


def dump_step(name: str) -> int | None:
    """The step a dump file is for (``12.jsonl`` -> 12); None for any other name."""
    m = DUMP_NAME.match(name)
    return int(m.group(1)) if m else None


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)  # a structured ground truth (a list of answers, a dict)


def _score(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
        return float(sum(value))  # token-level rewards, as some dumps keep them
    return None


def _split_uid(uid: str | None, prompt: str) -> tuple[str, int]:
    """(group, answer) from ``{uid}_{session}_{index}``; a uid without that shape is its own group."""
    if not uid:
        return prompt, 0
    parts = uid.rsplit("_", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1])
    return uid, 0


def parse_dump_line(text: str, step: int, index: int) -> Sample | str:
    """One dump line -> a Sample, or the reason it is not one (one line)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return f"line {index + 1}: not JSON ({exc.msg})"
    if not isinstance(doc, dict) or "output" not in doc:
        return f"line {index + 1}: no \"output\" key (not a verl generations dump)"
    prompt = _text(doc.get("input")) or ""
    uid = doc.get("uid") if isinstance(doc.get("uid"), str) else None
    group, answer = _split_uid(uid, prompt)
    line_step = doc.get("step")
    extra = {k: v for k, v in doc.items() if k not in _BASE_KEYS}
    return Sample(step=line_step if isinstance(line_step, int) else step, index=index, prompt=prompt,
                  response=_text(doc.get("output")) or "", score=_score(doc.get("score")),
                  ground_truth=_text(doc.get("gts")), group=group, answer=answer, uid=uid, extra=extra)


def parse_dump(lines: Iterable[str], step: int) -> DumpRead:
    """A whole dump file's lines (blank lines skipped)."""
    read = DumpRead(step=step, samples=[])
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        got = parse_dump_line(line, step, i)
        if isinstance(got, Sample):
            read.samples.append(got)
        else:
            read.bad_lines.append(got)
    return read


def groups_of(samples: Sequence[Sample]) -> dict[str, list[Sample]]:
    """The answers to each prompt, in dump order (verl writes a group's answers together)."""
    out: dict[str, list[Sample]] = {}
    for s in samples:
        out.setdefault(s.group, []).append(s)
    return out


# --- what a table of samples shows: one search and one order for the GUI and the CLI ------------------------

def haystack(s: Sample) -> str:
    """What a search looks in: prompt, response and ground truth, lower-cased (computed once per sample)."""
    return "\n".join((s.prompt, s.response, s.ground_truth or "")).lower()


_TERMS = re.compile(r'"([^"]+)"|(\S+)')


def terms(query: str) -> list[str]:
    """The words of a search, a "quoted phrase" as one term, lower-cased."""
    return [(a or b).lower() for a, b in _TERMS.findall(query)]


def matches(hay: str, query: str | list[str]) -> bool:
    """Every term of ``query`` (``terms``) is in the sample (case-insensitive); an empty query matches all."""
    return all(term in hay for term in (terms(query) if isinstance(query, str) else query))


SORT_KEYS = ("step", "score", "length", "flags")


def sort_value(s: Sample, key: str, flags: Sequence[str] = ()) -> tuple:
    """The value a column sorts by; samples without a score sort after those with one."""
    if key == "score":
        return (s.score is None, s.score if s.score is not None else 0.0, s.step, s.index)
    if key == "length":
        return (len(s.response), s.step, s.index)
    if key == "flags":
        return (len(flags), s.step, s.index)
    return (s.step, s.index)


__all__ = ["Sample", "DumpRead", "dump_step", "parse_dump_line", "parse_dump", "groups_of", "haystack", "matches", "terms",
           "sort_value", "SORT_KEYS"]
