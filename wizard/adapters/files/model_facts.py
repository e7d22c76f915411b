"""The models a config names, looked at on this machine: a local folder, or a hub id from the catalogue.

Nothing is downloaded and no weights are loaded: a local folder gives its config.json, which
tokenizer files it has and the safetensors headers (8-byte length + JSON, read cheaply); a hub
id (``org/name`` that is not a path here) gives the catalogue row of
``resources/model-catalogue.yaml`` and the exact download command. What cannot be read becomes a
Finding with a one-line reason, never a traceback. The rules on these facts live in
``wizard.core.check.rules.models``.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


from wizard.adapters.files.disk import exists, is_dir
from wizard.adapters.files.model_files import FolderFiles, read_folder
from wizard.adapters.files.resources import resource_text, yaml_resource
from wizard.core.findings import Finding, Severity, Stage
from wizard.core.models import (HF_DOWNLOAD, PLACEHOLDER_PATH, ModelConfigError, ModelFacts, facts_from_hf_config,
                                      model_paths)

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")  # org/name, as verl examples use
_REMOTE_SCHEMES = ("hdfs://", "s3://", "gs://", "oss://", "http://", "https://")
# Which trust_remote_code key applies to each role's model (the reward model has none: verl builds its
# HFModelConfig with the default trust_remote_code=False, experimental/reward_loop/reward_model.py).
TRUST_KEYS = {"actor": "actor_rollout_ref.model.trust_remote_code", "ref": "actor_rollout_ref.model.trust_remote_code",
              "critic": "critic.model.trust_remote_code"}


@dataclass
class ModelLookup:
    """What the wizard could learn about one model reference, and what went wrong looking."""

    ref: str
    facts: ModelFacts | None
    findings: list[Finding] = field(default_factory=list)
    local: bool = False


@dataclass(frozen=True)
class Catalogue:
    models: dict[str, tuple[str, dict]]  # lower-case id -> (id as written, row)
    native_model_types: frozenset[str]

    def facts(self, hub_id: str) -> ModelFacts | None:
        hit = self.models.get(hub_id.lower())
        if hit is None:
            return None
        name, row = hit
        facts = facts_from_hf_config(self.config(name), name=name, source="catalogue",
                                     native_model_types=self.native_model_types)
        return facts.model_copy(update={"gated": bool(row.get("gated", False)),
                                        "verified": bool(row.get("verified", False))})

    def config(self, hub_id: str, _seen: tuple[str, ...] = ()) -> dict:
        """The row's config.json fields; a row with ``same_as`` takes its base row's and changes what it lists."""
        name, row = self.models[hub_id.lower()]
        base = row.get("same_as")
        own = dict(row.get("config") or {})
        if not base:
            return own
        if base.lower() in _seen or base.lower() not in self.models:
            raise ModelConfigError(f"same_as: {base} is {'a loop' if base.lower() in _seen else 'not in the catalogue'}")
        return {**self.config(base, (*_seen, name.lower())), **own}

    def sized_as(self, hub_id: str) -> str | None:
        """The catalogue model an unknown id is named after (``Qwen/Qwen2.5-Coder-3B-Instruct-GPTQ-Int4`` ->
        ``Qwen/Qwen2.5-Coder-3B-Instruct``, ``me/Qwen2.5-7B-grpo-gsm8k`` -> ``Qwen/Qwen2.5-7B``): the row whose
        name's parts (split at - and _) all appear, in order, in the id's name, sizes included; the most specific
        (most parts) wins. None without a size in common (a guess by family alone would be a guess of the size), and
        for an id a letter or two off a listed one (a typo)."""
        if difflib.get_close_matches(hub_id.lower(), list(self.models), n=1, cutoff=0.9):
            return None  # a typo of a listed id (near() says "did you mean"), not another model
        parts = _name_parts(hub_id)
        best: tuple[int, str] | None = None
        for name, _ in self.models.values():
            own = _name_parts(name)
            if not any(_SIZE_PART.fullmatch(p) for p in own) or not _in_order(own, parts):
                continue
            if best is None or len(own) > best[0]:
                best = (len(own), name)
        return best[1] if best else None

    def near(self, hub_id: str) -> list[str]:
        """Up to three catalogue ids spelled like ``hub_id``; where its name says a size (13B), the nearest sizes
        first (Qwen2.5-13B-Foo: 14B before 3B, which spells closer)."""
        close = difflib.get_close_matches(hub_id.lower(), list(self.models), n=6, cutoff=0.75)
        want = _size_b(hub_id)
        if want:
            close.sort(key=lambda c: abs(math.log((_size_b(c) or 1e9) / want)))  # stable: spelling breaks ties
        return [self.models[c][0] for c in close[:3]]


def _size_b(name: str) -> float | None:
    """The parameter count a model's name says, in billions (Qwen2.5-13B-Foo: 13.0; Qwen3-30B-A3B: 30.0)."""
    m = re.search(r"(?<![\w.])(\d+(?:\.\d+)?)[bB](?![a-zA-Z])", name.rsplit("/", 1)[-1].replace("-", " ").replace("_", " "))
    return float(m.group(1)) if m and float(m.group(1)) > 0 else None


