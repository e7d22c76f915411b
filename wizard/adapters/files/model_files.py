"""What a local model folder holds: config.json, tokenizer files, chat template, weights.

Cheap on purpose (a check must stay fast, even in --batch): small JSON files are read whole,
safetensors files only up to the end of their header (8-byte little-endian length, then a JSON
object of tensor names -> dtype/shape/offsets); tensors are never loaded, ``*.bin`` files only
sized. Problems become Findings with the file named, never exceptions.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from math import prod
from pathlib import Path

from wizard.adapters.files.disk import read_text, special_file
from wizard.core.findings import Finding, Severity, Stage
from wizard.core.models import HF_DOWNLOAD

SAFETENSORS_INDEX = "model.safetensors.index.json"
BIN_INDEX = "pytorch_model.bin.index.json"
_MAX_HEADER = 100 * 1024 * 1024  # the safetensors format caps its header at 100 MB


@dataclass
class FolderFiles:
    config: dict | None = None
    has_tokenizer: bool = False
    has_chat_template: bool = False
    has_weights: bool = False
    weight_bytes: int | None = None
    param_count: int | None = None
    findings: list[Finding] = field(default_factory=list)


def read_folder(folder: Path) -> FolderFiles:
    out = FolderFiles()
    out.config = _config(folder, out.findings)
    _tokenizer(folder, out)
    _weights(folder, out)
    return out


def _finding(rule: str, message: str, fix: str, severity: Severity = Severity.ERROR) -> Finding:
    return Finding(rule=rule, severity=severity, stage=Stage.STARTUP, keys=[], message=message, fix=fix)


def _json_file(path: Path, findings: list[Finding], rule: str, what: str):
    """The parsed JSON of ``path``, or None with a finding naming the line and column that broke."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        findings.append(_finding(rule, f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                                 f"transformers cannot read {what}", f"Repair or re-download {path.name}"))
    except (OSError, ValueError) as exc:  # read_text: one line that names the file
        findings.append(_finding(rule, f"{path} cannot be read ({exc})",
                                 f"Check the permissions of {path.name}"))
    return None


def _config(folder: Path, findings: list[Finding]) -> dict | None:
    path = folder / "config.json"
    if not path.is_file():
        findings.append(_finding("models.config_missing",
                                 f"{folder} has no config.json; verl's HFModelConfig fails on AutoConfig.from_pretrained",
                                 "Point the key at the folder with config.json (a complete Hugging Face download)"))
        return None
    config = _json_file(path, findings, "models.config_unreadable", "the model config")
    if config is not None and not isinstance(config, dict):
        findings.append(_finding("models.config_unreadable", f"{path} holds a JSON {type(config).__name__}, not an "
                                 "object; transformers cannot read the model config", "Re-download config.json"))
        return None
    return config


def _tokenizer(folder: Path, out: FolderFiles) -> None:
    """A tokenizer transformers can load: tokenizer.json, a sentencepiece tokenizer.model, or vocab.json + merges.txt.

    The chat template lives in tokenizer_config.json (or chat_template.jinja/.json beside it);
    verl's RLHFDataset and agent loop apply it to every prompt.
    """
    vocab = (folder / "tokenizer.json").is_file() or (folder / "tokenizer.model").is_file() or (
        (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file())
    template = (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file()
    tok_config_path = folder / "tokenizer_config.json"
    if tok_config_path.is_file():
        tok_config = _json_file(tok_config_path, out.findings, "models.tokenizer_unreadable", "the tokenizer")
        if tok_config is None:
            vocab = False  # AutoTokenizer fails on it as surely as on a missing vocabulary
        elif isinstance(tok_config, dict) and tok_config.get("chat_template"):
            template = True
    out.has_tokenizer = vocab
    out.has_chat_template = template


def _weights(folder: Path, out: FolderFiles) -> None:
    shards = sorted(folder.glob("*.safetensors"))
    bins = sorted(p for p in folder.glob("*.bin") if p.name.startswith(("pytorch_model", "model")))
    out.has_weights = bool(shards or bins)
    index = folder / SAFETENSORS_INDEX
    if index.is_file():
        _from_index(folder, index, out)
        return
    if (folder / BIN_INDEX).is_file():
        _from_index(folder, folder / BIN_INDEX, out, safetensors=False)
        return
    if shards or bins:
        out.weight_bytes = sum(p.stat().st_size for p in shards + bins)
    if shards and not bins:
        out.param_count = _params_of(shards, out.findings)


def _from_index(folder: Path, index: Path, out: FolderFiles, safetensors: bool = True) -> None:
    doc = _json_file(index, out.findings, "models.weights_index_unreadable", "the checkpoint index")
    if not isinstance(doc, dict):
        return
    total = (doc.get("metadata") or {}).get("total_size") if isinstance(doc.get("metadata"), dict) else None
    if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0:
        out.weight_bytes = int(total)
    names = sorted({v for v in (doc.get("weight_map") or {}).values() if isinstance(v, str)})
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        out.findings.append(_finding(
            "models.weights_incomplete",
            f"{index.name} lists {len(names)} weight files but {len(missing)} are missing in {folder} "
            f"(e.g. {missing[0]}): the download is incomplete and loading the model fails at worker start",
            f"Finish the download ({HF_DOWNLOAD} resumes where it stopped)"))
        return
    if out.weight_bytes is None:
        out.weight_bytes = sum((folder / n).stat().st_size for n in names)
    if safetensors and names:
        out.param_count = _params_of([folder / n for n in names], out.findings)


def _params_of(paths: list[Path], findings: list[Finding]) -> int | None:
    total = 0
    for path in paths:
        count = safetensors_param_count(path, findings)
        if count is None:
            return None
        total += count
    return total or None


def safetensors_param_count(path: Path, findings: list[Finding] | None = None) -> int | None:
    """Elements of every tensor in a safetensors file, from its header alone (two small reads)."""
    try:
        if kind := special_file(path):
            raise ValueError(f"a {kind}, not a regular file")
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ValueError("shorter than its 8-byte header length")
            (length,) = struct.unpack("<Q", head)
            if length > _MAX_HEADER or length > path.stat().st_size - 8:
                raise ValueError(f"header length {length} does not fit the file")
            header = json.loads(fh.read(length))
        if not isinstance(header, dict):
            raise ValueError("header is not a JSON object")
        return sum(prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if findings is not None:
            findings.append(_finding("models.weights_unreadable", f"{path} is not a readable safetensors file "
                                     f"({exc}); loading the model fails at worker start",
                                     f"Re-download {path.name}"))
        return None
