"""The dataflow of one verl training step as a typed graph.

``graph`` defines stages, ports and links; ``keys`` maps the graph to the Plan's verl keys and back;
``check`` reports what is wrong with a graph; ``edit`` returns edited graphs (or says why not);
``layout`` says how a graph is drawn. The GUI's Dataflow step only presents these.
"""
