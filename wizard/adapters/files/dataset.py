"""Datasets on disk: parquet (lazily, by row group / record batch), JSONL, JSON and CSV; token counts with
a local tokenizer; atomic writes of converted parquet.

Training sets reach tens of GB, so nothing here reads a whole parquet file: previews read the first record
batch, checks stream batches of only the columns they need. The rules on rows live in core.data_schema.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.files.disk import exists, is_dir, special_file
from wizard.core.data import (
    SchemaChecker,
    batch_findings,
    format_rows,
    length_stats,
    prompt_length_findings,
    prompt_problem,
    scorer_table,
)
from wizard.core.findings import Finding, Severity, Stage, sort_findings

BATCH_ROWS = 2048
FORMATS = {".parquet": "parquet", ".jsonl": "jsonl", ".json": "json", ".csv": "csv"}


class DatasetError(ValueError):
    """An unreadable or unsupported dataset file, or a tokenizer that cannot load; the message is one line."""


def _format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DatasetError(f"{path}: unsupported file type {path.suffix or '(none)'!r}; "
                           "use .parquet, .jsonl, .json or .csv")
    return fmt


class DatasetFile:
    """One dataset file, read lazily. Row numbers are 0-based, in file order."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        if not exists(self.path):
            raise DatasetError(f"{self.path}: no such file")
        if is_dir(self.path):
            raise DatasetError(f"{self.path}: is a folder, not a dataset file")
        if kind := special_file(self.path):
            raise DatasetError(f"{self.path}: a {kind}, not a regular file (only regular files are read)")
        self.format = _format(self.path)
        self._pq = None
        if self.format == "parquet":
            import pyarrow.parquet as pq

            try:
                # no pre-buffering: read one row group's pages at a time, so memory follows the row group
                self._pq = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20)
            except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
                raise DatasetError(f"{self.path}: not a readable parquet file ({_one_line(exc)})") from None

    # -- metadata ---------------------------------------------------------------------------------
    def num_rows(self) -> int | None:
        """Known without reading rows for parquet (footer metadata); None for the text formats."""
        return self._pq.metadata.num_rows if self._pq is not None else None

    def columns(self) -> list[str]:
        if self._pq is not None:
            return list(self._pq.schema_arrow.names)
        for batch in self.iter_batches(batch_rows=256):
            return _union_keys(batch)
        return []

    def schema_text(self) -> str:
        if self._pq is not None:
            return "\n".join(f"{f.name}: {f.type}" for f in self._pq.schema_arrow)
        return ", ".join(self.columns())

    # -- rows -------------------------------------------------------------------------------------
    def iter_batches(self, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS) -> Iterator[list[dict]]:
        """Rows as lists of dicts, one bounded batch at a time (only ``columns``, where the format allows)."""
        try:
            if self.format == "parquet":
                cols = None if columns is None else [c for c in columns if c in self._pq.schema_arrow.names]
                for rb in self._pq.iter_batches(batch_size=batch_rows, columns=cols, use_threads=False):
                    yield rb.to_pylist()
            elif self.format == "jsonl" or (self.format == "json" and not self._json_array()):
                yield from self._jsonl(batch_rows)
            elif self.format == "json":
                rows = self._load_json_array()
                for i in range(0, len(rows), batch_rows):
                    yield rows[i:i + batch_rows]
            else:
                yield from self._csv(columns, batch_rows)
        except DatasetError:
            raise
        except OSError as exc:
            raise DatasetError(f"{self.path}: cannot read it ({exc.strerror or exc})") from None
        except Exception as exc:  # noqa: BLE001 - a corrupt file: one line, not a traceback
            raise DatasetError(f"{self.path}: cannot read it ({_one_line(exc)})") from None

    def iter_rows(self, columns: list[str] | None = None) -> Iterator[tuple[int, dict]]:
        index = 0
        for batch in self.iter_batches(columns):
            for row in batch:
                yield index, row
                index += 1

    def head(self, n: int) -> list[dict]:
        """The first ``n`` rows; for parquet this reads the first row group's batch only."""
        out: list[dict] = []
        for batch in self.iter_batches(batch_rows=max(1, min(n, BATCH_ROWS))):
            out += batch[: n - len(out)]
            if len(out) >= n:
                break
        return out

    def sample(self, n: int, columns: list[str] | None = None) -> list[tuple[int, dict]]:
        """``n`` rows spread over the file. Parquet: only the row groups holding them are read."""
        total = self.num_rows()
        if total is None or total <= n:
            return [(i, r) for i, r in _take(self.iter_rows(columns), n)]
        wanted = sorted({round(k * (total - 1) / max(n - 1, 1)) for k in range(n)})
        out: list[tuple[int, dict]] = []
        meta, start = self._pq.metadata, 0
        cols = None if columns is None else [c for c in columns if c in self._pq.schema_arrow.names]
        for g in range(meta.num_row_groups):
            size = meta.row_group(g).num_rows
            inside = [w for w in wanted if start <= w < start + size]
            if inside:
                table = self._pq.read_row_group(g, columns=cols)
                for w in inside:
                    out.append((w, table.slice(w - start, 1).to_pylist()[0]))
            start += size
        return out

    # -- text formats -----------------------------------------------------------------------------
    def _json_array(self) -> bool:
        with open(self.path, "rb") as fh:
            head = fh.read(4096).lstrip()
        return head.startswith(b"[")

    def _load_json_array(self) -> list[dict]:
        try:
            rows = json.loads(self.path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DatasetError(f"{self.path}: not valid JSON ({_one_line(exc)})") from None
        if not all(isinstance(r, dict) for r in rows):
            raise DatasetError(f"{self.path}: a JSON array of objects (one per row) is expected")
        return rows

    def _jsonl(self, batch_rows: int) -> Iterator[list[dict]]:
        batch: list[dict] = []
        with open(self.path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{self.path}: line {lineno} is not valid JSON ({exc.msg})") from None
                if not isinstance(row, dict):
                    raise DatasetError(f"{self.path}: line {lineno} is not a JSON object")
                batch.append(row)
                if len(batch) >= batch_rows:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def _csv(self, columns: list[str] | None, batch_rows: int) -> Iterator[list[dict]]:
        import pyarrow.csv as pacsv

        reader = pacsv.open_csv(self.path, read_options=pacsv.ReadOptions(block_size=1 << 20))
        for rb in reader:
            rows = rb.to_pylist()
            for i in range(0, len(rows), batch_rows):
                yield rows[i:i + batch_rows]


def _take(it, n):
    for i, item in enumerate(it):
        if i >= n:
            return
        yield item


def _union_keys(batch: list[dict]) -> list[str]:
    return list(dict.fromkeys(k for row in batch for k in row))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# ---- preview --------------------------------------------------------------------------------------


@dataclass
class Preview:
    path: str
    format: str
    columns: list[str]
    schema: str
    num_rows: int | None
    rows: list[dict]
    seconds: float

    def to_json(self) -> dict:
        return dict(self.__dict__)


def preview(path: str | os.PathLike, n: int = 5) -> Preview:
    start = time.perf_counter()
    ds = DatasetFile(path)
    rows = ds.head(n)
    columns = ds.columns() if ds.format == "parquet" else _union_keys(rows)
    return Preview(str(ds.path), ds.format, columns, ds.schema_text() if ds.format == "parquet" else ", ".join(columns),
                   ds.num_rows(), rows, time.perf_counter() - start)


# ---- tokenizer ------------------------------------------------------------------------------------


def load_tokenizer(model_dir: str | os.PathLike):
    """The model's own tokenizer, from a local folder only (never the network)."""
    folder = Path(model_dir)
    if not folder.is_dir():
        raise DatasetError(f"{model_dir}: not a local model folder (the tokenizer is read from disk only)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except ImportError:
        raise DatasetError("counting prompt tokens needs the transformers package in this Python") from None
    except Exception as exc:  # noqa: BLE001 - transformers raises many types for a bad folder
        raise DatasetError(f"{model_dir}: cannot load its tokenizer ({_one_line(exc)})") from None


def count_prompt_tokens(tokenizer, prompts: list[list[dict]]) -> list[int | None]:
    """Tokens per prompt after the chat template with the generation prompt, as verl's
    filter_overlong_prompts counts them; None where the template fails (verl then drops the row)."""
    texts: list[str | None] = []
    for msgs in prompts:
        try:
            texts.append(tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False))
        except Exception:  # noqa: BLE001 - verl counts such a row as too long
            texts.append(None)
    good = [t for t in texts if t is not None]
    ids = tokenizer(good, add_special_tokens=False, return_attention_mask=False)["input_ids"] if good else []
    it = iter(ids)
    return [len(next(it)) if t is not None else None for t in texts]


# ---- check ----------------------------------------------------------------------------------------


@dataclass
class DataReport:
    path: str
    rows: int
    columns: list[str]
    findings: list[Finding]
    data_sources: list[dict]
    prompt_tokens: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def to_json(self) -> dict:
        return {"path": self.path, "ok": self.ok, "rows": self.rows, "columns": self.columns,
                "data_sources": self.data_sources, "prompt_tokens": self.prompt_tokens,
                "seconds": round(self.seconds, 3), "findings": [f.to_json() for f in self.findings]}


def check_file(path: str | os.PathLike, batch_size: int | None = None, model_dir: str | None = None,
               max_prompt_length: int | None = None, filter_overlong: bool = False,
               has_custom_reward: bool = False, prompt_key: str = "prompt") -> DataReport:
    """Stream the file once: schema per row, data_source → scorer, rows vs batch size, prompt tokens."""
    start = time.perf_counter()
    ds = DatasetFile(path)
    tokenizer = load_tokenizer(model_dir) if model_dir else None
    checker = SchemaChecker(prompt_key=prompt_key, has_custom_reward=has_custom_reward)
    wanted = [prompt_key, "data_source", "reward_model", "extra_info", "images", "videos", "audios", "agent_name"]
    lengths: list[tuple[int, int]] = []
    untemplated: list[int] = []
    columns_known = ds.format == "parquet"
    if columns_known:
        checker.columns(ds.columns())
    index = 0
    for batch in ds.iter_batches(wanted):
        if not columns_known:  # text formats: the keys of the first batch, as datasets would infer them
            checker.columns(_union_keys(batch))
            columns_known = True
        prompts: list[tuple[int, list]] = []
        for row in batch:
            checker.add(index, row)
            if tokenizer is not None and prompt_problem(row.get(prompt_key)) is None:
                prompts.append((index, row[prompt_key]))
            index += 1
        if prompts:
            counts = count_prompt_tokens(tokenizer, [p for _, p in prompts])
            for (i, _), n in zip(prompts, counts):
                if n is None:
                    untemplated.append(i)
                else:
                    lengths.append((i, n))
    findings = checker.findings()
    rows_after = None
    if max_prompt_length and lengths:
        findings += prompt_length_findings(lengths, max_prompt_length, filter_overlong)
        if filter_overlong:
            rows_after = sum(1 for _, n in lengths if n <= max_prompt_length)
    if untemplated:
        findings.append(Finding(rule="data.chat_template", severity=Severity.WARNING, stage=Stage.RUNTIME,
                                keys=["actor_rollout_ref.model.path"],
                                message=f"the tokenizer in {model_dir} cannot apply its chat template to "
                                        f"{format_rows(untemplated[:5], len(untemplated))}",
                                fix="use a model whose tokenizer_config.json has a chat_template", fix_auto=False))
    if batch_size and checker.rows:
        findings += batch_findings(checker.rows, batch_size, rows_after)
    return DataReport(str(ds.path), checker.rows, checker.present, sort_findings(findings),
                      scorer_table(checker.data_sources, has_custom_reward),
                      length_stats([n for _, n in lengths]), time.perf_counter() - start)


# ---- prompt lengths for the plan -----------------------------------------------------------------------------------


def prompt_lengths(path: str | os.PathLike, model_dir: str | None = None, prompt_key: str = "prompt",
                   limit: int = 20_000) -> tuple[list[int], int, str]:
    """(prompt token counts of the first ``limit`` rows, rows in the file, how they were counted): with the model's
    own tokenizer and chat template where ``model_dir`` is a local folder that has one, else approximated as
    characters / 4 of the messages' text (stated). A parquet file is read only as far as ``limit`` rows (its footer
    gives the row count); a text format is read through once, a batch at a time, to count its rows. A file with an
    ``images`` or ``videos`` column says their tokens are left out (verl expands each into its placeholder tokens in
    the prompt; the images themselves are not decoded here). DatasetError for a file that cannot be read."""
    ds = DatasetFile(path)
    tokenizer = None
    how = "approximated as characters / 4 (no local tokenizer: the model is not a local folder)"
    if model_dir and Path(model_dir).is_dir():
        try:
            tokenizer = load_tokenizer(model_dir)
            how = f"tokenized with {model_dir}'s tokenizer and chat template"
        except DatasetError as exc:
            how = f"approximated as characters / 4 ({exc})"
    lengths: list[int] = []
    rows = 0
    known = ds.num_rows()
    for batch in ds.iter_batches([prompt_key]):
        if known is not None and rows >= limit:
            break
        prompts = []
        for row in batch:
            rows += 1
            if len(lengths) + len(prompts) < limit and prompt_problem(row.get(prompt_key)) is None:
                prompts.append(row[prompt_key])
        if not prompts:
            continue
        if tokenizer is not None:
            lengths += [n for n in count_prompt_tokens(tokenizer, prompts) if n is not None]
        else:
            lengths += [max(1, sum(len(str(m.get("content", ""))) for m in p if isinstance(m, dict)) // 4)
                        for p in prompts]
    media = [c for c in ("images", "videos") if c in ds.columns()]
    if media:
        how += (f"; the {' and '.join(media)} of the rows are not counted (each adds its own tokens to the prompt, "
                "up to 16,384 for a Qwen2.5-VL image)")
    return lengths, known if known is not None else rows, how
