"""Score candidate responses with verl's built-in scorer or the user's reward function, in the target Python.

Standalone: run as ``python reward_probe.py`` with one JSON document on stdin:
``{"mode": "builtin"|"custom", "path": FILE, "name": FN, "trials": [{"row", "candidate", "text", "data_source",
"ground_truth", "extra_info"}]}``. Writes one JSON line per trial, flushed as it goes (so a hang still leaves the
finished trials), or one ``{"fatal": ...}`` line when the scorer cannot be loaded. The function is called by
keyword, as verl's reward managers do. Anything the function prints goes to stderr.
"""

import asyncio
import importlib.util
import inspect
import json
import math
import os
import sys
import time
import traceback

OUT = sys.stdout


def emit(doc):
    OUT.write(json.dumps(doc) + "\n")
    OUT.flush()


def load_custom(path, name):
    # the same as verl.utils.import_utils.load_extern_object, without importing verl
    spec = importlib.util.spec_from_file_location("custom_reward_module", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_reward_module"] = module
    spec.loader.exec_module(module)
    if not hasattr(module, name):
        raise AttributeError(f"no function {name!r} in {path}")
    return getattr(module, name)


def user_traceback(exc, user_file):
    """The traceback from the user's code down: the probe's own frames are dropped."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = os.path.abspath(__file__)
    frames = [f for f in frames if os.path.abspath(f.filename) != here]
    if user_file:
        idx = next((i for i, f in enumerate(frames) if os.path.abspath(f.filename) == os.path.abspath(user_file)), 0)
        frames = frames[idx:]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames),
             *traceback.format_exception_only(type(exc), exc)]
    return "".join(lines)


def describe(value):
    if isinstance(value, bool):
        return {"kind": "number", "score": float(value), "raw": repr(value)}
    if isinstance(value, (int, float)):
        return {"kind": "number", "score": float(value), "raw": repr(value)}
    if isinstance(value, dict):
        s = value.get("score")
        ok = isinstance(s, (int, float))
        return {"kind": "dict", "score": float(s) if ok else None, "raw": repr(value)[:200]}
    if value is None:
        return {"kind": "none", "score": None, "raw": "None"}
    try:
        return {"kind": "number", "score": float(value), "raw": repr(value)[:200]}
    except (TypeError, ValueError):
        return {"kind": "other", "score": None, "raw": f"{type(value).__name__} {value!r}"[:200]}


def main():
    doc = json.loads(sys.stdin.read())
    sys.stdout = sys.stderr  # the user's prints must not mix with our results
    user_file = doc.get("path")
    try:
        if doc["mode"] == "custom":
            fn = load_custom(user_file, doc["name"])
        else:
            from verl.utils.reward_score import default_compute_score as fn

            user_file = None
    except Exception as exc:  # noqa: BLE001 - reported to the wizard, not raised
        emit({"fatal": f"{type(exc).__name__}: {exc}", "traceback": user_traceback(exc, user_file)})
        return
    is_async = inspect.iscoroutinefunction(fn)
    for t in doc["trials"]:
        result = {"row": t["row"], "candidate": t["candidate"]}
        start = time.perf_counter()
        try:
            kwargs = dict(data_source=t["data_source"], solution_str=t["text"], ground_truth=t["ground_truth"],
                          extra_info=t.get("extra_info"))
            value = asyncio.run(fn(**kwargs)) if is_async else fn(**kwargs)
            result.update(describe(value))
        except Exception as exc:  # noqa: BLE001 - the user's error is the result
            result.update(error=f"{type(exc).__name__}: {exc}"[:300], traceback=user_traceback(exc, user_file))
        result["seconds"] = time.perf_counter() - start
        s = result.get("score")
        if isinstance(s, float) and not math.isfinite(s):
            result["score"] = str(s)
        emit(result)


if __name__ == "__main__":
    main()
