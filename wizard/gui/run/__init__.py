"""The Run step's parts: the panel, its status line and banner, the worker that follows a run,
the log view, metric plots and GPU monitor.
"""
