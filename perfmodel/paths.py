"""Where the shipped data (devices/, kernels/) lives: the source tree or the installed wheel."""
from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder `name` ("devices" or "kernels").

    A wheel carries them as perfmodel/_data/<name> (pyproject force-include); a source
    checkout or an editable install has them beside the package.
    """
    installed = _PKG / "_data" / name
    if installed.is_dir():
        return installed
    return _PKG.parent / name
