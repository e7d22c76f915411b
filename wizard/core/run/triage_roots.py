"""Root causes triage knows by name, and the finding for a root cause it does not: each says what the first error
was, how often and where it happened, which later error it explains, and what to change.

Known chains (verl 0.9.1 logs, tests/data/run_logs/): a model that cannot be fetched from the Hugging Face hub is
reported last as Hydra's "Error in call to target 'verl.workers.config.model.HFModelConfig'"; an agent loop that
fails for every trajectory is reported last as "Sync replay buffer selected terminal groups with no
materializable trajectories".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.models.facts import HF_DOWNLOAD
from wizard.core.run.rootcause import Cluster
from wizard.core.verl.keys import MODEL

MODEL_PATH = f"{MODEL}.path"
_MODEL = re.compile(r"actor_rollout_ref\.model\.path=([^'\",\]\s]+)")


def _f(rule: str, message: str, fix: str, keys: list[str] | None = None, fix_overrides: list[str] | None = None,
       stage: Stage = Stage.RUNTIME, auto: bool = False, severity: Severity = Severity.ERROR) -> Finding:
    return Finding(rule=rule, severity=severity, stage=stage, keys=keys or [], message=message, fix=fix,
                   fix_overrides=fix_overrides or [], fix_auto=auto)


def where(cluster: Cluster) -> str:
    """'64 times in 8 processes (AgentLoopWorkerTQ ...), first on log line 1163'."""
    names = sorted({p.split(" pid=")[0] for p in cluster.processes})
    procs = (f"in {len(cluster.processes)} processes ({', '.join(names)})" if len(cluster.processes) > 1
             else "in the driver" if cluster.processes[0] == "driver" else f"in {cluster.processes[0]}")
    times = f"{cluster.count} times " if cluster.count > 1 else ""
    return f"{times}{procs}, first on log line {cluster.first + 1}"


def explains(root: Cluster, final: Cluster) -> str:
    if final is root:
        return ""
    return f" It explains the error the run stopped with: {final.text[:200].rstrip('.')}."


@dataclass(frozen=True)
class KnownRoot:
    id: str
    pattern: re.Pattern
    build: Callable[[Cluster, Cluster, list[str]], Finding]


def _model(texts: list[str]) -> str | None:
    for text in texts:
        if "model.path=" in text and (m := _MODEL.search(text)):
            return m.group(1)
    return None


def _hub(root: Cluster, final: Cluster, texts: list[str]) -> Finding:
    model = _model(texts)
    offline = "outgoing traffic has been disabled" in root.text or "HF_HUB_OFFLINE" in root.text
    what = f"the model {model}" if model else "the model"
    why = ("HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE is set and the files are not in the local Hugging Face cache"
           if offline else "this machine cannot reach huggingface.co (no network, DNS, a proxy or a firewall)")
    msg = (f"verl could not fetch {what} from the Hugging Face hub: {why}. The first error: {root.text[:200]} "
           f"({where(root)}); verl loads the tokenizer in the TaskRunner before any GPU work and reports it as an "
           f"instantiation error of HFModelConfig.{explains(root, final)}")
    fix = (f"Download it once where there is network ({HF_DOWNLOAD} {model or 'ORG/NAME'} --local-dir "
           f"/models/NAME), copy it to every node and set {MODEL_PATH}=/models/NAME"
           + ("; or unset HF_HUB_OFFLINE if this machine may use the network" if offline else
              "; or point HF_ENDPOINT at a mirror you can reach"))
    return _f("triage.hub_unreachable", msg, fix, [MODEL_PATH], stage=Stage.STARTUP)


def _tokenizer(root: Cluster, final: Cluster, texts: list[str]) -> Finding:
    family = (re.search(r"Expected (\w+)", root.message) or [None, "the model's"])[1]
    msg = (f"Every trajectory failed in verl's agent loop: {root.text[:200]} ({where(root)}). verl picks the agent "
           f"loop's token builder from the model's config.json model_type ({family} here), and the tokenizer does not "
           f"tokenize that family's chat separators as it expects (the tokenizer does not belong to the model)."
           f"{explains(root, final)}")
    fix = (f"Use the tokenizer that belongs to the model (or a config.json model_type that matches the tokenizer); "
           f"check with: python -c \"from transformers import AutoTokenizer as T; "
           f"print(T.from_pretrained('{_model(texts) or 'MODEL'}').encode(chr(10), add_special_tokens=False))\" "
           "- a Qwen tokenizer prints one id")
    return _f("triage.agent_loop_tokenizer", msg, fix, [MODEL_PATH, "actor_rollout_ref.model.tokenizer_path"])


KNOWN: tuple[KnownRoot, ...] = (
    KnownRoot("triage.hub_unreachable", re.compile(
        r"huggingface\.co|outgoing traffic has been disabled|name resolution|Name or service not known|"
        r"^(?:ConnectError|ConnectionError|ConnectTimeout|LocalEntryNotFoundError|OfflineModeIsEnabled)\b|"
        r"Max retries exceeded with url"), _hub),
    KnownRoot("triage.agent_loop_tokenizer", re.compile(
        r"Expected \w+ newline to tokenize to one token|Tokenizer does not define required token|"
        r"to tokenize to at least one token|Continuous Token"), _tokenizer),
)


def unknown(root: Cluster, final: Cluster, exit_code: int | None) -> Finding:
    """The root cause, when no rule knows it: quoted, counted and placed, with what it explains."""
    return _f("triage.unknown",
              f"The run stopped with exit code {exit_code}; the first error that explains it: {root.text.strip()[:300]} "
              f"({where(root)}).{explains(root, final)}",
              "Read that error's traceback in the full log in the run directory; verl-wizard check and doctor catch "
              "many causes before launch")


def consequence(finding: Finding, root: Cluster) -> Finding:
    """A finding about a later error that the root cause explains: kept, as a warning pointing at the root."""
    return finding.model_copy(update={
        "severity": Severity.WARNING,
        "message": f"{finding.message} (This came after, and likely from, the first error: {root.text[:120]}.)"})


__all__ = ["KNOWN", "KnownRoot", "consequence", "unknown", "where", "explains"]
