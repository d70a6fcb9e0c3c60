"""The package's version, read from its installed metadata: pyproject.toml is the one place it is written."""

from importlib.metadata import version

__version__ = version("super-bench")
