"""kgen's version: the installed distribution's, else this constant (a source checkout)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed

__version__ = "0.1.0"


def version() -> str:
    """The version a report and `kgen --version` state."""
    try:
        return installed("kgen")
    except PackageNotFoundError:
        return __version__
