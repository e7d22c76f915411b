"""The reward bench: candidate responses for sampled rows, and the verdict on the scores they got.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "BenchRow": "bench",
    "BenchSummary": "bench",
    "Trial": "bench",
    "bench_rows": "bench",
    "builtin_findings": "bench",
    "candidates_for": "bench",
    "judge": "bench",
    "summarize": "bench",
    "Verdict": "verdict",
    "fmt_score": "verdict",
})
