"""A run, from what it is started with to what it printed.

``smoke`` makes a plan short and observable (overrides and environment); ``logparse`` reads console and
file-logger lines into metric series; ``triage`` maps failure texts to causes and fixes; ``health`` raises
alarms on metric series.
"""
