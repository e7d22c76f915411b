"""``verl-wizard plan``: will the config fit, and where does each role run? Per GPU and phase, with the verdict.

Same inputs as ``check`` (a launch script, YAML or plan file, or overrides; ``--preset`` and ``--set`` too) and
the hardware from ``--gpus 8xH100-80GB``, ``--cluster FILE`` or ``--ray-address``. Models are read from local
folders or the catalogue, never downloaded. Identical GPUs print as one row. Exit codes as ``check``: 0 no errors
(it fits, or there was nothing to judge), 1 errors found (an OOM among them), 2 bad input.
"""

from __future__ import annotations

import dataclasses
import json

from wizard.cli._common import EXIT_ERRORS, EXIT_OK, UsageError, findings_text, hardware
from wizard.core.findings import Finding, Severity, has_errors, sort_findings
from wizard.core.memory import GIB



def add_parser(subparsers) -> None:
    p = subparsers.add_parser("plan", help="memory per GPU and phase, and where each role runs (will it fit?)")
    p.add_argument("source", nargs="?", help="a launch script (.sh), a YAML config, or a plan (.json)")
    p.add_argument("overrides", nargs="*", help="verl overrides, e.g. data.train_batch_size=64")
    p.add_argument("--preset", metavar="NAME", help="plan a preset (verl-wizard presets lists them)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="any verl override")
    p.add_argument("--gpus", metavar="SPEC", help="the cluster, e.g. 8xH100-80GB or 2x8xH100-80GB (model needed for memory)")
    p.add_argument("--cluster", metavar="FILE", help="the cluster as a cluster spec YAML")
    p.add_argument("--ray-address", metavar="ADDR", help="a live Ray cluster's head, HOST:PORT")
    p.add_argument("--python", metavar="PATH", help="the Python that has Ray (for --ray-address; default: this one)")
    p.add_argument("--response-tokens", type=int, metavar="N",
                   help="the mean response length you expect, for the step time (default: max_response_length, the "
                        "worst case; a smoke run's samples show it)")
    p.add_argument("--response-tokens-from", metavar="RUN_FOLDER",
                   help="take the mean response length from a smoke run's last step (its run folder)")
    p.add_argument("--no-data", action="store_true", help="do not read data.train_files for its prompt lengths")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=run_plan, takes_overrides=True)


def run_plan(args, tail: list[str] | None = None) -> int:
    cluster, gpus, hw_findings = hardware(args, named_gpus_ok=True)
    overrides, config_name, src_findings, label = _source(args, list(tail or []), gpus)
    from wizard.usecases.assessment import assess
    from wizard.usecases.plans import sized_for_gpus

    sized = sized_for_gpus(overrides, gpus)  # verl's default trainer asks for 8 GPUs whatever --gpus says
    overrides = sized.overrides

    # the same check as `check` (models from local folders or the catalogue), with the cluster's memory: one
    # composition gives the findings and the memory plan
    from wizard.core.steptime import RESPONSE_TOKENS

    response_tokens = _response_tokens(args)  # the step times of the plan and of every alternative assume it
    assessment = assess(overrides, config_name=config_name, gpus=gpus, cluster=cluster, local_files=True,
                        assumptions={RESPONSE_TOKENS: response_tokens} if response_tokens else None)
    models, plan = assessment.models, assessment.memory
    findings = sort_findings(assessment.findings + src_findings + hw_findings)
    from wizard.usecases.plan_notes import no_estimate_reason, plan_notes

    findings = sort_findings(findings + plan_notes(plan, findings, sized))  # the window's Findings add the same
    if plan.judged is None:  # the GPUs named, the size the config asks for missing: said first
        plan.verdict = dataclasses.replace(plan.verdict, reason=no_estimate_reason(plan, sized.conflict))
    ok = not has_errors(findings)
    from wizard.usecases.advising import plan_advice, step_time

    data, data_why = _train_data(plan, assessment, args)
    step = step_time(plan, data)
    advice = plan_advice(plan, searched=assessment.result.advice) if plan.judged is not None else None
    run = _forecast(step, overrides, config_name, data, plan.verdict)
    left = None
    if advice is not None and advice.best is not None and _other_errors(findings):
        # the errors besides memory that still stop the run once the first alternative is applied (it may clear
        # some: vLLM loading the base takes LoRA's first sync off the buffer), judged again with it
        after = assess(overrides + list(advice.best.overrides), config_name=config_name, gpus=gpus, cluster=cluster,
                       advise=False)
        left = _other_errors(after.findings)
    if args.format == "json":
        print(json.dumps({**plan_json(plan, findings), **speed_json(step, advice),
                          "data": data.to_json() if data else None, "data_reason": data_why,
                          "forecast": run.to_json() if not isinstance(run, str) else None,
                          "forecast_reason": run if isinstance(run, str) else None}))
    else:
        print(render_plan(plan, findings, label, models, step, advice, data, run, left))
    return EXIT_OK if ok else EXIT_ERRORS


