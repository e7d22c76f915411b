"""Pure core: no Qt, no torch/ray/verl, no subprocess, no file or network I/O.

Data (schema snapshots, presets) is handed in by the adapters layer.
"""
