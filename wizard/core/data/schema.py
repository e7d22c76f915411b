"""verl's dataset format as data, and the checks on rows that verl only makes minutes into a run.

verl 0.9.1 (``utils/dataset/rl_dataset.py``, the reward managers) reads, per row: ``prompt`` as a list
of chat messages, ``data_source`` (picks the scorer), ``reward_model.ground_truth`` (KeyError without it),
and an optional ``extra_info`` dict. Nothing checks this before Ray starts, so a wrong column costs a
model load. Everything here is pure: rows come in as Python dicts (the adapter streams them from
parquet/JSONL/CSV), findings go out naming the rows and the column.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from wizard.core.data.media import MEDIA, media_finding_text, media_problems
from wizard.core.findings import Finding, Severity, Stage

PROMPT_KEY = "prompt"
REQUIRED_COLUMNS = ("prompt", "data_source", "reward_model")
CHAT_ROLES = frozenset({"system", "user", "assistant", "tool"})
ROWS_SHOWN = 5

# verl.utils.reward_score.default_compute_score (0.9.1), as data: data_source -> scorer module.
BUILTIN_SCORERS: dict[str, str] = {
    "openai/gsm8k": "gsm8k",
    **{s: "math_reward" for s in ("lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500")},
    **{s: "math_dapo" for s in ("math_dapo", "math", "math_dapo_reasoning")},
    **{s: "prime_math" for s in ("numina_aops_forum", "numina_synthetic_math", "numina_amc_aime",
                                 "numina_synthetic_amc", "numina_cn_k12", "numina_olympiads")},
    **{s: "prime_code" for s in ("codecontests", "apps", "codeforces", "taco")},
    "hiyouga/geometry3k": "geo3k",
    **{s: "search_r1_like_qa_em" for s in ("searchR1_nq", "searchR1_triviaqa", "searchR1_popqa", "searchR1_hotpotqa",
                                           "searchR1_2wikimultihopqa", "searchR1_musique", "searchR1_bamboogle")},
}
BUILTIN_PREFIXES: dict[str, str] = {"aime": "math_dapo"}

# What a correct response looks like to each scorer (the answer placed where the scorer extracts it).
ANSWER_FORMATS: dict[str, str] = {
    "gsm8k": "Let's think step by step. The answer is {answer}.\n#### {answer}",
    "math_reward": "The final answer is $\\boxed{{{answer}}}$",
    "math_dapo": "Let's think step by step.\nAnswer: {answer}",
    "prime_math": "The final answer is $\\boxed{{{answer}}}$",
    "geo3k": "<think>step by step</think> \\boxed{{{answer}}}",
    "search_r1_like_qa_em": "<answer>{answer}</answer>",
}


def scorer_for(data_source: str) -> str | None:
    """The built-in scorer module verl 0.9.1 would call for ``data_source``, or None (NotImplementedError)."""
    if data_source in BUILTIN_SCORERS:
        return BUILTIN_SCORERS[data_source]
    for prefix, scorer in BUILTIN_PREFIXES.items():
        if data_source.startswith(prefix):
            return scorer
    return None


def format_rows(rows: list[int], total: int | None = None) -> str:
    """'rows 0, 3, 7 and 12 more' (0-based row numbers, as pandas and pyarrow count)."""
    total = len(rows) if total is None else total
    shown = ", ".join(str(r) for r in rows[:ROWS_SHOWN])
    word = "row" if total == 1 else "rows"
    more = f" and {total - min(len(rows), ROWS_SHOWN)} more" if total > ROWS_SHOWN else ""
    return f"{word} {shown}{more}"


def _finding(rule: str, severity: Severity, keys: list[str], message: str, fix: str | None = None,
             fix_overrides: list[str] | None = None, stage: Stage = Stage.RUNTIME) -> Finding:
    return Finding(rule=rule, severity=severity, stage=stage, keys=keys, message=message, fix=fix,
                   fix_overrides=fix_overrides or [], fix_auto=False)


@dataclass
class _Problem:
    """Rows that share one problem: the first few row numbers and a count."""

    rows: list[int] = field(default_factory=list)
    count: int = 0
    example: str = ""

    def add(self, row: int, example: str = "") -> None:
        if len(self.rows) < ROWS_SHOWN:
            self.rows.append(row)
        if not self.example:
            self.example = example
        self.count += 1


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def prompt_problem(prompt: object) -> str | None:
    """Why ``prompt`` is not a list of chat messages verl can template, or None when it is."""
    if prompt is None:
        return "is empty (null)"
    if isinstance(prompt, str):
        return "is a plain string, not a list of chat messages"
    if not isinstance(prompt, (list, tuple)):
        return f"is a {type(prompt).__name__}, not a list of chat messages"
    if not prompt:
        return "is an empty list of messages"
    for i, msg in enumerate(prompt):
        if not isinstance(msg, dict):
            return f"message {i} is a {type(msg).__name__}, not a {{'role', 'content'}} dict"
        if "role" not in msg or "content" not in msg:
            return f"message {i} lacks 'role' or 'content' (has {sorted(msg)})"
        if msg["role"] not in CHAT_ROLES:
            return f"message {i} has role {msg['role']!r} (chat templates expect system/user/assistant/tool)"
        if msg["content"] is None:
            return f"message {i} has no content (null)"
    return None


class SchemaChecker:
    """Checks rows as they stream by; memory stays bounded by the number of distinct data_sources.

    ``columns(...)`` once with the file's column names, ``add(index, row)`` per row, then ``findings()``.
    """

    def __init__(self, prompt_key: str = PROMPT_KEY, has_custom_reward: bool = False) -> None:
        self.prompt_key = prompt_key
        self.has_custom_reward = has_custom_reward
        self.present: list[str] = []
        self.rows = 0
        self.data_sources: Counter[str] = Counter()
        self._source_rows: dict[str, list[int]] = {}
        self._problems: dict[tuple[str, str], _Problem] = {}

    def columns(self, names: Iterable[str]) -> None:
        self.present = list(names)

    def _problem(self, column: str, kind: str, row: int, example: str = "") -> None:
        self._problems.setdefault((column, kind), _Problem()).add(row, example)

    def add(self, index: int, row: dict) -> None:
        self.rows += 1
        key = self.prompt_key
        if key in self.present:
            why = prompt_problem(row.get(key))
            if why:
                kind = "role" if " has role " in why else "message" if why.startswith("message") else why
                self._problem(key, kind, index, f"{why}: {_short(row.get(key))}")
        if "data_source" in self.present:
            source = row.get("data_source")
            if not isinstance(source, str) or not source:
                self._problem("data_source", "missing", index, _short(source))
            else:
                self.data_sources[source] += 1
                seen = self._source_rows.setdefault(source, [])
                if len(seen) < ROWS_SHOWN:
                    seen.append(index)
        if "reward_model" in self.present:
            rm = row.get("reward_model")
            if not isinstance(rm, dict):
                self._problem("reward_model.ground_truth", "not_dict", index, _short(rm))
            elif rm.get("ground_truth") is None:
                self._problem("reward_model.ground_truth", "missing", index, _short(rm))
            elif isinstance(rm.get("ground_truth"), str) and "####" in rm["ground_truth"] \
                    and scorer_for(str(row.get("data_source") or "")) == "gsm8k":
                self._problem("reward_model.ground_truth", "gsm8k_solution", index, _short(rm["ground_truth"]))
        if "extra_info" in self.present:
            info = row.get("extra_info")
            if info is not None and not isinstance(info, dict):
                self._problem("extra_info", "not_dict", index, _short(info))
        for column, kind, example in media_problems(row, key, self.present):
            self._problem(column, kind, index, example)

    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        if self.rows == 0:
            return [_finding("data.empty", Severity.ERROR, ["data.train_files"],
                             "the file has no rows; verl stops with 'Train dataloader is empty!'",
                             "point data.train_files at a file with rows")]
        out += self._missing_columns()
        for (column, kind), p in self._problems.items():
            out.append(self._problem_finding(column, kind, p))
        out += self._data_source_findings()
        return out

    def _missing_columns(self) -> list[Finding]:
        out = []
        have = ", ".join(self.present) or "none"
        effects = {
            self.prompt_key: ("RLHFDataset reads row[data.prompt_key] for every row (KeyError)",
                              f"add a '{self.prompt_key}' column of chat messages, e.g. `verl-wizard data convert "
                              "IN --question COL --answer COL --out OUT.parquet`, or set data.prompt_key to the "
                              "column that holds them"),
            "data_source": ("verl's reward manager reads row['data_source'] to pick the scorer "
                            "(KeyError: 'data_source' at the first reward step)",
                            "add a data_source column (e.g. 'openai/gsm8k'); `verl-wizard data convert "
                            "--data-source NAME` writes one"),
            "reward_model": ("the naive/dapo reward manager reads row['reward_model']['ground_truth'] "
                             "(KeyError: 'reward_model' at the first reward step)",
                             "add reward_model = {'style': 'rule', 'ground_truth': ANSWER}; `verl-wizard data "
                             "convert --answer COL` writes it"),
        }
        for column in (self.prompt_key, "data_source", "reward_model"):
            if column not in self.present:
                effect, fix = effects[column]
                col = "reward_model.ground_truth" if column == "reward_model" else column
                keys = ["data.prompt_key"] if column == self.prompt_key else []
                out.append(_finding(f"data.missing_column.{col.split('.')[0]}", Severity.ERROR, keys,
                                    f"column '{col}' is missing in all {self.rows} rows (the file has: {have}); "
                                    f"{effect}", fix))
        return out

    def _problem_finding(self, column: str, kind: str, p: _Problem) -> Finding:
        where = format_rows(p.rows, p.count)
        if column in MEDIA or column in ("extra_info.tools_kwargs", "agent_name"):
            rule, severity, message, fix = media_finding_text(column, kind, where, p.example)
            return _finding(rule, Severity(severity), [], message, fix)
        example = f" (first: {p.example})" if p.example else ""
        if column == self.prompt_key and kind == "role":
            return _finding("data.prompt_role", Severity.WARNING, [],
                            f"column '{column}' in {where} uses a role chat templates may refuse{example}",
                            "use the roles system, user, assistant or tool")
        if column == self.prompt_key:
            return _finding("data.prompt_format", Severity.ERROR, ["data.prompt_key"],
                            f"column '{column}' in {where} {kind if kind != 'message' else 'is malformed'}{example}; "
                            "verl applies the chat template to a list like [{'role': 'user', 'content': '...'}]",
                            "rewrite the prompts as chat messages: `verl-wizard data convert IN --question COL "
                            "--answer COL --out OUT.parquet`")
        if column == "data_source":
            return _finding("data.missing_value.data_source", Severity.ERROR, [],
                            f"column 'data_source' is empty or not a string in {where}{example}; "
                            "verl cannot pick a scorer for those rows",
                            "fill data_source in every row")
        if column == "extra_info":
            return _finding("data.extra_info", Severity.WARNING, [],
                            f"column 'extra_info' is not a dict in {where}{example}; verl reads "
                            "extra_info['index'] and tool kwargs from it and passes it to the reward function",
                            "make extra_info a dict (or null)")
        if kind == "gsm8k_solution":
            return _finding("data.ground_truth_format", Severity.WARNING, [],
                            f"reward_model.ground_truth in {where} holds a whole solution{example}; verl's "
                            "openai/gsm8k scorer compares the number after '####' in the response to the ground "
                            "truth as text, so these rows always score 0",
                            "keep only the final number as ground_truth (verl's gsm8k preprocessing splits on '####')")
        what = "is not a dict" if kind == "not_dict" else "has no 'ground_truth'"
        return _finding("data.missing_value.ground_truth", Severity.ERROR, [],
                        f"column 'reward_model' {what} in {where}{example}; the reward manager reads "
                        "row['reward_model']['ground_truth'] (KeyError / TypeError at the first reward step)",
                        "set reward_model = {'style': 'rule', 'ground_truth': ANSWER} in every row")

    def _data_source_findings(self) -> list[Finding]:
        out = []
        unknown = [s for s in self.data_sources if scorer_for(s) is None]
        if unknown and not self.has_custom_reward:
            parts = [f"'{s}' ({format_rows(self._source_rows[s], self.data_sources[s])})" for s in unknown[:ROWS_SHOWN]]
            more = f" and {len(unknown) - ROWS_SHOWN} more" if len(unknown) > ROWS_SHOWN else ""
            out.append(_finding(
                "data.unknown_data_source", Severity.ERROR,
                ["reward.custom_reward_function.path", "reward.custom_reward_function.name"],
                f"no built-in scorer of verl 0.9.1 handles data_source {', '.join(parts)}{more}; "
                "default_compute_score raises NotImplementedError at the first reward step",
                "write a reward function (data_source, solution_str, ground_truth, extra_info=None) and set "
                "reward.custom_reward_function.path=/abs/file.py reward.custom_reward_function.name=FN, "
                "or use a data_source verl knows (e.g. openai/gsm8k)"))
        return out


def scorer_table(data_sources: Counter[str] | dict[str, int], has_custom_reward: bool = False) -> list[dict]:
    """One line per data_source: rows and who scores it ('gsm8k', 'custom function' or None)."""
    return [{"data_source": s, "rows": n, "scorer": "custom function" if has_custom_reward else scorer_for(s)}
            for s, n in sorted(data_sources.items(), key=lambda kv: (-kv[1], kv[0]))]


def batch_findings(rows: int, train_batch_size: int, rows_after_filter: int | None = None) -> list[Finding]:
    """Rows against data.train_batch_size: verl's dataloader drops the last partial batch."""
    usable = rows if rows_after_filter is None else rows_after_filter
    after = "" if rows_after_filter is None else f" ({rows_after_filter} left after filter_overlong_prompts)"
    if train_batch_size <= 0:
        return []
    if usable < train_batch_size:
        return [_finding(
            "data.fewer_rows_than_batch", Severity.ERROR, ["data.train_batch_size"],
            f"the file has {rows} rows{after}, fewer than data.train_batch_size={train_batch_size}: with "
            "drop_last the dataloader yields no batch, and verl dies (ZeroDivisionError in the v1 trainer, "
            "'Train dataloader is empty!' in the legacy one)",
            f"set data.train_batch_size to at most {usable}, or add rows",
            [f"data.train_batch_size={_largest_power_of_two(usable)}"] if usable > 0 else [])]
    dropped = usable % train_batch_size
    if dropped:
        return [_finding(
            "data.partial_batch", Severity.INFO, ["data.train_batch_size"],
            f"{usable} rows{after} make {usable // train_batch_size} batches of {train_batch_size}; "
            f"the last {dropped} rows are never trained on in an epoch (drop_last)")]
    return []


