"""The dataflow of one verl training step as a typed graph.

``graph`` defines stages, ports and links; ``keys`` maps the graph to the Plan's verl keys and back;
``check`` reports what is wrong with a graph; ``edit`` returns edited graphs (or says why not);
``layout`` says how a graph is drawn. The GUI's Dataflow step only presents these.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "NodeFinding": "check",
    "check_nodes": "check",
    "unresolved_inputs": "check",
    "add_node": "edit",
    "clear_layout": "edit",
    "connect": "edit",
    "disconnect": "edit",
    "move": "edit",
    "remove_node": "edit",
    "set_estimator": "edit",
    "set_param": "edit",
    "set_reward": "edit",
    "DataflowError": "graph",
    "ESTIMATOR_NOTES": "graph",
    "Graph": "graph",
    "KINDS": "graph",
    "Link": "graph",
    "Node": "graph",
    "PortRef": "graph",
    "PortSpec": "graph",
    "PortType": "graph",
    "REWARD_TITLES": "graph",
    "REWARD_VARIANTS": "graph",
    "all_ports": "graph",
    "can_connect": "graph",
    "estimator_choices": "graph",
    "find_port": "graph",
    "port_label": "graph",
    "unused_inputs": "graph",
    "graph_for_plan": "keys",
    "hidden_keys": "keys",
    "plan_from_graph": "keys",
    "stage_on": "keys",
    "HEADER_H": "layout",
    "NODE_W": "layout",
    "ROW_H": "layout",
    "node_height": "layout",
    "port_offset": "layout",
    "positions": "layout",
    "routes": "layout",
    "is_wrapped": "layout",
    "subtitle": "layout",
})
