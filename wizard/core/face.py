"""The public face of a core package: the names its callers use, each found in the module that defines it, loaded
when first asked for (PEP 562), so ``from wizard.core.memory import estimate_memory`` costs only what that name
needs and a package never imports its whole self to offer one name."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def face(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], object], list[str]]:
    """(the package's ``__getattr__``, its ``__all__``) for ``names``: public name -> the module under ``package``
    that defines it."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__, sorted(names)
