"""Triage of a finished run: the known failure texts (``triage_rules``) and, for a failed run, the root cause
(``rootcause``): the earliest error that explains the one the run stopped with, across every process.

Pure: the log's lines in, findings out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from wizard.core.findings import Finding, sort_findings
from wizard.core.run.logparse import split_line
from wizard.core.run.rootcause import Cluster, analyse
from wizard.core.run.triage_roots import KNOWN, _f, consequence, explains, unknown, where
from wizard.core.run.triage_rules import RULES, TriageContext, TriageRule

_DATASET = re.compile(r"train dataset size: (\d+)")
_BATCH = re.compile(r"'train_batch_size': (\d+)")


def triage(lines: Iterable[str], exit_code: int | None = None) -> list[Finding]:
    """Findings for a run's log (raw console lines, in order). For a failed run (exit code not 0) the first finding
    is the root cause (``rootcause``): the earliest error that explains the one the run stopped with, named by the
    rule that knows it, or quoted (``triage.unknown``); later errors it explains are kept as warnings."""
    parts = [split_line(raw) for raw in lines]
    texts = [p.text for p in parts]
    ctx = _context(texts)
    found, first_at = _match_rules(texts, ctx)
    findings = list(found.values())
    # a host OOM explains a dead actor; one message is enough
    if any(f.rule == "triage.host_oom" for f in findings):
        findings = [f for f in findings if f.rule != "triage.actor_died"]
    if exit_code in (None, 0):
        return sort_findings(findings)
    processes = [f"{p.actor} pid={p.pid}" if p.actor else None for p in parts]
    result = analyse(list(zip(processes, texts))).root()
    if result is None:
        if not findings:
            findings.append(_f("triage.unknown", f"The run stopped with exit code {exit_code} and printed no error line.",
                               "Read the full log in the run directory; verl-wizard check and doctor catch many causes "
                               "before launch"))
        return sort_findings(findings)
    root, final = result
    head = _root_finding(root, final, ctx, texts, exit_code)
    causes = [k for k in found if k[0] not in CONSEQUENCES and first_at[k] <= root.first]
    if head.rule == "triage.unknown" and causes:
        # the first error is generic (an engine that failed to start, a bare AssertionError), while a rule knows a
        # line before it that says why: the earliest such line is the cause; the generic error is still quoted
        key = min(causes, key=lambda k: first_at[k])
        known = found[key]
        head = known.model_copy(update={"message": f"{known.message} (The first error of the run: "
                                                   f"{root.text.strip()[:200]}, {where(root)}.{explains(root, final)})"})
    rest = [f for f in findings if f.rule != head.rule]
    rest = [consequence(f, root) if first_at[(f.rule, f.message)] > root.first else f for f in rest]
    return [head] + sort_findings(rest)


# rules that name what follows a failure, never its cause
CONSEQUENCES = frozenset({"triage.actor_died", "triage.nccl_timeout"})


def _context(texts: list[str]) -> TriageContext:
    size = batch = None
    for text in texts:
        if "dataset size" in text and (m := _DATASET.search(text)):
            size = int(m.group(1))
        elif "'train_batch_size'" in text and batch is None and (m := _BATCH.search(text)):
            batch = int(m.group(1))
    return TriageContext(lines=texts, train_dataset_size=size, train_batch_size=batch)


def _match_rules(texts: list[str], ctx: TriageContext) -> tuple[dict[tuple, Finding], dict[tuple, int]]:
    """Each rule's findings, once per (rule, message), with the line each first matched."""
    found: dict[tuple, Finding] = {}
    first_at: dict[tuple, int] = {}
    for i, text in enumerate(texts):
        finding = _first_rule(text, ctx, i)
        if finding is not None:
            key = (finding.rule, finding.message)
            found.setdefault(key, finding)
            first_at.setdefault(key, i)
    return found, first_at


def _first_rule(text: str, ctx: TriageContext, i: int) -> Finding | None:
    for rule in RULES:
        if rule.needle not in text:
            continue
        m = rule.pattern.search(text)
        if not m:
            continue
        if rule.id == "triage.cuda_oom" and ("cumem_allocator" in text or "cache blocks" in text):
            continue
        return rule.build(m, ctx, i)
    return None


def _root_finding(root: Cluster, final: Cluster, ctx: TriageContext, texts: list[str], exit_code: int) -> Finding:
    """The root cause as a finding: the pattern rule that knows its text, a known chain, or the error quoted."""
    for text in (texts[root.first], root.text):
        finding = _first_rule(text, ctx, root.first)
        if finding is not None:
            return finding.model_copy(update={"message": f"{finding.message} (The first error of the run: "
                                                          f"{where(root)}.{explains(root, final)})"})
    for known in KNOWN:
        if known.pattern.search(root.text):
            return known.build(root, final, texts)
    return unknown(root, final, exit_code)


__all__ = ["RULES", "TriageRule", "triage"]
