"""The verdict on a config: compose it as verl would, run every rule, apply the fixes they offer.

``verdict`` is the one entry point (``check_overrides``); ``autofix`` applies unambiguous fixes until none is
left; ``rules/`` holds the rules, one module per concern, each registered on import.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "apply_fixes": "autofix",
    "autofix_overrides": "autofix",
    "RULES": "rules",
    "Rule": "rules",
    "run_rules": "rules",
    "EnvironmentFacts": "rules.context",
    "ADVISOR_ELSEWHERE": "rules.memory",
    "where": "rules.memory",
    "ESTIMATORS": "rules.names",
    "KL_TYPES": "rules.names",
    "LOSS_MODES": "rules.names",
    "REWARD_MANAGERS": "rules.names",
    "CheckResult": "verdict",
    "check_overrides": "verdict",
})
