"""Processes the wizard starts, watches and ends: a local verl run (``launcher``), a child that runs someone else's
code (``guarded``), the machine's process table (``procs``), and the resident checker (``resident``: its socket and clients; ``resident_server``: the server)."""
