"""The verdict on a config: compose it as verl would, run every rule, apply the fixes they offer.

``verdict`` is the one entry point (``check_overrides``); ``autofix`` applies unambiguous fixes until none is
left; ``rules/`` holds the rules, one module per concern, each registered on import.
"""
