"""Only what pyproject.toml cannot say: the packages are found, plus resources/ shipped as wizard.resources."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["wizard", "wizard.*"]), "wizard.resources"])
