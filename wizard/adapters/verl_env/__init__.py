"""The Python environment verl runs in, which need not be the wizard's own: finding one (``python_envs``), probing it
(``doctor``), running verl's own pre-flight (``verl_preflight``) and the reward bench (``reward_runner``) there. The
scripts those Pythons run by path live in ``probes``."""