@lru_cache(maxsize=1)
def load_catalogue() -> Catalogue:
    doc = yaml_resource(resource_text("model-catalogue.yaml"))  # paid by every check that names a model
    models = {name.lower(): (name, row) for name, row in doc["models"].items()}
    return Catalogue(models=models, native_model_types=frozenset(doc.get("transformers_model_types", [])))


def smaller_in_family(hub_id: str, n: int = 2) -> list[ModelFacts]:
    """The catalogue's models named like ``hub_id`` but for a smaller size (``Qwen/Qwen2.5-7B-Instruct`` ->
    ``Qwen/Qwen2.5-3B-Instruct``, ``...-1.5B-Instruct``), the largest first; [] for a name without a size."""
    pattern = _SIZE.sub("{}", hub_id, count=1).lower()
    if pattern == hub_id.lower():
        return []
    catalogue = load_catalogue()
    own = catalogue.facts(hub_id)
    found = []
    for key, (name, _) in catalogue.models.items():
        if key != hub_id.lower() and _SIZE.sub("{}", key, count=1) == pattern:
            facts = catalogue.facts(name)
            if facts is not None and (own is None or facts.param_count < own.param_count):
                found.append(facts)
    return sorted(found, key=lambda f: -f.param_count)[:n]


_SIZE = re.compile(r"(?<=[-_])\d+(?:\.\d+)?[bB](?=$|[-_])")
_SIZE_PART = re.compile(r"\d+(?:\.\d+)?b|\d+x\d+b|a\d+(?:\.\d+)?b")


def _name_parts(hub_id: str) -> list[str]:
    return [p for p in re.split(r"[-_]", hub_id.rsplit("/", 1)[-1].lower()) if p]


def _in_order(needle: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(p == h for h in it) for p in needle)


def catalogue_ids() -> list[str]:
    return sorted(name for name, _ in load_catalogue().models.values())


# -- one reference -----------------------------------------------------------------------

def load_model_facts(ref: str, *, trust_remote_code: bool = False) -> ModelLookup:
    """Facts about the model ``ref`` names: a local folder, or a hub id (from the catalogue; no network).

    ``trust_remote_code`` is the flag the config sets for this model: with it, a custom-code
    config whose layout the wizard cannot read is only a note (verl will run the repo's code).
    """
    if ref.startswith(_REMOTE_SCHEMES):
        return ModelLookup(ref, None, [_finding("models.remote_path", Severity.INFO, Stage.ADVICE,
                           f"{ref} is a remote location that verl copies at startup; the wizard does not read it, so "
                           "heads, context and memory checks are skipped for it")])
    path = Path(os.path.expanduser(os.path.expandvars(ref)))
    if exists(path):
        return _local(ref, path, trust_remote_code)
    if ref.startswith(("/", ".", "~", "$")) or not _HUB_ID.match(ref):
        return ModelLookup(ref, None, [_missing(ref, path)], local=True)
    return _hub(ref)


def _missing(ref: str, path: Path) -> Finding:
    hint = f"{HF_DOWNLOAD} ORG/NAME --local-dir {shlex.quote(str(path))}"
    # A warning, like a missing data file: plans are often written on a laptop for a cluster.
    return _finding("models.path_missing", Severity.WARNING, Stage.STARTUP,
                    f"{ref} is not on this machine (looked for {path}); if it is missing where the run happens too, "
                    "verl's TaskRunner fails loading its tokenizer and config before any GPU work",
                    f"Put the model there ({hint}) or point the key at the model folder or a hub id")