def _response_tokens(args) -> int | None:
    """The mean response length the user states, or a smoke run's (``--response-tokens-from``)."""
    if args.response_tokens is not None and args.response_tokens < 1:
        raise UsageError("--response-tokens must be a positive number of tokens")
    if args.response_tokens_from:
        if args.response_tokens is not None:
            raise UsageError("give --response-tokens or --response-tokens-from, not both")
        from wizard.adapters.files.run_folder import RunFolderError
        from wizard.usecases.runs import mean_response_tokens

        try:
            return mean_response_tokens(args.response_tokens_from)[0]
        except (RunFolderError, ValueError, OSError) as exc:
            raise UsageError(f"--response-tokens-from: {str(exc).splitlines()[0]}") from None
    return args.response_tokens


def _forecast(step, overrides: list[str], config_name: str, data, verdict=None):
    """The full run's time (the schedule's steps x the predicted step), or why there is none."""
    if verdict is not None and verdict.word == "does_not_fit":
        what = "this machine's host RAM (memory.host)" if verdict.cause == "host" else "these GPUs"
        return f"none: the plan does not fit {what} (apply an alternative above, then plan it again)"
    if step.seconds is None:
        return f"no step time ({step.reason})"
    from wizard.core.plan import plan_from_overrides
    from wizard.core.run import predicted_forecast, schedule_of

    try:
        schedule = schedule_of(plan_from_overrides(overrides, config_name=config_name))
    except ValueError as exc:
        return f"the schedule cannot be read ({exc})"
    return predicted_forecast(step.seconds, schedule, dataset_size=data.rows if data else None)


def _train_data(plan, assessment, args):
    """(the plan judged on its train file's prompts, why not): read where data.train_files is a local file."""
    if args.no_data or plan.judged is None:
        return None, "not read (--no-data)" if args.no_data else "no memory estimate to judge it by"
    from wizard.usecases.advising import train_data_fit

    facts = assessment.result.facts
    return train_data_fit(plan, facts.get("data.train_files"), facts.get("actor_rollout_ref.model.path"))


# ------------------------------------------------------------------------------------------------
# Inputs (the same sources and hardware as check)


