"""Where the shipped data (devices/, kernels/, shapes/, published/) lives: the source tree or the installed wheel; and the
one way cache files are written."""
from __future__ import annotations

import json
import os
import threading
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


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write data to path through a temporary file beside it and a rename, so a reader never sees half a
    file; the temporary name is this process's and thread's own, so writers of the same path do not share it."""
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}-{threading.get_ident()}")
    if isinstance(data, str):
        tmp.write_text(data)
    else:
        tmp.write_bytes(data)
    tmp.replace(path)


def write_json_atomic(path: Path | None, data) -> bool:
    """Write data as JSON through a temporary file and a rename, so a reader never sees half a file.
    Cache files only: a failure (no path, unwritable folder) is not an error; returns whether it wrote."""
    if path is None:
        return False
    try:
        write_atomic(path, json.dumps(data))
        return True
    except OSError:
        return False


def cache_dir() -> Path:
    """The on-disk cache (PERFMODEL_CACHE or ~/.cache/perfmodel), created if missing."""
    d = Path(os.environ.get("PERFMODEL_CACHE", Path.home() / ".cache" / "perfmodel"))
    d.mkdir(parents=True, exist_ok=True)
    return d
