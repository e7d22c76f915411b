"""What the wizard treats as a secret, in one place, and how secrets stay out of everything it writes or prints.

A secret is (1) the value of a config key whose last part names a credential (``wandb_api_key``,
``*.token``, ``password``...), (2) the value of an environment variable whose name does (``HF_TOKEN``,
``WANDB_API_KEY``, ``*_SECRET``...), or (3) a value shaped like a known credential wherever it appears
(Hugging Face ``hf_…``, OpenAI-style ``sk-…``, GitHub ``ghp_…``, Slack ``xox…``, AWS ``AKIA…``, JWTs).

No Plan ever holds one: a secret value in an override becomes ``${oc.env:NAME}``, a reference verl's Hydra
resolves from the environment where the run happens, so run.sh, config.yaml, plan.json, the GUI's autosave,
cluster material and a smoke run's command line carry the name, never the value; runs receive the value
through their environment, never on argv. Text shown or logged is redacted on top of that (``redact``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_KEY = re.compile(r"(^|_)(token|api_?key|secret|secret_key|password|passwd|access_key|private_key|credentials?)$",
                  re.IGNORECASE)
_SECRET_WORDS = {"SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS"}
# Credential shapes, each with the variable such a credential conventionally lives in.
_SHAPES = (
    (re.compile(r"hf_[A-Za-z0-9]{30,}"), "HF_TOKEN"),
    (re.compile(r"sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}"), "OPENAI_API_KEY"),
    (re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"), "GITHUB_TOKEN"),
    (re.compile(r"xox[abprs]-[A-Za-z0-9\-]{10,}"), "SLACK_TOKEN"),
    (re.compile(r"AKIA[0-9A-Z]{16}"), "AWS_ACCESS_KEY_ID"),
    (re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), "API_TOKEN"),
    # what follows "Bearer " in an Authorization header, whatever its issuer
    (re.compile(r"(?<=Bearer )(?!\$\{)[A-Za-z0-9._~+/\-]{16,}=*"), "AUTH_TOKEN"),
)
_ENV_REF = re.compile(r"^\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,[^}]*)?\}$")
_SHELL_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
RAY_ENV_VARS = "ray_kwargs.ray_init.runtime_env.env_vars."
MIN_SECRET = 4  # shorter values are not replaced in text (every "1" in a log would go)


def is_secret_key(key: str) -> bool:
    """A config key whose value is a credential (its last part says so)."""
    return bool(_KEY.search(key.rsplit(".", 1)[-1]))


def is_secret_name(name: str) -> bool:
    """An environment variable whose value is a credential, by its words: one of SECRET, PASSWORD, PASSWD,
    CREDENTIAL(S) anywhere (``AWS_SECRET_ACCESS_KEY``, ``DB_PASSWORD``), or a last word TOKEN (``HF_TOKEN``) or
    KEY after API/ACCESS/PRIVATE/AUTH (``WANDB_API_KEY``, ``OPENAI_APIKEY``). ``max_token_len`` is not one."""
    words = [w for w in re.split(r"[_\W]+", name.upper()) if w]
    if not words:
        return False
    if _SECRET_WORDS & set(words) or words[-1] in ("TOKEN", "APIKEY"):
        return True
    return words[-1] == "KEY" and len(words) > 1 and words[-2] in ("API", "ACCESS", "PRIVATE", "AUTH", "SECRET")


def env_name_for(key: str) -> str:
    """The variable a secret config key is read from: its last part, upper case (``WANDB_API_KEY``)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", key.rsplit(".", 1)[-1]).upper()


def env_ref(name: str) -> str:
    return "${oc.env:" + name + "}"


def env_ref_name(value: object) -> str | None:
    """``NAME`` when ``value`` is exactly ``${oc.env:NAME}`` (or with a default)."""
    m = _ENV_REF.match(value) if isinstance(value, str) else None
    return m.group(1) if m else None


def shaped_secrets(text: str) -> list[tuple[str, str]]:
    """(credential, the variable it conventionally lives in) for each credential-shaped run in ``text``."""
    return [(m.group(0), name) for pattern, name in _SHAPES for m in pattern.finditer(text)]


def redact(text: str, values: Mapping[str, str] | None = None) -> str:
    """``text`` with the given secret values (name -> value) and any credential-shaped run as ``${NAME}``."""
    for name, value in (values or {}).items():
        if value and len(value) >= MIN_SECRET and value in text:
            text = text.replace(value, "${" + name + "}")
    for value, name in shaped_secrets(text):
        text = text.replace(value, "${" + name + "}")
    return text


def secret_values(environ: Mapping[str, str], names: Iterable[str] | None = None) -> dict[str, str]:
    """The secret-named variables of ``environ`` (or just ``names``) that hold something worth hiding."""
    chosen = names if names is not None else (n for n in environ if is_secret_name(n))
    return {n: environ[n] for n in chosen if len(environ.get(n) or "") >= MIN_SECRET}


MIN_KNOWN = 8  # a secret variable's value shorter than this is not looked for in a config (too many false hits)


