"""Count the compositions of verl's config: every check composes through ``composed_view``, so wrapping it where it
is used counts each one (what one edit, one CLI call or one drag candidate costs)."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def counted_compositions(monkeypatch):
    """Yields a list that gets one entry (the overrides) per composition made inside the ``with``. The schema is
    loaded first: building its cache once per machine composes verl's defaults (not a cost of any one call)."""
    import wizard.core.check.verdict as verdict
    from wizard.adapters.files.resources import load_schema

    load_schema()
    import wizard.core.verl.compose as compose

    made: list[list[str]] = []
    original = compose.composed_view

    @contextmanager
    def counting(schema, overrides, **kwargs):
        made.append(list(overrides))
        with original(schema, overrides, **kwargs) as composed:
            yield composed

    monkeypatch.setattr(compose, "composed_view", counting)
    monkeypatch.setattr(verdict, "composed_view", counting)
    yield made
