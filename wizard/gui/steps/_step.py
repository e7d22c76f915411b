"""One entry of the step registry: a step's texts and where its page class is, imported only when asked."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.gui.widgets.page import Page


@dataclass(frozen=True)
class Step:
    """``key`` names the step's module (``wizard.gui.steps.<key>``) and finds its page in the window;
    ``name`` is its line in the step list, ``title`` and ``subtitle`` head its page."""

    key: str
    page: str  # the page class's name in the step's module
    name: str
    title: str
    subtitle: str

    @property
    def module(self) -> str:
        return f"wizard.gui.steps.{self.key}"

    @property
    def texts(self) -> tuple[str, str, str]:
        return self.name, self.title, self.subtitle

    def load(self) -> type[Page]:
        """The page class (imports the step's module, and what it needs, the first time)."""
        return getattr(importlib.import_module(self.module), self.page)
