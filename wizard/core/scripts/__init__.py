"""Reading verl launch scripts statically, without running them.

``lexer`` splits bash into words, ``evaluator`` expands them (variables, defaults, arrays, arithmetic),
``reader`` finds the verl launch and the overrides bash would hand it.
"""
