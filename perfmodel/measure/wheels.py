"""Where NVIDIA's pip wheels put their files: the `nvidia` namespace package (nvidia/cu13/..., nvidia/cuda_nvrtc/...)."""
from __future__ import annotations

import os
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Optional


def nvidia_dirs() -> list[Path]:
    """The folders of the `nvidia` namespace package (empty without any NVIDIA wheel)."""
    try:
        import nvidia  # the namespace package NVIDIA's wheels install into
    except ImportError:
        return []
    return [Path(p) for p in getattr(nvidia, "__path__", [])]


def wheel_file(relpath: str, executable: bool = False) -> Optional[Path]:
    """nvidia/<relpath> from an installed wheel, or None. An executable a wheel installed without its
    execute bit is given one (pip keeps the bit from the archive, not every installer does)."""
    for base in nvidia_dirs():
        p = base / relpath
        if p.is_file():
            if executable and not os.access(p, os.X_OK):
                try:
                    p.chmod(p.stat().st_mode | 0o111)
                except OSError:
                    return None
            return p
    return None


@lru_cache(maxsize=None)
def wheel_version(distribution: str) -> Optional[str]:
    """The installed version of a wheel (e.g. 'nvidia-nvvm' -> '13.0.88'), or None."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