def _hub(ref: str) -> ModelLookup:
    catalogue = load_catalogue()
    findings: list[Finding] = []
    try:
        facts = catalogue.facts(ref)
    except ModelConfigError as exc:  # a broken catalogue row: say so rather than crash
        facts = None
        findings.append(_finding("models.catalogue_row", Severity.WARNING, Stage.ADVICE,
                                 f"the catalogue row for {ref} cannot be read ({exc})", "Please report it"))
    findings.insert(0, _download_finding(facts.name if facts else ref))
    base = catalogue.sized_as(ref) if facts is None and not findings[1:] else None
    if base is not None:
        facts = catalogue.facts(base).model_copy(update={"name": ref, "verified": False, "source": "guess"})
        findings.append(_finding(
            "models.sized_as", Severity.INFO, Stage.ADVICE,
            f"{ref} is not in the wizard's catalogue; sized as {base}, the model its name says it is (a guess: a "
            "fine-tune keeps its base's shape, but a quantised copy (GPTQ, AWQ, bnb) holds smaller weights and "
            "another architecture would not match)",
            f"For exact sizes download its config.json ({HF_DOWNLOAD} {shlex.quote(ref)} config.json --local-dir "
            f"DIR) and point the key at DIR, or use {base} itself", fix_auto=False))
    if facts is None and not any(f.rule == "models.catalogue_row" for f in findings):
        near = catalogue.near(ref)
        typo = _typo_of(ref, near)
        if typo is not None:  # a letter or two from a catalogue id: no download of the misspelt name is offered
            findings = [f for f in findings if f.rule != "models.hub_download"] + [_finding(
                "models.hub_typo", Severity.WARNING, Stage.STARTUP,
                f"{ref} is not in the wizard's catalogue but is spelled almost like {typo}; if the hub has no such "
                "repository, every worker fails loading its config before any GPU work (OSError: ... is not a local "
                "folder and is not a valid model identifier)", f"If you meant {typo}, use that id", fix_auto=False)]
            return ModelLookup(ref, None, findings, local=False)
        findings.append(_finding(
            "models.not_in_catalogue", Severity.INFO, Stage.ADVICE,
            f"{ref} is not in the wizard's catalogue of {len(catalogue.models)} models, so its heads, context "
            "length and size are unknown here and those checks are skipped"
            + (f"; did you mean {' or '.join(near)}?" if near else ""),
            "Download it and point the key at the folder for the full checks" if not near
            else f"If you meant {near[0]}, use that id"))
    return ModelLookup(ref, facts, findings, local=False)


def _typo_of(ref: str, near: list[str]) -> str | None:
    """The catalogue id ``ref`` is a slip of the keyboard from (same organisation, names a letter or two apart:
    Qwen/Qwen2.5-7B-Instrcut for Qwen/Qwen2.5-7B-Instruct), or None: a fine-tune of its own name is not, nor a
    name that differs in a digit (a version or a size: another model)."""
    org, _, name = ref.lower().partition("/")
    for hub_id in near[:1]:
        o, _, n = hub_id.lower().partition("/")
        if o != org or n == name or sorted(c for c in n if c.isdigit()) != sorted(c for c in name if c.isdigit()):
            continue
        if len(n) == len(name) and sum(a != b for a, b in zip(n, name)) <= 2:
            return hub_id
        if abs(len(n) - len(name)) == 1 and difflib.SequenceMatcher(None, n, name).ratio() >= 0.95:
            return hub_id
    return None


def download_command(hub_id: str) -> tuple[str, str]:
    """(the download command, the folder it fills): every value shell-quoted."""
    folder = str(Path.home() / "models" / hub_id.split("/")[-1])
    return f"{HF_DOWNLOAD} {shlex.quote(hub_id)} --local-dir {shlex.quote(folder)}", folder


def _download_finding(ref: str) -> Finding:
    command, folder = download_command(ref)
    return _finding("models.hub_download", Severity.INFO, Stage.ADVICE,
                    f"{ref} is a hub id: every node downloads it into its Hugging Face cache when the workers start "
                    f"(needs network there); to fetch it once ahead: {command}",
                    f"Run: {command} -- then point the key at {folder}", fix_auto=False)


