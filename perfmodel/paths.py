"""Where the shipped data (devices/, kernels/, shapes/, published/) lives: the source tree or the installed wheel; and the
one way cache files are written."""
from __future__ import annotations

import json
import os
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder `name` ("devices", "kernels", "shapes" or "published").

    A wheel carries them as perfmodel/_data/<name> (pyproject force-include); a source
    checkout or an editable install has them beside the package.
    """
    installed = _PKG / "_data" / name
    if installed.is_dir():
        return installed
    return _PKG.parent / name


def write_json_atomic(path: Path | None, data) -> bool:
    """Write data as JSON through a temporary file and a rename, so a reader never sees half a file.
    Cache files only: a failure (no path, unwritable folder) is not an error; returns whether it wrote."""
    if path is None:
        return False
    try:
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)
        return True
    except OSError:
        return False


def cache_dir() -> Path:
    """The on-disk cache (PERFMODEL_CACHE or ~/.cache/perfmodel), created if missing."""
    d = Path(os.environ.get("PERFMODEL_CACHE", Path.home() / ".cache" / "perfmodel"))
    d.mkdir(parents=True, exist_ok=True)
    return d
