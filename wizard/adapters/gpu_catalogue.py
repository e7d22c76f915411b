"""Read ``resources/gpu-catalogue.yaml`` (shipped as ``wizard.resources``) into the core's GpuCatalogue."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

from wizard.core.cluster import GpuCatalogue


@lru_cache(maxsize=1)
def load_gpu_catalogue() -> GpuCatalogue:
    text = (resources.files("wizard.resources") / "gpu-catalogue.yaml").read_text(encoding="utf-8")
    return GpuCatalogue.model_validate(yaml.safe_load(text))
