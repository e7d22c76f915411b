"""Read ``resources/gpu-catalogue.yaml`` (shipped as ``wizard.resources``) into the core's GpuCatalogue."""

from __future__ import annotations

from functools import lru_cache

from wizard.adapters.files.resources import resource_text, yaml_resource
from wizard.core.hardware import GpuCatalogue


@lru_cache(maxsize=1)
def load_gpu_catalogue() -> GpuCatalogue:
    return GpuCatalogue.model_validate(yaml_resource(resource_text("gpu-catalogue.yaml")))
