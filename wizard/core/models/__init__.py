"""Model facts: what the planner needs to know about a model (layers, heads, vocabulary, context,
parameters, files), read from its config.json by the adapters or from the model catalogue.
"""