def _source(args, tail: list[str], gpus):
    """(overrides, config_name, findings, label) from a preset, a file or override words."""
    words = tail + list(args.overrides) + list(args.sets)
    if args.preset:
        if args.source:
            raise UsageError("give --preset or a file, not both")
        from wizard.usecases.plans import preset_plan, resized_note
        from wizard.core.plan import emit_overrides
        from wizard.core.verl import OverrideSyntaxError

        try:
            plan = preset_plan(args.preset, gpus, words)
        except OverrideSyntaxError as exc:
            raise UsageError(f"--set: {exc}") from None
        except ValueError as exc:
            raise UsageError(str(exc).splitlines()[0]) from None
        resized = resized_note(preset_plan(args.preset), plan, gpus, words, f"preset {args.preset}")
        return emit_overrides(plan).overrides, plan.config_name, resized, f"preset {args.preset}"
    if not args.source and not words:
        raise UsageError("give a config: a .sh, .yaml or .json file, --preset NAME, or overrides")
    from wizard.adapters.files.sources import from_overrides, load_source

    try:
        src = load_source(args.source) if args.source else from_overrides(words)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    overrides = src.overrides + (words if args.source else [])
    resized = []
    if src.plan is not None and gpus is not None:  # a plan file is reshaped for --gpus, as a preset is
        from wizard.core.plan import apply_overrides, plan_overrides
        from wizard.usecases.plans import plan_with_gpus, resized_note

        reshaped = plan_with_gpus(src.plan, gpus)
        overrides = plan_overrides(reshaped) + words
        resized = resized_note(src.plan, apply_overrides(reshaped, words), gpus, words)
    return overrides, src.config_name, list(src.findings) + resized, args.source or "overrides"


# ------------------------------------------------------------------------------------------------
# Output


def _gib(n) -> float | None:
    return None if n is None else round(n / GIB, 2)


def plan_json(plan, findings: list[Finding]) -> dict:
    """``{"fits", "verdict", "fits_up_to_avg_tokens", "fits_reason", "fits_cause", "gpus": [{"node", "index",
    "capacity_gib", "peak_gib", "peak_phase", "breakdown"}], "host", "findings"}``: one entry per GPU; GPUs of one
    group share their numbers. ``verdict`` is fits | tight | fits_while_short | does_not_fit, or null with
    ``fits_reason`` (an engine or model not modelled, unknown GPU memory); ``fits`` is true for fits and tight, null
    without a verdict; ``fits_cause`` says what does not fit (host, engine_start, kv_cache or the phase over memory).
    ``host.nodes``: each node's need against its RAM and Ray's limit (95 % of it), ``over`` past it.
    ``host.kv_cache``: per engine role, ``kv_gib_per_gpu`` (never negative: 0 where there is no room) and
    ``kv_short_gib_per_gpu`` (what a GPU lacks for any KV cache, 0 where it has room). ``memory_notes``: the
    estimate's notes (a Megatron plan's: the pipeline stage whose numbers every GPU shows). ``term_labels``: what
    each key of the breakdowns is, in the text's words (its label where it first appears); each phase's ``labels``:
    the same with that phase's own numbers."""
    report = plan.judged
    gpus, host, labels = [], {"nodes": []}, {}
    if report is not None:
        for group in report.groups:
            peak = group.peak
            # labels per phase: a key's words carry that phase's numbers (the reference pass's logits, its tokens)
            breakdown = {p.name: {"total_gib": _gib(p.total), "terms": {t.key: _gib(t.bytes) for t in p.terms},
                                  "labels": {t.key: t.label for t in p.terms}} for p in group.phases}
            for p in group.phases:
                for t in p.terms:
                    labels.setdefault(t.key, t.label)
            for g in group.gpus:
                gpus.append({"node": g.node, "index": g.index, "capacity_gib": _gib(group.capacity_bytes),
                             "peak_gib": _gib(peak.total), "peak_phase": peak.name, "pool": group.pool,
                             "roles": group.roles, "breakdown": breakdown})
        # need = the larger of the two moments: rank 0's read of the model at start, and the run (host_init is
        # only in the first, the engines and what stays on the host only in the second)
        host["nodes"] = [{"node": h.node, "ram_gib": _gib(h.capacity_bytes), "need_gib": _gib(h.total),
                          "start_gib": _gib(h.moments[0]), "run_gib": _gib(h.moments[1]),
                          "limit_gib": _gib(h.limit), "over": h.over if h.capacity_bytes else None,
                          "terms": {t.key: _gib(t.bytes) for t in h.terms}} for h in report.host]
        # no room for a KV cache: 0 GiB, and what it lacks in kv_short_gib_per_gpu (the text's "no room (N GiB short)")
        host["kv_cache"] = {role: {"tokens_per_replica": kv.tokens, "sequences": kv.sequences, "wanted": kv.wanted,
                                   "kv_gib_per_gpu": _gib(max(0, kv.kv_bytes)),
                                   "kv_short_gib_per_gpu": _gib(max(0, -kv.kv_bytes)), "kv_pinned": kv.pinned}
                            for role, kv in report.kv.items()}
    v = plan.verdict
    cause = v.cause if v.word in ("does_not_fit", "fits_while_short") else None
    return {"fits": v.fits, "verdict": v.word, "fits_up_to_avg_tokens": v.fits_up_to_avg_tokens,
            "fits_reason": v.reason, "fits_cause": cause, "gpus": gpus, "host": host,
            # what the text prints as "note:" under the table (a Megatron plan: which pipeline stage every GPU's
            # numbers are, the stage that peaks highest)
            "memory_notes": list(report.notes) if report is not None else [],
            "term_labels": labels, "findings": [f.to_json() for f in findings]}


