"""The global stores of C: how many 32-byte L2 sectors one block's warps write, from the kernels' real
thread -> C-element maps (the same index arithmetic as kernels/*.cu, interior path).

A warp store instruction sends one request per distinct 32-byte sector its lanes touch. A sector that
a lane fills only partly still moves as a sector between the SM and L2. tiled_2d writes one float per
lane with lanes TN floats apart: with TN = 8, every lane has a sector of its own, so its C moves 8 times
the bytes it holds. The float4 stores of tiled_2d_float4 (lanes TN floats apart) move 2 times. The
quadrant stores of bank_conflict_free and double_buffer, and warp_tiled's, move 1 time: lanes write
consecutive float4s. tile_f4.cuh's thread_tile choice picks between the two. Rows are taken to start on a sector boundary (N a multiple of 8).

The guarded edge body and the scalar inner body (kernels/tile_f4.cuh, store_c4 with G = 1 or 2) store the same
elements as four scalars per float4, q = 0..3 in turn: a warp's scalar store of the quadrant map writes 4 of
every 16 bytes, two lanes a sector, so its C moves 4 times the bytes it holds where the float4 stores move 1
time (`scalar=True`). The kernels that store scalars everywhere (steps 1-5) move the same on both paths.
"""
from __future__ import annotations

import numpy as np

from ..catalogue import KernelConfig

SECTOR = 32  # bytes


def _stores(cfg: KernelConfig, scalar: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of every store of C, block-relative, shape (threads, stores per thread) in issue
    order; a float4 store is given by its first column (16-byte aligned, so within one sector), or with
    `scalar` as its four scalar stores (the edge and scalar inner bodies' store_c4), column q of it in turn."""
    rows, cols, width = _store_map(cfg)
    if not scalar or width == 1:
        return rows, cols
    q = np.arange(width)
    return np.repeat(rows, width, axis=1), (cols[:, :, None] + q[None, None, :]).reshape(cols.shape[0], -1)


def _store_map(cfg: KernelConfig) -> tuple[np.ndarray, np.ndarray, int]:
    """The interior path's (row, column) of every store of C and its width in floats (1, or 4 for the float4
    stores of steps 6-11)."""
    k, bm, bn = cfg.kernel, cfg.bm, cfg.bn
    t = np.arange(cfg.threads)[:, None]
    if k == "naive":
        return t % bm, t // bm, 1
    if k in ("coalesced", "coalesced_split_k", "smem_tiled"):
        return t // bn, t % bn, 1
    if k == "tiled_1d":
        i = np.arange(cfg.tm)[None, :]
        return (t // bn) * cfg.tm + i, np.broadcast_to(t % bn, (cfg.threads, cfg.tm)), 1
    tm, tn = cfg.tm, cfg.tn
    trow, tcol = t // (bn // tn), t % (bn // tn)
    if k == "tiled_2d":
        i, j = (a.ravel()[None, :] for a in np.meshgrid(np.arange(tm), np.arange(tn), indexing="ij"))
        return trow * tm + i, tcol * tn + j, 1
    if cfg.spec.mapping == "tiled" and cfg.spec.smem_read_vector == 4:  # steps 6-8, 10: tile_f4.cuh a_row/b_col, float4 stores
        i, j = (a.ravel()[None, :] for a in np.meshgrid(np.arange(tm), np.arange(0, tn, 4), indexing="ij"))
        if not cfg.quadrants:
            return trow * tm + i, tcol * tn + j, 4
        return ((i // (tm // 2)) * (bm // 2) + trow * tm // 2 + i % (tm // 2),
                (j // (tn // 2)) * (bn // 2) + tcol * tn // 2 + j % (tn // 2), 4)
    if cfg.spec.mapping == "warp_tiled":  # steps 9 and 11
        wm, wn, wni = cfg.wm, cfg.wn, cfg.wn_iter
        wmi = (wm * wn) // (32 * tm * tn * wni)
        wsubm, wsubn = wm // wmi, wn // wni
        warp, lane = t // 32, t % 32
        wrow, wcol = warp // (bn // wn), warp % (bn // wn)
        trow, tcol = lane // (wsubn // tn), lane % (wsubn // tn)
        wi, i, wj, j = (a.ravel()[None, :] for a in np.meshgrid(np.arange(wmi), np.arange(tm), np.arange(wni),
                                                                  np.arange(0, tn, 4), indexing="ij"))
        return wrow * wm + wi * wsubm + trow * tm + i, wcol * wn + wj * wsubn + tcol * tn + j, 4
    raise ValueError(f"no C store map for kernel {k}")


_SECTORS: dict[tuple, int] = {}  # by everything the store map depends on (bk does not: one count serves every bk)


def c_store_sectors(cfg: KernelConfig, scalar: bool = False) -> int:
    """32-byte sectors one block's stores of its C tile send to L2 (`scalar`: on the edge and scalar inner
    bodies' path)."""
    key = (cfg.kernel, cfg.bm, cfg.bn, cfg.tm, cfg.tn, cfg.wm, cfg.wn, cfg.wn_iter, cfg.quadrants, scalar)
    if key not in _SECTORS:
        _SECTORS[key] = _count(cfg, scalar)
    return _SECTORS[key]


def _count(cfg: KernelConfig, scalar: bool = False) -> int:
    rows, cols = (np.asarray(a, dtype=np.int64) for a in _stores(cfg, scalar))
    key = rows * (1 << 20) + cols * 4 // SECTOR  # one value per (row, 32-byte sector)
    warps = key.reshape(-1, 32, key.shape[1]) if cfg.threads % 32 == 0 else key[None]
    ordered = np.sort(warps, axis=1)
    return int(warps.shape[0] * warps.shape[2] + (ordered[:, 1:, :] != ordered[:, :-1, :]).sum())


def c_store_ratio(cfg: KernelConfig, scalar: bool = False) -> float:
    """Bytes the C stores move between the SM and L2 per byte of C (1 when every sector is filled)."""
    return c_store_sectors(cfg, scalar) * SECTOR / (4.0 * cfg.bm * cfg.bn)
