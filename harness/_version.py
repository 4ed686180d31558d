"""The harness's version, in one place: pyproject.toml reads it from here, `harness --version` prints it."""

__version__ = "0.1.0"
