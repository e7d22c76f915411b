"""What verl 0.9.1 itself is, as data and as Hydra would treat it.

The key schema extracted from an installed verl (``schema``), keys that moved between releases
(``moves``), Hydra override strings (``overrides``), in-memory composition onto verl's default tree
(``compose``), a Hydra YAML as overrides (``yaml_config``), which models verl loads for a config
(``roles``) and plain-words help per key (``key_help``). Nothing here judges a config: that is ``check``.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "CONFIG_NAME_ENGINES": "compose",
    "build_base_configs": "compose",
    "compose": "compose",
    "composed_view": "compose",
    "changes_from_defaults": "key_help",
    "set_to_default": "key_help",
    "Moves": "moves",
    "OverrideSyntaxError": "overrides",
    "one_line": "overrides",
    "ResolvedConfig": "resolved",
    "VerlSchema": "schema",
    "yaml_to_overrides": "yaml_config",
})
