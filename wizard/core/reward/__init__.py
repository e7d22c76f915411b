"""The reward bench: candidate responses for sampled rows, and the verdict on the scores they got.
"""
