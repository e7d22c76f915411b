"""Widgets the steps share: the step page base, field editors, the findings list, the canvas
view helpers, the topology view, the cluster box and a YAML/shell highlighter.
"""