def speed_json(step, advice) -> dict:
    """``{"step_seconds", "step_reason", "phases_seconds", "phases_terms" (per phase, its terms: label, seconds,
    note), "step_assumptions", "advice": [{"overrides", "fits",
    "verdict", "peak_gib", "step_seconds", "changes", "kind"}], "advice_statement", "advice_status"}``: the predicted
    steady step (null with its reason where not modelled) and the advisor's alternatives, best first.
    ``advice_status`` tells an empty list apart: ``found`` (alternatives listed), ``none_found`` (the advisor searched:
    nothing faster that still fits, or nothing fits and ``advice_statement`` says why), ``not_run`` (no estimate to
    search from, or a plan that fits without a step time to be faster than)."""
    return {"step_seconds": None if step.seconds is None else round(step.seconds, 1), "step_reason": step.reason,
            "phases_seconds": step.by_name(), "phases_terms": step.terms_json(),
            "step_assumptions": list(step.assumptions),
            "advice": [a.to_json() for a in advice.alternatives] if advice else [],
            "advice_statement": advice.statement if advice else None, "advice_status": advice_status(advice)}


def advice_status(advice) -> str:
    """found | none_found | not_run: what an empty ``advice`` list means (the text's "none found" line or nothing)."""
    if advice is None:
        return "not_run"
    if advice.alternatives:
        return "found"
    # searched: nothing fits (the statement says why), or a fitting plan with a step time to be faster than (the
    # text's "none found" line); an estimate without a verdict (LoRA on Megatron) returns before searching
    searched = bool(advice.statement) or (advice.fits_now and advice.step_seconds is not None)
    return "none_found" if searched else "not_run"


def _other_errors(findings) -> list[str]:
    """The rules of the errors that stop a run besides memory (the alternatives are about memory and speed)."""
    return sorted({f.rule for f in findings if f.severity is Severity.ERROR and not f.rule.startswith("memory.")})


