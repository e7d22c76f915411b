"""The use cases the GUI and the CLI share, between the front ends and the machine.

Each one is written once, here: check a config, plan its memory and placement, write files behind the check gate,
digest and report a run, the placement board's state for a plan or a candidate move. They call the pure core for
every decision and the adapters for every read, write and process; the front ends only ask and present.
"""