def hide_known(text: str, known: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` (an override) with every value of ``known`` (name -> a secret variable's value in this environment)
    after its ``=`` as ``${oc.env:NAME}``, and the names replaced: a credential pasted into a key the wizard does not
    know as secret (an experiment name, an ``auth_header``) is written as the reference, never as itself."""
    key, sep, value = text.partition("=")
    if not sep:
        return text, []
    names = []
    for name, secret in sorted(known.items(), key=lambda kv: -len(kv[1] or "")):
        if secret and len(secret) >= MIN_KNOWN and secret in value:
            value = value.replace(secret, env_ref(name))
            names.append(name)
    if not names:
        return text, []
    if len(value) > 2 and value[0] == value[-1] and value[0] in "'\"" and _ENV_REF.match(value[1:-1]):
        value = value[1:-1]  # the whole value was the secret: the bare reference, as a secret key's value is written
    return key + sep + value, names


def known_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """The secret variables of ``environ`` whose values are long enough to look for in a config."""
    return {n: v for n, v in secret_values(environ).items() if len(v) >= MIN_KNOWN}


def hide_secrets(overrides: Iterable[str]) -> tuple[list[str], list[str]]:
    """The overrides with every secret value replaced by an ``${oc.env:NAME}`` reference, and a note per change.

    The value of a secret key becomes a reference to the variable named after the key; a credential-shaped run
    anywhere else (``"Authorization: Bearer hf_..."``) becomes a reference to the variable such a credential
    conventionally lives in. Whoever runs verl sets those variables; verl's Hydra reads them there."""
    from wizard.core.verl.overrides import OverrideSyntaxError, parse_override

    out: list[str] = []
    notes: list[str] = []
    for text in overrides:
        try:
            p = parse_override(text)
        except OverrideSyntaxError:
            p = None
        if p is not None and p.kind != "~" and p.key.startswith(RAY_ENV_VARS) and is_secret_key(p.key):
            # verl hands ray_init.runtime_env to Ray unresolved (OmegaConf.to_container without resolve): a
            # reference would reach the workers as its own text. Ray's workers inherit the environment verl
            # starts in (on a cluster: the nodes' `ray start`), which is where the secret belongs.
            name = p.key[len(RAY_ENV_VARS):]
            notes.append(f"{p.key} left out: Ray's workers get {name} from the environment verl starts in (on a "
                         "cluster, from each node's environment when Ray starts); set it there")
            continue
        if p is not None and p.kind != "~" and p.package is None and is_secret_key(p.key):
            value = p.value()
            if value not in (None, "") and env_ref_name(value) is None:
                shell = _SHELL_REF.fullmatch(value) if isinstance(value, str) else None
                name = (shell.group(1) or shell.group(2)) if shell else env_name_for(p.key)
                out.append(f"{p.kind}{p.key}={env_ref(name)}")
                if not shell:
                    notes.append(f"{p.key} holds a secret: kept as ${{oc.env:{name}}}; set {name} where the run "
                                 "happens")
                continue
        # a secret variable the shell would expand onto verl's command line: read by verl's Hydra instead
        text = _SHELL_REF.sub(lambda m: env_ref(m.group(1) or m.group(2))
                              if is_secret_name(m.group(1) or m.group(2)) else m.group(0), text)
        for value, name in shaped_secrets(text):
            text = text.replace(value, env_ref(name))
            notes.append(f"a credential in {text.split('=', 1)[0]} is kept as ${{oc.env:{name}}}; set {name} where "
                         "the run happens")
        out.append(text)
    return out, notes


# key=value, then key: value and 'key': 'value' (a pprinted config): the key's last part decides. Two passes, so
# "defaults apply: MY_TOKEN=x" is read as MY_TOKEN=x, not as the value of "apply".
_ASSIGNS = (re.compile(r"""(?P<key>[A-Za-z_][\w.\-]*)(?P<sep>=)(?P<q>['"]?)(?P<val>[^\s'",}\])]+)"""),
            re.compile(r"""(?P<key>[A-Za-z_][\w.\-]*)(?P<sep>['"]?\s*:\s*)(?P<q>['"]?)(?P<val>[^\s'",}\])]+)"""))
_NOT_A_VALUE = {"none", "null", "~", "true", "false", "''", '""'}
REDACTED = "<redacted>"
# a metric's value (``rollout_corr/chi2_token: 0.0123``, per-token figures end in _token): a float is no credential
_MEASURE = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+)(?:e[-+]?\d+)?|[-+]?\d+e[-+]?\d+|[-+]?(?:nan|inf)", re.I)


def scrub(text: str, values: Mapping[str, str] | None = None) -> str:
    """``text`` safe to share (a report, a log written by something other than the launcher): ``redact``, and the
    value of any secret-looking key in ``key=value`` / ``key: value`` text as ``<redacted>``; references stay."""
    text = redact(text, values)

    def assign(m: re.Match) -> str:
        value = m.group("val")
        if (not is_secret_key(m.group("key")) or value.lower() in _NOT_A_VALUE or value.startswith("$")
                or _MEASURE.fullmatch(value)):
            return m.group(0)
        return m.group("key") + m.group("sep") + m.group("q") + REDACTED

    for pattern in _ASSIGNS:
        text = pattern.sub(assign, text)
    return text
