"""Reading one resolved verl value the way the memory estimate uses it: a whole number, a finite number, a flag.
Anything else reads as nothing (the type rules say what is wrong). Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping

from wizard.core.verl.flags import truthy


def int_at(values: Mapping, key: str, low: int | None = None) -> int | None:
    v = values.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        return None
    return v if low is None else max(low, v)


def float_at(values: Mapping, key: str) -> float:
    """A number the estimate can use; 0.0 for anything else (text, nan and inf: a rule says what is wrong)."""
    v = values.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else 0.0


def flag_at(values: Mapping, key: str) -> bool:
    v = values.get(key)
    return truthy({key: v}, key)
