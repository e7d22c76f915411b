"""Convert a user's dataset file into verl's row format (``data convert``, the Data step's Convert dialog): a
preview of the first converted rows, and the whole file written as one atomic parquet (the previous one kept as a
backup). Reading the input is ``dataset``'s; what a row becomes is ``wizard.core.data``'s."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from wizard.adapters.files.dataset import DatasetError, DatasetFile
from wizard.adapters.files.disk import backup_path
from wizard.core.data import ConversionError, ConversionSpec, conversion_findings, convert_row, format_rows
from wizard.core.findings import Finding, Severity, Stage


def verl_schema():
    import pyarrow as pa

    msg = pa.struct([("role", pa.string()), ("content", pa.string())])
    return pa.schema([
        ("data_source", pa.string()),
        ("prompt", pa.list_(msg)),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct([("index", pa.int64()), ("question", pa.string()), ("answer", pa.string()),
                                  ("split", pa.string())])),
    ])


@dataclass
class Conversion:
    rows: list[dict]
    written: int
    skipped: list[int]
    findings: list[Finding]
    out: str | None = None
    backup: str | None = None


def _converted(ds: DatasetFile, spec: ConversionSpec, skipped: list[int]) -> Iterator[list[dict]]:
    index = 0
    for batch in ds.iter_batches():
        out = []
        for record in batch:
            try:
                out.append(convert_row(record, spec, index))
            except ConversionError:
                skipped.append(index)
            index += 1
        yield out


def _prepare(in_path: str | os.PathLike, spec: ConversionSpec) -> DatasetFile:
    ds = DatasetFile(in_path)
    spec.validate(ds.columns())
    return ds


def convert_preview(in_path: str | os.PathLike, spec: ConversionSpec, n: int = 3) -> list[dict]:
    """The first ``n`` converted rows, without writing anything."""
    ds = _prepare(in_path, spec)
    out: list[dict] = []
    for batch in _converted(ds, spec, []):
        out += batch[: n - len(out)]
        if len(out) >= n:
            break
    return out


def convert_file(in_path: str | os.PathLike, out_path: str | os.PathLike, spec: ConversionSpec,
                 has_custom_reward: bool = False) -> Conversion:
    """Convert and write atomically (a temp file in the same folder, then rename); an existing file is kept
    as NAME.<timestamp>.bak. Rows with an empty question or answer are skipped and named."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ds = _prepare(in_path, spec)
    out = Path(out_path)
    if out.resolve() == ds.path.resolve():
        raise DatasetError(f"{out}: the output would overwrite the input; choose another --out")
    if out.suffix.lower() != ".parquet":
        raise DatasetError(f"{out}: the output must be a .parquet file")
    skipped: list[int] = []
    schema = verl_schema()
    written, first = 0, []
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        os.close(fd)
        try:
            with pq.ParquetWriter(tmp, schema) as writer:
                for batch in _converted(ds, spec, skipped):
                    if not batch:
                        continue
                    if len(first) < 3:
                        first += batch[: 3 - len(first)]
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                    written += len(batch)
            if written == 0:
                raise DatasetError(f"{ds.path}: no row has both {spec.question!r} and {spec.answer!r}; nothing written")
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            backup = None
            if out.exists():
                backup = backup_path(out)
                os.link(out, backup)
            os.replace(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise DatasetError(f"cannot write {out}: {exc.strerror or exc}") from None
    findings = conversion_findings(spec, has_custom_reward)
    if skipped:
        findings.append(Finding(rule="data.convert_skipped", severity=Severity.WARNING, stage=Stage.ADVICE, keys=[],
                                message=f"{format_rows(skipped[:5], len(skipped))} had an empty "
                                        f"{spec.question!r} or {spec.answer!r} and were left out",
                                fix=None, fix_auto=False))
    return Conversion(first, written, skipped, findings, str(out), str(backup) if backup else None)
