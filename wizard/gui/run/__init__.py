"""The Run step's parts: the panel, its status line and banner, the follower that reads a running verl process
(``follower``),
the log view, metric plots and GPU monitor.
"""