def _local(ref: str, path: Path, trust_remote_code: bool) -> ModelLookup:
    if not is_dir(path):
        return ModelLookup(ref, None, [_finding("models.not_a_folder", Severity.ERROR, Stage.STARTUP,
                           f"{ref} is a file, not a model folder; verl loads config.json and the tokenizer from a folder",
                           "Point the key at the folder that holds config.json")], local=True)
    files = read_folder(path)
    findings = list(files.findings)
    if files.config is None:
        return ModelLookup(ref, None, findings, local=True)
    # transformers' own model types matter only for a config that names its own code (auto_map)
    native = load_catalogue().native_model_types if "auto_map" in files.config else None
    try:
        facts = facts_from_hf_config(files.config, name=ref, source="local", native_model_types=native)
    except ModelConfigError as exc:
        custom = isinstance(files.config, dict) and "auto_map" in files.config
        severity = Severity.INFO if custom and trust_remote_code else Severity.WARNING
        findings.append(_finding("models.config_layout", severity, Stage.ADVICE,
                                 f"{path / 'config.json'}: {exc}; heads, context and memory checks are skipped for it",
                                 "Nothing to do if transformers loads it (custom code); else check the file"))
        return ModelLookup(ref, None, findings, local=True)
    return ModelLookup(ref, facts.model_copy(update=_file_facts(files)), findings, local=True)


def _file_facts(files: FolderFiles) -> dict:
    return {"has_tokenizer": files.has_tokenizer, "has_chat_template": files.has_chat_template,
            "has_weights": files.has_weights, "weight_bytes": files.weight_bytes,
            "param_count_from_weights": files.param_count}


# -- every model a config names -------------------------------------------------------------

def load_models_for(facts: dict, cache: dict | None = None) -> dict[str, ModelLookup]:
    """Role -> lookup for the models the resolved config (``CheckResult.facts``) makes verl load.

    Findings carry the key that names the model. verl's placeholder default path is left to the
    rules that already report it. ``cache`` (path, trust flag) -> lookup spares re-reading a folder
    that several cases or roles name.
    """
    cache = {} if cache is None else cache
    out: dict[str, ModelLookup] = {}
    for role, (key, ref) in model_paths(facts).items():
        if ref == PLACEHOLDER_PATH and not exists(os.path.expanduser(ref)):
            continue
        trust = bool(facts.get(TRUST_KEYS[role])) if role in TRUST_KEYS else False
        if (ref, trust) not in cache:
            cache[(ref, trust)] = load_model_facts(ref, trust_remote_code=trust)
        found = cache[(ref, trust)]
        hub_name = found.facts.name if found.facts is not None and not found.local else ref
        keyed = [_keyed(f, key, hub_name) for f in found.findings]
        out[role] = ModelLookup(found.ref, found.facts, keyed, found.local)
    return out


def _keyed(finding: Finding, key: str, ref: str) -> Finding:
    update: dict = {"keys": [key], "message": f"{key}: {finding.message}"}
    if finding.rule == "models.hub_download":  # the download's folder is the value to set afterwards: offered to
        folder = download_command(ref)[1]  # apply once it is there (before, the plan would point at nothing)
        update["fix_overrides"] = [f"{key}={folder}"] if is_dir(Path(folder)) else []
    return finding.model_copy(update=update)


def lookup_findings(lookups: dict[str, ModelLookup]) -> list[Finding]:
    """The lookups' findings once each (the reference model shares the actor's path and findings)."""
    seen: set[tuple[str, str]] = set()
    out: list[Finding] = []
    for lookup in lookups.values():
        for f in lookup.findings:
            if (f.rule, f.message) not in seen:
                seen.add((f.rule, f.message))
                out.append(f)
    return out


def facts_by_role(lookups: dict[str, ModelLookup]) -> dict[str, ModelFacts]:
    return {role: lookup.facts for role, lookup in lookups.items() if lookup.facts is not None}


def _finding(rule: str, severity: Severity, stage: Stage, message: str, fix: str | None = None,
             fix_auto: bool = True) -> Finding:
    return Finding(rule=rule, severity=severity, stage=stage, keys=[], message=message, fix=fix, fix_auto=fix_auto)