def _speed_lines(step, advice, findings: list[Finding] = (), if_it_fit: bool = False,
                 left: list[str] | None = None) -> list[str]:
    """``left``: the errors besides memory the first alternative leaves, judged again with it (None: not judged,
    the plan's own)."""
    out = [step.line(if_it_fit)]
    if step.reason is None and step.assumptions:
        out.append("  assuming " + "; ".join(step.assumptions))
    if (longest := step.longest()) is not None:
        out += [f"  the longest phase: {line}" if i == 0 else f"  {line}" for i, line in enumerate(longest.lines())]
    if advice is not None and (advice.alternatives or advice.statement):
        out.append("faster, still fitting:" if advice.fits_now else
                   "with room to spare (it fits only tightly now):" if advice.tight_now else "fastest that fits:")
        out += [f"  {line}" for line in advice.lines(4)]
        if any(a.kind == "method" for a in advice.alternatives[:4]):
            out.append("  [method]: changes what is trained (LoRA adapters, or a smaller model), not only how"
                       + (f"; {kept}" if (kept := advice.lora_kept(4)) else ""))
        best = advice.best
        if best is not None:
            sets = " ".join(f"--set {o}" for o in best.overrides)
            if (i := advice.best_index()) == 0:
                out.append(f"  apply the first with: {sets}")
            else:  # those before it need host RAM nobody knows here (--gpus does not say), or do not fit
                out += [f"  {i + 1}) {best.line()}"] if i >= 4 else []
                out.append(f"  apply {advice.best_said()}, with: {sets}")
            other = _other_errors(findings) if left is None else left
            if other:  # the alternatives are about memory and speed; what else stops the run is listed below
                out.append(f"  (that fixes memory; errors below still stop the run: {', '.join(other)}. `verl-wizard "
                           "check --fix` with the same arguments fixes those first, then applies the advisor's best "
                           "for the plan they leave, which may differ from this one)")
        elif (method := next((a for a in advice.alternatives if a.fits), None)) is not None:
            out.append(f"  to change the method instead ({method.text}): "
                       + " ".join(f"--set {o}" for o in method.overrides))
    elif advice_status(advice) == "none_found":  # searched from a plan that fits: nothing faster still fits
        from wizard.core.advice import NONE_FASTER

        out.append(f"faster, still fitting: none found ({NONE_FASTER})")
    return out


def render_plan(plan, findings: list[Finding], label: str, models, step=None, advice=None, data=None,
                run=None, left: list[str] | None = None) -> str:
    from wizard.core.check import where

    lines = [f"plan: {label}"]
    for role, f in sorted(models.items()):
        lines.append(f"  {role:7} {f.name}: {f.param_count / 1e9:.2f}B params, {f.num_layers} layers, vocab "
                     f"{f.vocab_size:,} ({f.source})")
    lines += _placement_lines(plan.placement)
    report = plan.judged
    if report is not None:
        lines += _table(report, where)
        for role, kv in report.kv.items():
            if kv.kv_bytes <= 0:
                lines.append(f"  KV cache ({role}, {kv.engine}): no room ({-kv.kv_bytes / GIB:.1f} GiB short per GPU); "
                             f"one step puts {kv.wanted:,} sequences of {kv.seq_tokens:,} tokens on each replica")
                continue
            pinned = " (pinned: engine_kwargs.vllm.kv_cache_memory_bytes)" if kv.pinned else ""
            lines.append(f"  KV cache ({role}, {kv.engine}): {kv.kv_bytes / GIB:.1f} GiB per GPU{pinned} = {kv.tokens:,} "
                         f"tokens per replica = {kv.sequences:,} sequences of {kv.seq_tokens:,} tokens at once; the "
                         f"step puts {kv.wanted:,} on each replica at once")
        lines += _host_lines(report.host)
        for note in report.notes:
            lines.append(f"  note: {note}")
    lines.append(_verdict(plan.verdict))
    if data is not None:
        lines.append(f"on your data ({data.rows:,} rows, prompts {data.how}): {data.verdict}")
        sizes = [f"actor micro-batch up to {data.largest_micro_batch}" if data.largest_micro_batch else "",
                 f"train_batch_size up to {data.largest_train_batch}" if data.largest_train_batch else ""]
        if any(sizes):
            lines.append("  fits at these prompts with " + ", ".join(x for x in sizes if x))
    if step is not None:
        # a plan that does not fit runs no step: its step is what one would take
        lines += _speed_lines(step, advice, findings, if_it_fit=plan.verdict.word == "does_not_fit", left=left)
    if run is not None:
        lines.append(f"forecast: {run}" if isinstance(run, str) else f"forecast: {run.line()}")
    shown = {}
    if step is not None and advice is not None and (advice.alternatives or advice.statement):
        from wizard.core.check.rules.memory import advice_text

        shown[advice_text(advice)] = ("the alternatives above" if advice.fits_now or advice.tight_now else
                                      "'fastest that fits' above")
    return "\n".join(lines) + "\n" + findings_text(findings, label, shown)


