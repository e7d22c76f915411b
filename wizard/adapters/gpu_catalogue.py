"""Read ``resources/gpu-catalogue.yaml`` (shipped as ``wizard.resources``) into the core's GpuCatalogue."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from wizard.core.cluster import GpuCatalogue

NAME = "gpu-catalogue.yaml"


def _text() -> str:
    try:
        return (resources.files("wizard.resources") / NAME).read_text(encoding="utf-8")
    except ModuleNotFoundError:  # a source checkout run without installing: resources/ sits beside wizard/
        return (Path(__file__).resolve().parents[2] / "resources" / NAME).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def load_gpu_catalogue() -> GpuCatalogue:
    return GpuCatalogue.model_validate(yaml.safe_load(_text()))
