"""Dialogs the Data step opens: converting a file to verl's format and the reward bench.
"""