def _host_lines(hosts) -> list[str]:
    """One line per distinct node: identical nodes (need and RAM) print together."""
    same: dict[tuple, list[str]] = {}
    for h in hosts:
        same.setdefault((round(h.total / GIB), h.capacity_bytes), []).append(h.node)
    out = []
    for (need, ram), nodes in same.items():
        who = nodes[0] if len(nodes) == 1 else f"{len(nodes)} nodes ({nodes[0]} .. {nodes[-1]})"
        cap = f" of {ram / GIB:.0f} GiB" if ram else " (node RAM unknown)"
        out.append(f"  host {who}: about {need} GiB{cap}{' each' if len(nodes) > 1 else ''}")
    return out


def _placement_lines(placement) -> list[str]:
    out = [f"placement ({placement.mode}):"]
    for pool in placement.pools:
        missing = f", {pool.missing} GPU(s) missing" if pool.missing else ""
        reps = [g for g in placement.replicas if g.pool == pool.name]
        rep = ""
        if reps:
            g = reps[0]
            rep = (f"; {len(reps)} {g.role.split(':')[0]} replica(s) of TP {g.tp} x DP {g.dp} x PP {g.pp} "
                   "(GPUs in tensor x data x pipeline parallel)")
        out.append(f"  {pool.name}: {pool.per_node} x {pool.nnodes} node(s){missing}: {', '.join(pool.roles)}{rep}")
    return out


def _table(report, where) -> list[str]:
    from wizard.core.memory import PHASES

    phases = [p for p in PHASES if any(ph.name == p for g in report.groups for ph in g.phases)]
    head = f"  {'GPUs':22} {'has':>7} " + " ".join(f"{p.label:>7}" for p in phases) + "   peak"
    legend = "  (has: each GPU's memory; " + ", ".join(f"{p.label}: {p.title}" for p in phases) + \
        "; peak: the phase that needs the most)"
    title = "memory per GPU (GiB):"
    if report.unmodelled:  # numbers without a part of the plan: said above them, not only below
        title = f"memory per GPU (GiB), without a verdict: {report.unmodelled}:"
    out = [title, head]
    for g in report.groups:
        totals = {ph.name: ph.total for ph in g.phases}
        cap = f"{g.capacity_bytes / GIB:7.1f}" if g.capacity_bytes else f"{'?':>7}"
        cells = " ".join(f"{totals[p] / GIB:7.1f}" if p in totals else f"{'-':>7}" for p in phases)
        out.append(f"  {f'{len(g.gpus)} x {g.pool}':22} {cap} {cells}   {g.peak.title}")
        out.append(f"    {where(g)}, at the peak:")
        for t in sorted(g.peak.terms, key=lambda t: -t.bytes):
            note = f"  ({t.note})" if t.note else ""
            out.append(f"      {t.bytes / GIB:6.2f}  {t.label}{note}")
    out.append(legend)
    return out


def _verdict(verdict) -> str:
    """"verdict: FITS, TIGHT: worst GPU 74.1 of 80.0 GiB in the generation phase (+5.9 GiB spare)", in the words
    of wizard.core.memory.verdict (the same in the JSON, check and the Placement step)."""
    from wizard.core.memory import describe

    text = describe(verdict)
    if verdict.word is None:
        return f"verdict: none ({text.removeprefix('no verdict: ')})"
    head, _, rest = text.partition(":")
    return f"verdict: {head.upper()}" + (f":{rest}" if rest else "")