def _largest_power_of_two(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def prompt_length_findings(lengths: Iterable[tuple[int, int]], max_prompt_length: int,
                           filter_overlong: bool = False) -> list[Finding]:
    """Given (row, tokens) for each prompt after the chat template, flag those over data.max_prompt_length.

    Without data.filter_overlong_prompts verl 0.9.1's agent loop left-truncates them, cutting the start of
    the prompt (usually the system prompt and the question) with only a log line.
    """
    over = _Problem()
    longest = 0
    for row, n in lengths:
        longest = max(longest, n)
        if n > max_prompt_length:
            over.add(row, str(n))
    if not over.count:
        return []
    worst = f"longest {longest} tokens"
    if filter_overlong:
        return [_finding("data.prompt_too_long", Severity.INFO, ["data.max_prompt_length"],
                         f"{over.count} prompts ({format_rows(over.rows, over.count)}) are longer than "
                         f"data.max_prompt_length={max_prompt_length} tokens ({worst}); "
                         "data.filter_overlong_prompts=True drops them")]
    return [_finding("data.prompt_too_long", Severity.WARNING,
                     ["data.max_prompt_length", "data.filter_overlong_prompts"],
                     f"{over.count} prompts ({format_rows(over.rows, over.count)}) are longer than "
                     f"data.max_prompt_length={max_prompt_length} tokens ({worst}); verl's agent loop "
                     "left-truncates them, cutting off the start of the prompt",
                     f"set data.filter_overlong_prompts=True to drop them, or raise data.max_prompt_length to "
                     f"{longest}", ["data.filter_overlong_prompts=True"])]


def length_stats(lengths: list[int]) -> dict:
    """min / median / p95 / max of prompt token counts (empty dict without lengths)."""
    if not lengths:
        return {}
    s = sorted(lengths)

    def q(p: float) -> int:
        return s[min(len(s) - 1, max(0, math.ceil(p * len(s)) - 1))]

    return {"count": len(s), "min": s[0], "median": q(0.5), "p95": q(0.95), "max": s[-1]}


# ---- conversion: user columns -> verl rows ---------------------------------------------------------


class ConversionError(ValueError):
    """A conversion spec or input row that cannot be converted; the message is one line."""


@dataclass(frozen=True)
class ConversionSpec:
    """Which user columns become verl's prompt and ground truth.

    ``template`` wraps the question: '{question}' is replaced by the question text (other braces are kept).
    """

    question: str
    answer: str
    data_source: str = "custom"
    system: str | None = None
    template: str | None = None
    ability: str | None = None
    split: str | None = None

    def validate(self, columns: Iterable[str] | None = None) -> None:
        if self.template is not None and "{question}" not in self.template:
            raise ConversionError("--template must contain {question}, where the question text goes")
        if not self.data_source:
            raise ConversionError("--data-source must not be empty")
        if columns is not None:
            cols = list(columns)
            for what, name in (("--question", self.question), ("--answer", self.answer)):
                if name not in cols:
                    raise ConversionError(f"{what} {name!r}: no such column (the file has: {', '.join(cols)})")


def _text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def convert_row(record: dict, spec: ConversionSpec, index: int) -> dict:
    """One user record as a verl row: chat prompt, data_source, reward_model.ground_truth, extra_info."""
    question, answer = record.get(spec.question), record.get(spec.answer)
    if question is None or _text(question).strip() == "":
        raise ConversionError(f"row {index}: column {spec.question!r} is empty")
    if answer is None or _text(answer).strip() == "":
        raise ConversionError(f"row {index}: column {spec.answer!r} is empty")
    q = _text(question)
    content = spec.template.replace("{question}", q) if spec.template else q
    prompt = ([{"role": "system", "content": spec.system}] if spec.system else []) + [
        {"role": "user", "content": content}]
    extra = {"index": index, "question": q, "answer": _text(answer)}
    if spec.split:
        extra["split"] = spec.split
    return {
        "data_source": spec.data_source,
        "prompt": prompt,
        "ability": spec.ability or "",
        "reward_model": {"style": "rule", "ground_truth": _text(answer)},
        "extra_info": extra,
    }


def conversion_findings(spec: ConversionSpec, has_custom_reward: bool = False) -> list[Finding]:
    """What the converted file will meet in verl: a data_source without a built-in scorer."""
    if has_custom_reward or scorer_for(spec.data_source):
        return []
    return [_finding("data.unknown_data_source", Severity.WARNING, ["reward.custom_reward_function.path"],
                     f"data_source '{spec.data_source}' has no built-in scorer in verl 0.9.1; training needs "
                     "a custom reward function",
                     "pass --data-source openai/gsm8k (or another built-in) if verl's scorer fits, or set "
                     "reward.custom_reward_function.path/name")]
