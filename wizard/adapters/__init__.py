"""Everything that touches the machine, grouped by what it touches; no decisions (those are the core's) and no use
cases (those are ``wizard.usecases``'s):

- ``files``: what is on disk: atomic writes and backups, user input read within bounds, the data the wizard ships,
  caches, the GUI's autosave, run folders, datasets, model folders, launch scripts and the files they source;
- ``machine``: this machine's GPUs (NVML, nvidia-smi) and the clusters it can see (a spec file, a live Ray cluster);
- ``processes``: processes the wizard starts, watches and ends (a verl run, a guarded child, the resident checker);
- ``verl_env``: the Python environment verl runs in, found and probed there (doctor, verl's own pre-flight, the
  reward bench, the schema extractors in ``verl_env/probes``).
"""
