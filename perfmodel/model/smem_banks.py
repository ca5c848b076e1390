"""Shared-memory wavefronts per warp instruction, from the kernels' real thread->address maps.

A warp's shared-memory access needs as many wavefronts as the largest number of *distinct*
4-byte words that fall in one bank (identical words are broadcast). A 128-bit access touches
four consecutive words per lane. 32 banks x 4 B: one wavefront moves at most 128 B.
The address maps below mirror kernels/*.cu exactly (same index arithmetic).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .. import catalogue
from ..paths import write_json_atomic

BANKS = 32


def wavefronts(word_addr, width_words: int = 1, banks: int = BANKS) -> int:
    """Wavefronts for one warp instruction: max over banks of distinct words requested
    (per half-warp phase for 128-bit accesses, see wavefronts_many)."""
    return int(wavefronts_many(np.asarray(word_addr, dtype=np.int64).reshape(1, 32), width_words, banks)[0])


def wavefronts_many(rows, width_words: int = 1, banks: int = BANKS) -> np.ndarray:
    """`wavefronts` for many warp instructions at once: rows is (n, 32) word addresses.

    A wavefront returns at most one 32-bit register to each of the 32 lanes (128 B), so a 128-bit
    access is served per quarter-warp: four phases of 8 lanes, each at least one wavefront plus
    its bank conflicts. When lane pairs share addresses (lane n and n^1 for every n, or n and n^2)
    the returned registers are packed two per lane pair and the warp is served per half-warp (two
    phases of 16 lanes) instead (NVIDIA's rule for CC >= 7.0: forums.developer.nvidia.com/t/77228).
    This reproduces ncu's shared-memory wavefront counter for the whole ladder on Hopper: a
    row-broadcast read costs 2 wavefronts, 256 contiguous bytes 4, and warp_tiled's 4 distinct
    addresses spread over lanes 0-3 cost 4, not 2."""
    rows = np.asarray(rows, dtype=np.int64)
    if width_words == 4:
        lanes = np.arange(32)
        paired = (rows == rows[:, lanes ^ 1]).all(axis=1) | (rows == rows[:, lanes ^ 2]).all(axis=1)
        halves = wavefronts_many_phase(rows.reshape(len(rows) * 2, 16), width_words, banks).reshape(len(rows), 2).sum(axis=1)
        quarters = wavefronts_many_phase(rows.reshape(len(rows) * 4, 8), width_words, banks).reshape(len(rows), 4).sum(axis=1)
        return np.where(paired, halves, quarters)
    if width_words == 2:  # 64-bit accesses: per half-warp (16 lanes x 8 B = 128 B)
        return wavefronts_many_phase(rows.reshape(len(rows) * 2, 16), width_words, banks).reshape(len(rows), 2).sum(axis=1)
    return wavefronts_many_phase(rows, width_words, banks)


def wavefronts_many_phase(rows, width_words: int, banks: int) -> np.ndarray:
    a = (np.asarray(rows, dtype=np.int64)[:, :, None] + np.arange(width_words)).reshape(len(rows), -1)
    a = np.sort(a, axis=1)
    distinct = np.ones_like(a, dtype=bool)
    distinct[:, 1:] = a[:, 1:] != a[:, :-1]
    r, c = np.nonzero(distinct)
    counts = np.bincount(r * banks + a[r, c] % banks, minlength=len(rows) * banks).reshape(len(rows), banks)
    return counts.max(axis=1)


def _lanes(warp: int = 0):
    return np.arange(32) + 32 * warp


def _a_row(cfg, trow, ii: int):
    """Block-tile row of a thread's A value ii (tile_f4.cuh a_row): contiguous or in quadrants."""
    tm, bm = cfg.tm, cfg.bm
    return (ii // (tm // 2)) * (bm // 2) + trow * (tm // 2) + ii % (tm // 2) if cfg.quadrants else trow * tm + ii


def _b_col(cfg, tcol, jj: int):
    tn, bn = cfg.tn, cfg.bn
    return (jj // (tn // 2)) * (bn // 2) + tcol * (tn // 2) + jj % (tn // 2) if cfg.quadrants else tcol * tn + jj


def _a_at(cfg, m, k):
    """Shared-memory word of A(m, k) (tile_f4.cuh a_at)."""
    return k * cfg.bm + m if cfg.transposed_a else m * cfg.bk + k


def _b_at(cfg, k, n):
    """Shared-memory word of B(k, n) (tile_f4.cuh b_at): plain, padded rows, or permuted."""
    if cfg.b_layout == "permuted":
        tn, bn = cfg.tn, cfg.bn
        if cfg.quadrants:
            tcol, jj = (n % (bn // 2)) // (tn // 2), (n // (bn // 2)) * (tn // 2) + n % (tn // 2)
        else:
            tcol, jj = n // tn, n % tn
        return k * bn + jj * (bn // tn) + tcol
    return k * cfg.b_row + n


def merged(addrs: list, vector: int = 4) -> list:
    """A thread's scalar reads of one step as the compiler issues them: runs of 4 (else 2) reads at
    consecutive words whose first word is 16- (8-) byte aligned in every lane become one LDS.128
    (LDS.64), as nvcc does where it can prove the alignment (tests check this against the SASS)."""
    out, i = [], 0
    while i < len(addrs):
        for w in (4, 2):
            if w <= vector and i + w <= len(addrs) and all(np.array_equal(addrs[i + q], addrs[i] + q) for q in range(1, w)) \
                    and not np.any(np.asarray(addrs[i]) % w):
                out.append((addrs[i], w))
                i += w
                break
        else:
            out.append((addrs[i], 1))
            i += 1
    return out


def _inner_loop_reads(cfg, k: int, warp: int, fragments: bool = False):
    """(addresses, width) of every shared-memory read one warp issues at inner step k; with `fragments`,
    (addresses, width, "A" or "B"): the operand whose fragment the read fills."""
    t = _lanes(warp)
    bm, bn, bk, tm, tn = cfg.bm, cfg.bn, cfg.bk, cfg.tm, cfg.tn
    reads = []

    def read_a(items):  # A's reads (a fragment of A)
        reads.extend((x, w, "A") for x, w in items)

    def read_b(items):  # B's reads (a fragment of B)
        reads.extend((x, w, "B") for x, w in items)
    # A stored [bm][bk]: a thread's reads along the unrolled k loop are contiguous, and nvcc merges
    # them into one LDS.128 per 4 k steps when bk % 4 == 0 (seen in the SASS and ncu counts)
    a_vec = 4 if bk % 4 == 0 else 1
    a_now = a_vec == 1 or k % 4 == 0
    if cfg.kernel == "smem_tiled":
        ty, tx = t // bn, t % bn
        read_a([(ty * bk + k, a_vec)] if a_now else [])
        read_b([(k * bn + tx, 1)])
    elif cfg.kernel == "tiled_1d":
        trow, tcol = t // bn, t % bn
        read_b([(k * bn + tcol, 1)])
        read_a([((trow * tm + i) * bk + k, a_vec) for i in range(tm)] if a_now else [])
    elif cfg.kernel == "tiled_2d":
        tpr = bn // tn
        trow, tcol = t // tpr, t % tpr
        read_a([((trow * tm + i) * bk + k, a_vec) for i in range(tm)] if a_now else [])
        read_b(merged([k * bn + tcol * tn + j for j in range(tn)]))
    elif cfg.spec.staging == "async":  # kernels/11_async_pipeline.cu: A as stored ([bm][bk + a_pad]), B float4
        w = t // 32
        lane = t % 32
        wrow, wcol = w // (bn // cfg.wn), w % (bn // cfg.wn)
        wsubm, wsubn = cfg.wm // cfg.wm_iter, cfg.wn // cfg.wn_iter
        trow, tcol = lane // (wsubn // tn), lane % (wsubn // tn)
        stride = bk + cfg.spec.a_pad
        for wi in range(cfg.wm_iter):
            read_a([((wrow * cfg.wm + wi * wsubm + trow * tm + i) * stride + k, a_vec) for i in range(tm)] if a_now else [])
        for wj in range(cfg.wn_iter):
            read_b([(k * bn + wcol * cfg.wn + wj * wsubn + tcol * tn + j, 4) for j in range(0, tn, 4)])
    elif cfg.kernel == "warp_tiled":
        w = t // 32
        lane = t % 32
        wrow, wcol = w // (bn // cfg.wn), w % (bn // cfg.wn)
        wsubm, wsubn = cfg.wm // cfg.wm_iter, cfg.wn // cfg.wn_iter
        trow, tcol = lane // (wsubn // tn), lane % (wsubn // tn)
        fw = cfg.smem_read_vector
        for wi in range(cfg.wm_iter):
            a = [k * bm + wrow * cfg.wm + wi * wsubm + trow * tm + i for i in range(tm)]
            read_a([(a[i], 4) for i in range(0, tm, 4)] if fw == 4 else merged(a))
        for wj in range(cfg.wn_iter):
            b = [k * bn + wcol * cfg.wn + wj * wsubn + tcol * tn + j for j in range(tn)]
            read_b([(b[j], 4) for j in range(0, tn, 4)] if fw == 4 else merged(b))
    else:  # the register-tile kernels of tile_f4.cuh (read_frags)
        tpr = bn // tn
        trow, tcol = t // tpr, t % tpr
        if cfg.smem_read_vector == 4:
            read_a([(_a_at(cfg, _a_row(cfg, trow, i), k), 4) for i in range(0, tm, 4)])
            read_b([(_b_at(cfg, k, _b_col(cfg, tcol, j)), 4) for j in range(0, tn, 4)])
        else:
            if cfg.transposed_a:
                read_a(merged([_a_at(cfg, _a_row(cfg, trow, i), k) for i in range(tm)]))
            elif a_now:
                read_a([(_a_at(cfg, _a_row(cfg, trow, i), k), a_vec) for i in range(tm)])
            read_b(merged([_b_at(cfg, k, _b_col(cfg, tcol, j)) for j in range(tn)]))
    return reads if fragments else [(x, w) for x, w, _ in reads]


def _tile_stores(cfg, warp: int):
    """(addresses, width) of every shared-memory store one warp issues per k-tile (tile_plain.cuh,
    tile_f4.cuh store_tile; async_pipeline's cp.async writes, which are LDGSTS, not STS, instructions)."""
    t = _lanes(warp)
    T, bm, bn, bk = cfg.threads, cfg.bm, cfg.bn, cfg.bk
    stores = []
    if cfg.spec.staging == "async":  # cp.async's 16-byte writes: A [bm][bk + a_pad], B [bk][bn]
        for r in range(bm * bk // (4 * T)):
            e = t + r * T
            stores.append(((e // (bk // 4)) * (bk + cfg.spec.a_pad) + (e % (bk // 4)) * 4, 4))
        for r in range(bk * bn // (4 * T)):
            e = t + r * T
            stores.append(((e // (bn // 4)) * bn + (e % (bn // 4)) * 4, 4))
        return stores
    f4_family = cfg.spec.smem_read_vector == 4  # tile_f4.cuh's layouts; the others keep A [bm][bk], B [bk][bn]
    if cfg.gmem_vector == 1:
        for r in range(bm * bk // T):
            e = t + r * T
            stores.append((_a_at(cfg, e // bk, e % bk) if f4_family else e, 1))
        for r in range(bk * bn // T):
            e = t + r * T
            stores.append((_b_at(cfg, e // bn, e % bn) if f4_family else e, 1))
        return stores
    for r in range(bm * bk // (4 * T)):
        e = t + r * T
        row, c = e // (bk // 4), (e % (bk // 4)) * 4
        if f4_family and cfg.transposed_a:
            stores += [((c + q) * bm + row, 1) for q in range(4)]  # A transposed: 4 scalar stores
        else:
            stores.append((row * bk + c, 4))
    for r in range(bk * bn // (4 * T)):
        e = t + r * T
        row, c = e // (bn // 4), (e % (bn // 4)) * 4
        if not f4_family or cfg.b_layout in (None, "plain") or (cfg.b_layout == "padded" and cfg.b_row % 4 == 0):
            stores.append((row * cfg.b_row + c if f4_family else row * bn + c, 4))
        else:
            stores += [(_b_at(cfg, row, c + q), 1) for q in range(4)]
    return stores


def _pow2(x) -> bool:
    return x is None or (x > 0 and x & (x - 1) == 0)


_CACHE: dict = {}
_PATTERNS: dict = {}


def _samples(cfg) -> tuple[list[int], range]:
    """The warps and inner steps k whose reads stand for a block's k-tile.

    Every read address is base(lane) + k*stride, a uniform shift per k, so steps k=0..3 stand for all
    bk steps (4 because of the merged LDS.128 of A every 4 steps); with power-of-two tiles warp w's
    addresses are warp 0's shifted uniformly too, so warp 0 stands for all warps (otherwise every
    warp is simulated)."""
    uniform = all(_pow2(getattr(cfg, k)) for k in ("bm", "bn", "bk", "tm", "tn", "wm", "wn", "wn_iter"))
    sample = [0] if uniform else list(range(cfg.threads // 32))
    return sample, (range(4) if cfg.bk % 4 == 0 else range(1))


def _accesses(cfg):
    """[(addresses, width, weight, is_store)] for one block per k-tile (the warps and steps of _samples)."""
    sample, ks = _samples(cfg)
    scale = cfg.threads // 32 / len(sample)
    out = []
    for w in sample:
        for k in ks:
            out += [(a, wd, scale * cfg.bk / len(ks), False) for a, wd in _inner_loop_reads(cfg, k, w)]
        out += [(a, wd, scale, True) for a, wd in _tile_stores(cfg, w)]
    return out


_GROUPS: dict = {}


def read_groups(cfg) -> tuple[tuple[float, float, float], ...]:
    """The shared loads of one warp's k-tile grouped by how many FFMAs each feeds: per group (FFMAs fed by
    one load, loads a warp issues a k-tile, their mean wavefronts), most FFMAs first. A load of w words of
    A's fragment feeds w x the thread's output columns, of B's w x its rows (each register one FFMA per
    output of its row or column), so where A's and B's loads differ in wavefronts (a conflicted fragment
    beside a clean one) and in what they feed, the groups tell them apart; loads of both that feed as
    many FFMAs fall in one group at their mean. Empty without shared memory."""
    hit = _GROUPS.get(cfg)
    if hit is not None:
        return hit
    out: dict[float, list[float]] = {}
    if cfg.spec.uses_smem:
        rows = cfg.wm_iter * cfg.tm
        cols = (cfg.wn_iter or 1) * cfg.tn
        sample, ks = _samples(cfg)
        weight = cfg.bk / len(ks) / len(sample)  # loads a warp issues a k-tile per read sampled
        for w in sample:
            for k in ks:
                for addr, wd, frag in _inner_loop_reads(cfg, k, w, fragments=True):
                    g = out.setdefault(float(wd * (cols if frag == "A" else rows)), [0.0, 0.0])
                    g[0] += weight
                    g[1] += weight * wavefronts(np.asarray(addr), wd)
    res = tuple((c, n, wf / n) for c, (n, wf) in sorted(out.items(), reverse=True) if n > 0)
    _GROUPS[cfg] = res
    return res


def smem_counts_many(configs) -> list[tuple[float, float, float, float]]:
    """Per block per k-tile, for each config: (LDS warp-instructions, LDS wavefronts, STS warp-
    instructions, STS wavefronts), summed over the block's warps; zeros without shared memory.

    A uniform shift of a warp's addresses only permutes banks, so wavefronts depend on the address
    pattern relative to its lowest address: each distinct pattern is simulated once, all new ones in
    one vectorised batch per access width (what makes cold sweeps fast)."""
    todo = [c for c in dict.fromkeys(configs) if c not in _CACHE]
    if _DISK and todo:
        for c in todo:
            hit = _DISK.get(c.label())
            if hit is not None:
                _CACHE[c] = hit
        todo = [c for c in todo if c not in _CACHE]
    if todo:
        _DIRTY[0] = True
    uses = []
    new = {1: {}, 2: {}, 4: {}}
    for c in todo:
        items = []
        if c.spec.uses_smem:
            for addr, width, weight, store in _accesses(c):
                rel = np.asarray(addr, dtype=np.int64)
                rel = rel - rel.min()
                key = rel.tobytes()
                if (width, key) not in _PATTERNS:
                    new[width][key] = rel
                items.append(((width, key), weight, store))
        uses.append((c, items))
    for width, pats in new.items():
        if pats:
            wf = wavefronts_many(np.stack(list(pats.values())), width)
            _PATTERNS.update({(width, k): int(w) for k, w in zip(pats, wf)})
    for c, items in uses:
        t = [0.0, 0.0, 0.0, 0.0]
        for key, weight, store in items:
            j = 2 if store else 0
            t[j] += weight
            t[j + 1] += _PATTERNS[key] * weight
        _CACHE[c] = tuple(t)
    return [_CACHE[c] for c in configs]


_DISK: dict = {}
_DIRTY = [False]


def code_hash() -> str:
    """Hash of the code the counts depend on (this file's address maps, catalogue's derived sizes)."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(Path(catalogue.__file__).read_bytes())
    return h.hexdigest()


def load_disk_cache(path) -> None:
    """Counts saved by an earlier sweep (keyed by config label; the file name carries code_hash())."""
    if path is None or not path.exists():
        return
    try:
        _DISK.update({k: tuple(v) for k, v in json.loads(path.read_text()).items()})
    except (ValueError, TypeError, OSError):
        pass


def save_disk_cache(path) -> None:
    """Persist every count known in this process (only if new ones were simulated)."""
    if path is None or not _DIRTY[0]:
        return
    data = dict(_DISK)
    data.update({c.label(): list(t) for c, t in _CACHE.items()})
    if write_json_atomic(path, data):
        _DIRTY[0] = False


def smem_counts(cfg) -> tuple[float, float, float, float]:
    """`smem_counts_many` for one config."""
    return smem_counts_many([cfg])[0]


def _clear():
    _CACHE.clear()
    _PATTERNS.clear()
    _DISK.clear()
    _GROUPS.clear()


smem_counts.cache_clear = _clear  # benchmarks clear it to time the cold path
