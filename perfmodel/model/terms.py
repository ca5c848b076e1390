"""The model's terms as pure, vectorised functions (scalars or arrays of configs alike).

Every function takes numpy arrays (or floats) and device figures and returns arrays, so a single
`Prediction` and a sweep over 10^4 configs run the same formulas (no formula written twice).
Units: cycles are SM clock cycles, bytes are bytes, per-tile counts are per k-tile of bk steps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

FLOAT = 4.0
WAVEFRONT_BYTES = 128.0
SECTOR_BYTES = 32.0  # what the L2 asks DRAM for at least


# ---- traffic and intensity -----------------------------------------------------------------
def grid(M, N, K, bm, bn, bk):
    """Blocks and k-tiles: ceil(M/bm) x ceil(N/bn) blocks, ceil(K/bk) tiles each."""
    gy, gx = np.ceil(M / bm), np.ceil(N / bn)
    return gy, gx, gy * gx, np.ceil(K / bk)


def l2_to_sm_bytes(M, N, K, bm, bn, c_ratio=1.0):
    """Bytes between L2 and the SMs: every block streams its A panel (bm x K) and B panel (K x bn)
    once, plus C written once: (M*N*K/bn + M*N*K/bm + M*N) x 4 B ([sgemm-notes] sec. 4). c_ratio: the
    sector bytes the kernel's C stores move per byte of C (model.gstores; 1 when they fill sectors)."""
    gy, gx = np.ceil(M / bm), np.ceil(N / bn)
    return FLOAT * (gy * bm * K * gx + gx * bn * K * gy) * 1.0 + FLOAT * M * N * c_ratio


def dram_bytes(M, N, K, bm, bn, concurrent_blocks, l2_bytes):
    """DRAM bytes with L2 reuse among the blocks running at once.

    Blocks launch row by row (blockIdx.x along N) and a wave of P resident blocks walks K in near
    lockstep, so within a wave each A and B panel it touches crosses DRAM once: r = ceil(P/gx) block
    rows and c = min(P, gx) block columns, (r*bm + c*bn)*K*4 bytes per wave, G/P waves. If all of B
    plus one wave's A panels fit in L2, B survives between waves and traffic is compulsory
    (A + B + C once). Never below compulsory, never above the no-reuse L2->SM traffic."""
    gy, gx = np.ceil(M / bm), np.ceil(N / bn)
    P = np.maximum(concurrent_blocks, 1.0)
    rows, cols = np.minimum(np.ceil(P / gx), gy), np.minimum(P, gx)
    a_all, b_all, c_all = FLOAT * M * K, FLOAT * K * N, FLOAT * M * N
    compulsory = a_all + b_all + c_all
    wave_a = FLOAT * rows * bm * K
    per_wave = wave_a + FLOAT * cols * bn * K
    streamed = np.clip((gy * gx / P) * per_wave + c_all, compulsory, l2_to_sm_bytes(M, N, K, bm, bn))
    return np.where(b_all + wave_a <= l2_bytes, compulsory, streamed)


def dram_a_share(M, N, K, bm, bn, concurrent_blocks, l2_bytes):
    """The share of terms.dram_bytes that is A's reads, by the same accounting: all of A where B and a
    wave's A panels fit in the L2 (compulsory traffic), else each wave's A panels (r block rows of bm
    rows over K) times the waves, at least all of A once."""
    gy, gx = np.ceil(M / bm), np.ceil(N / bn)
    P = np.maximum(concurrent_blocks, 1.0)
    rows = np.minimum(np.ceil(P / gx), gy)
    a_all = FLOAT * M * K
    wave_a = FLOAT * rows * bm * K
    a_part = np.where(FLOAT * K * N + wave_a <= l2_bytes, a_all, np.maximum((gy * gx / P) * wave_a, a_all))
    total = dram_bytes(M, N, K, bm, bn, concurrent_blocks, l2_bytes)
    return np.clip(a_part / np.maximum(total, 1.0), 0.0, 1.0)


def interp_log2(table, x):
    """A measured table {count: value} read at x: linear in log2 of the count between its entries, held at its
    ends; x below 1 reads as 1 (the device files' tables are keyed by segment bytes or lines in flight)."""
    pts = sorted((float(k), float(v)) for k, v in table.items())
    return np.interp(np.log2(np.maximum(np.asarray(x, float), 1.0)), [np.log2(k) for k, _ in pts], [v for _, v in pts])


def load_queue_cycles(warps, loads, pass_cycles, burst):
    """What a lone block's scalar tile loads from the L2 wait beyond one load's latency and its bytes' burst
    through the port: the L1 takes an SM's warp-wide loads that miss it at a limited rate.

    Measured on the lent H200 (benchmarks/load_inflight.py, results/archive/load-inflight-20261129-h200.txt and
    .json.xz): one block of w warps on every SM, each warp n independent warp-wide 4-byte loads in flight (one
    128-byte line each), all served by the L2. A pass of one load a warp takes the L2's latency (336-343
    cycles); a pass of n takes T(w, n) cycles, and the loads arrive at most 0.16 / 0.27 / 0.31-0.36 /
    0.36-0.46 a clock per SM with 4 / 8 / 16 / 32 warps (8 warps x 32 loads: 945 cycles; 32 KB through the
    120 B/clk port would take 273 beyond the latency). A single-buffered block loading its tile with scalar
    loads asks for (bm + bn) bk / 32 such lines a k-tile, n = (bm + bn) bk / threads a warp, at once; its load
    phase (latency + burst) then grows by T(w, n) - T(w, 1) - burst where that is positive.
    pass_cycles: {warps: {loads: cycles}} (memory.l2_load_pass_cycles_by_warps_by_loads), read linearly in
    log2 of the warps and of the loads; beyond the largest count of loads the pass grows in proportion (the
    rate it reached); nothing outside the measured warps (fewer than the fewest: not measured) or without the
    table. warps, loads, burst: per config (loads already 0 where the term does not apply)."""
    w = np.asarray(warps, float)
    n = np.asarray(loads, float)
    burst = np.asarray(burst, float)
    if not pass_cycles:
        return np.zeros(np.broadcast(w, n, burst).shape)
    ws = sorted(int(k) for k in pass_cycles)
    ns = sorted(int(k) for k in pass_cycles[str(ws[0])])
    grid = np.array([[float(pass_cycles[str(a)][str(b)]) for b in ns] for a in ws])
    lw = np.log2(np.clip(w, ws[0], ws[-1]))
    cols = np.stack([np.interp(lw, np.log2(ws), grid[:, j]) for j in range(len(ns))], axis=-1)  # (..., loads)
    ln = np.log2(np.clip(n, 1.0, ns[-1]))
    at = np.array([np.interp(a, np.log2(ns), c) for a, c in zip(np.ravel(ln), cols.reshape(-1, len(ns)))]).reshape(ln.shape)
    at = np.where(n > ns[-1], cols[..., -1] * n / ns[-1], at)
    extra = np.maximum(at - cols[..., 0] - burst, 0.0)
    return np.where((w >= ws[0]) & (n > 1.0), extra, 0.0)


def dram_walk_rate(a_share, segment_bytes, efficiency):
    """The share of the DRAM stream rate a kernel's DRAM reads get, where A's come as a k-tile walk.

    A k-tile of a row-major A is bm rows of bk floats, rows K x 4 bytes apart: every step reads one short
    segment (bk x 4 bytes) of each of many rows, and the next step the next segment of the same rows.
    DRAM serves such a walk below its stream rate: on the H100 a load-only kernel reaching the stream's
    3.0 TB/s with 32 KB in flight per SM gets 63 % of it with 32-byte segments, 67 % with
    64, 93 % with 128 and 98 % with 256-512, whatever it keeps in flight (8 KB to 1 MB per SM), and the
    same walk of B (adjacent blocks reading adjacent segments of the same rows) reaches the stream rate
    (benchmarks/dram_walk.py; results/archive/dram-walk-20261125-h100-sxm-*.txt). `efficiency`:
    {segment bytes: share} (memory.dram_row_segment_efficiency), interpolated in log2 of the bytes and
    held at its ends; None: 1. A's reads at that share, the rest at the stream rate:
    1 / (a_share / e + 1 - a_share). A segment is at least a sector (segment_bytes: max(bk x 4, 32); the
    kernels without tiles read A a sector at a time through the L1)."""
    if not efficiency:
        return np.ones(np.broadcast(a_share, segment_bytes).shape)
    e = interp_log2(efficiency, segment_bytes)
    a = np.asarray(a_share, float)
    return 1.0 / (a / e + (1.0 - a))


# ---- instruction issue ---------------------------------------------------------------------
def issue_counts(threads, ffma_per_thread, lds_block, sts_block, ldg_per_thread, barriers, buffers, uses_smem):
    """Warp instructions per block per k-tile by kind ([gemm-theory]: issue slots bound the FMA pipe).

    FFMA, LDS, STS and LDG come from the kernel's structure; 'other' is the loop's integer and
    branch work: per tile 3 (counter, compare, branch) + one address increment per global load
    + 2 for the buffer switch of double buffering; the k loop of the one-thread-per-element
    kernels (unrolled 4x by nvcc) costs 2 per k step (B address, A address and loop share)."""
    warps = threads / 32.0
    ffma = warps * ffma_per_thread
    ldg = warps * ldg_per_thread
    bar = warps * barriers
    other = warps * np.where(uses_smem > 0, 3.0 + ldg_per_thread + 2.0 * (buffers >= 2), 2.0)
    return ffma, np.asarray(lds_block, float), np.asarray(sts_block, float), ldg, bar, other


# ---- Little's law --------------------------------------------------------------------------
def littles_law(needed, available):
    """Achievable fraction of a ceiling: min(1, parallelism available / latency x throughput)."""
    return np.minimum(1.0, np.asarray(available, float) / np.maximum(needed, 1e-30))


# tile loads' L2 hits split into first and second reads (second_read_share, tile_l2_latency): measured on the H200 and
# scored on every recorded set, not adopted (docs/model.md, "A line's second read from the L2"); off, every L2 hit of
# a tile load takes l2_latency_cycles, the first read's
SECOND_READS = False


def second_read_share(M, N, bm, bn, concurrent_blocks):
    """The share of a GEMM's tile bytes from the L2 that are second reads of their lines (tile_l2_latency).

    Blocks launch row by row (blockIdx.x along N), and the blocks that run at once walk K in near lockstep
    (as dram_bytes has it), so the blocks of one wave that share a panel ask for each of its lines at about the
    same time, and each of them waits for the line's first read: on the H200 the 8 MB ring chased by 1 to 132
    blocks at once takes 359-368 cycles a step for every block, and 283-289 walked again
    (benchmarks/l2_reuse_latency.py --together, results/archive/l2-reuse-latency-together-20261201-h200.txt). A's
    panel is read by the gx = ceil(N / bn) blocks of its block row, consecutive in launch order: all at once where
    a wave of P blocks holds a row (fA = min(1, P / gx) of them in the wave that first reads it); B's panel by the
    gy = ceil(M / bm) block rows, of which P / gx run at once (fB = min(1, P / gx / gy)). The later waves' reads
    are second reads: (bm (1 - fA) + bn (1 - fB)) / (bm + bn), by the bytes each panel gives a k-tile. One wave
    (P >= all blocks): 0."""
    gy, gx = np.ceil(M / bm), np.ceil(N / bn)
    P = np.maximum(concurrent_blocks, 1.0)
    f_a = np.minimum(1.0, P / gx)
    f_b = np.minimum(1.0, P / gx / gy)
    return (bm * (1.0 - f_a) + bn * (1.0 - f_b)) / (bm + bn)


def tile_l2_latency(lat, second_share) -> np.ndarray:
    """The latency of a tile load's L2 hit: the first read's (l2_latency_cycles, the walk calibrate times) and,
    for the share `second_share` of the bytes that other waves read before (second_read_share), the L2's latency
    for a line it has served before, where measured (l2_reread_latency_cycles; otherwise the first read's).

    A pointer chase through a ring the L2 holds takes 349-426 cycles on the H200 with rings of 2-32 MB the first
    time a line is read, and 279-287 when the same launch walks the same ring again (a 1 GiB ring: 658 from DRAM,
    287 again), about the near L2 partition's latency (265.5 cycles published for an H100 PCIe: docs/model.md,
    "Hopper memory latencies: both L2 partitions"), whatever the ring's size (benchmarks/l2_reuse_latency.py,
    results/archive/l2-reuse-latency-20261201-h200.txt)."""
    again = lat.l2_reread_latency_cycles or lat.l2_latency_cycles
    return lat.l2_latency_cycles + np.asarray(second_share, float) * (again - lat.l2_latency_cycles)


def mem_latency(dram_b, l2_b, l2_lat, dram_lat):
    """Average global-load latency: L2 hit rate h = 1 - DRAM bytes / L2 bytes mixes the two."""
    hit = np.clip(1.0 - dram_b / np.maximum(l2_b, 1.0), 0.0, 1.0)
    return hit * l2_lat + (1.0 - hit) * dram_lat, hit


def one_wave_latency(mem_lat, dram_lat, blocks, blocks_per_wave):
    """The load latency of a problem whose blocks all run in one wave: DRAM's, whatever the L2 hit rate.

    mem_latency mixes L2 and DRAM latency by the share of L2 requests DRAM does not serve, a rate over
    the whole run: later blocks reuse panels earlier ones brought in. When every block runs at once
    (blocks <= SMs x blocks per SM) there are no earlier blocks: the blocks sharing a panel request each
    k-tile of it at about the same time, every k-tile is the first touch of its lines since the L2 was
    flushed (validate flushes it before each repetition), and all of them wait for the same DRAM fill.
    On the H100 a lone 8 KB tile takes about 2.0 k cycles from DRAM against 0.8-1.0 k from the L2, for a
    contiguous stream and a GEMM tile walk alike, with 8, 66 or 132 blocks (benchmarks/dram_scatter.py,
    results/archive/dram-scatter-20261123-h100-sxm.txt): the tile's DRAM premium is larger than the
    pointer chase's (dram - l2 latency), so the pointer chase's DRAM latency used here is a lower bound.
    Problems of more than one wave keep the mix."""
    return np.where(one_wave(blocks, blocks_per_wave), dram_lat, mem_lat)


def loaded_dram_latency(dram_lat, lines_per_sm, ratio_by_lines):
    """The DRAM latency of a load phase that has `lines_per_sm` DRAM lines in flight on every SM.

    dram_latency_cycles is a pointer chase: one line in flight in the whole GPU. A tile loop's k-tile
    asks for its DRAM lines at once on every SM, and the wait for them grows with how many are in flight
    long before the DRAM's bandwidth is used up: on the H200 a line takes 1.16 times the pointer chase with
    4 lines a SM, 1.38 with 16, 1.60 with 64 and 1.94 with 128, at a fifth to two thirds of the stream rate
    (benchmarks/load_inflight.py --levels dram; latency.dram_latency_ratio_by_lines_in_flight of the
    device file, docs/model.md "The DRAM wait against the lines in flight"). The ratio is interpolated
    linearly in log2(lines) between the measured counts, 1 at one line and below, the last measured ratio
    beyond the last count (there the DRAM bandwidth bounds the phase: the dram term).
    lines_per_sm: the resident blocks' DRAM bytes of one k-tile / 128 (predict.traffic, which gives the loaded
    latency to A's share of the DRAM bytes, terms.dram_a_share: A's k-tile walk reads short segments of many
    rows, each block its own, as the measurement's warps each walk a region of their own; B's walk, neighbouring
    blocks reading neighbouring segments of the same rows, is a stream, and keeps the pointer chase).
    ratio_by_lines: {"lines": ratio}; None: not measured on the device, the pointer chase stands."""
    if not ratio_by_lines:
        return np.asarray(dram_lat, float)
    return np.asarray(dram_lat, float) * interp_log2(ratio_by_lines, lines_per_sm)


def prefetch_hide(share, buffers):
    """Compute phases that hide a prefetched tile's loads (tile_cycles' `hide`): `share`, the part of the phase that
    issues them which follows them in the binary (measure.sass), then the s - 2 whole phases before the tile is used:
    a ring of s buffers (async_pipeline) first uses the copies issued in one k-tile s - 1 k-tiles later; double
    buffering (s = 2) has the share alone."""
    return share + np.maximum(np.asarray(buffers) - 2, 0)


def copy_landing_cycles(kb, chase, cycles_by_kb):
    """Clocks for `kb` KB of cp.async copies an SM to land from DRAM: the measured table
    (memory.dram_copy_landing_cycles_by_KB, {"KB": clocks}) read linearly from the pointer chase at 0 KB, and past its
    last point along its last slope."""
    x = np.array([0.0] + sorted(float(k) for k in cycles_by_kb))
    y = np.array([float(chase)] + [float(cycles_by_kb[k]) for k in sorted(cycles_by_kb, key=float)])
    kb = np.asarray(kb, float)
    slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
    return np.where(kb <= x[-1], np.interp(kb, x, y), y[-1] + slope * (kb - x[-1]))


def ring_landing_extra(kb_sm, chase, cycles_by_kb, dram_lat, l2_lat, mem_lat, burst):
    """Cycles a ring of cp.async copies (async_pipeline) waits for its tile beyond what the load phase counts
    (mem_lat + burst), added to the load phase its prefetch must hide (tile_cycles, kind 2: `landing`).

    The load phase counts the pointer chase (one line in flight in the whole GPU) and then the tile's bytes
    through the SM's L2->SM port. Copies from DRAM measured alone (benchmarks/copy_landing.py: every SM copies
    a tile a round from a region larger than the L2) land later, and the later the more bytes an SM has in
    flight: on the H100 1,106 / 1,194 / 1,412 / 1,790 / 2,000 clocks a round for 2 / 4 / 8 / 16 / 20 KB an SM,
    about 50 clocks a KB against the pointer chase's ~700 and the port's ~9 clocks a KB; the same with 4 or 8 warps,
    mostly the SM's own bytes (16 SMs keep 86-92 % of the landing on all 132), and b blocks of T KB on an SM land
    within 15 % of one block of b x T KB (docs/model.md, "async_pipeline's two-stage ring"). So the wait is
    landing(kb_sm) - (dram_lat + burst) where the tile comes from DRAM, with kb_sm the KB of one k-tile of the
    blocks an SM runs at once (b x tile bytes: resident blocks share the schedulers round-robin, so they copy
    their tiles together), and nothing where the L2 serves it (copies from L2-resident tiles: a two-stage ring
    never waited longer than the phase). A tile mixes both as the latency does: the share of DRAM in the load
    latency, (mem_lat - l2_lat) / (dram_lat - l2_lat) (1 for a grid of one wave, whose every k-tile is a first
    touch), scales the wait. burst: the resident blocks' tile bytes through the port, in cycles.
    cycles_by_kb: None where nobody measured the landing (nothing added)."""
    if not cycles_by_kb:
        return np.zeros(np.broadcast(kb_sm, mem_lat).shape)
    dram_lat, l2_lat, mem_lat = (np.asarray(x, float) for x in (dram_lat, l2_lat, mem_lat))
    share = np.clip((mem_lat - l2_lat) / np.maximum(dram_lat - l2_lat, 1.0), 0.0, 1.0)
    return share * np.maximum(0.0, copy_landing_cycles(kb_sm, chase, cycles_by_kb) - (dram_lat + burst))


# the C stores' phases (predict.last_wave_store_cycles, lone_block_store_cycles) counted for the elements inside C
# only (c_tile_filled), as the kernels' edge bodies store them; on together with FLUSH_WRITEBACK, scored on the H100
# and H200 shape runs (docs/model.md, "The flush's dirty lines in the dram term"); off, a store phase moves the
# whole tile's sector bytes
STORED_ELEMENTS = True


def c_tile_filled(M, N, bm, bn):
    """The share of the grid's C tile elements that lie inside C: M N / (ceil(M / bm) bm ceil(N / bn) bn). The
    edge bodies store only those (kernels/tile_f4.cuh store_c4 checks r < M and c < N; the one-element kernels
    and tiled_2d check each element), so a block's store phase moves that share of its tile's sector bytes, on
    average over the grid's blocks: all of it where the tiles divide C, one sixteenth for 16-row tiles at M = 1."""
    M, N, bm, bn = (np.asarray(x, float) for x in (M, N, bm, bn))
    return M * N / (np.ceil(M / bm) * bm * np.ceil(N / bn) * bn)


# the write-back of the timing's flush's dirty lines charged in the dram term (flush_writeback_us) as bus time
# (dram_bus_bytes): measured on the H200 and the H100, on together with STORED_ELEMENTS (docs/model.md, "The flush's
# dirty lines in the dram term"); off, a kernel's DRAM traffic is its own bytes at the stream rate
FLUSH_WRITEBACK = True


def dram_bus_bytes(dram_bytes, wb_bytes, blocks, sms):
    """The bus's floor under the dram term, in that term's units (bytes at one SM's share of the DRAM bandwidth,
    summed over the grid: what the term divides among the tiles of the busy SMs): the kernel's own DRAM bytes
    (dram_bytes, at the stream rate) and the write-back (wb_bytes, the write-back's time at the stream rate) all
    cross the one bus, so the busiest SM's DRAM time is at least (dram_bytes + wb_bytes) / the whole bandwidth.
    The flush's dirty lines are written back by the L2 and the memory controllers, not through the SMs' ports, so
    the write-back takes bus time, not an SM's share: the dram term is max(the SM's own bytes at its share of the
    bandwidth and its Little's-law fraction, this floor), and the write-back costs a kernel only where the bus is
    its limit. Where the grid keeps every SM busy and its loads keep the bus full the floor is the reads plus the
    whole write-back; a grid of B < sms blocks, or one whose loads are too few in flight to fill the bus, leaves
    bus time free beside its reads, which the write-back fills first. Returns (dram_bytes + wb_bytes) B / sms."""
    dram_bytes, wb_bytes, blocks = (np.asarray(x, float) for x in (dram_bytes, wb_bytes, blocks))
    busy = np.clip(blocks, 1.0, sms)
    return (dram_bytes + wb_bytes) * busy / sms


def flush_writeback_us(dram_bytes, us_by_mib):
    """Microseconds a kernel's DRAM traffic takes beyond its bytes at the stream rate because it starts behind
    the timing's flush: the flush writes twice the L2 (validate, bench and calibrate time every launch so), which
    leaves every L2 line dirty, and each line a kernel brings into the L2 evicts one of them, written back to DRAM
    over the same bus its reads use. Measured on the H200 as whole-kernel DRAM reads of S MiB, timed after the flush
    and after the flush read back (every dirty line already written back): 0.48, 1.22, 3.1, 5.73, 7.84 and 7.84 us
    more at 2, 8, 32, 64, 128 and 512 MiB (benchmarks/dram_stream.py --flush dirty / clean and --writeback,
    results/archive/dram-stream-{dirty,clean}-20261201-h200.txt). It grows with the lines read up to about the L2's
    60 MiB of dirty lines and stays there, and it is less than writing those lines back at the stream rate (13.7 us):
    part of the write-back overlaps the reads. `us_by_mib`: {MiB: us} (memory.flush_writeback_us_by_MiB),
    interpolated in log2 of the MiB, held at the largest size, and falling linearly to 0 at no bytes below the
    smallest; None: 0 (nobody measured it). The H100's table, measured the same way, grows to 9.0-9.1 us at 128-512
    MiB (devices/h100-sxm.toml). dram_bytes: the kernel's DRAM reads (predict.traffic: A and B with the L2's reuse),
    every one a line brought into the L2; its C stores evict dirty lines too, but their write-back is already the
    C bytes the dram term charges (without the flush a stored line would stay in the L2). Charged as DRAM time: the
    dram term, not the other pipes, so it costs a kernel only as far as its DRAM traffic binds (a compute-bound
    kernel's write-back runs under its compute), and as bus time, not an SM's share (dram_bus_bytes). Charged
    only with FLUSH_WRITEBACK (on)."""
    if not us_by_mib:
        return np.zeros(np.shape(dram_bytes))
    mib = np.asarray(dram_bytes, float) / 2**20
    k0 = min(us_by_mib, key=float)  # the smallest size measured
    first = float(k0)
    below = mib / first * float(us_by_mib[k0])
    return np.where(mib < first, below, interp_log2(us_by_mib, np.maximum(mib, first)))


def one_wave(blocks, blocks_per_wave):
    """Whether every block of the grid runs at once (the rule of one_wave_latency)."""
    return np.asarray(blocks) <= np.asarray(blocks_per_wave)


def tile_line_bytes(bm, bn, bk):
    """Bytes of the whole 128-byte L2 lines one k-tile's loads touch: A's bm rows of bk floats (row-major
    M x K) and B's bk rows of bn floats (row-major K x N), each row segment aligned to its own length:
    (bm * ceil(4 bk / 128) + bk * ceil(4 bn / 128)) x 128, against the tile's (bm + bn) * bk * 4 bytes
    of sectors. With bk = 8 an A row is one 32-byte sector of its line: tiled_2d's 128 x 128 x 8 tile
    touches 160 lines (128 of A, 32 of B) for 8 KB, where 8 contiguous KB are 64 lines."""
    line = WAVEFRONT_BYTES
    return line * (bm * np.ceil(FLOAT * bk / line) + bk * np.ceil(FLOAT * bn / line))


def lockstep_load_cycles(b, lockstep_bytes, l2_bpc_sm):
    """What the unused sectors of a lone block's lines add to its load phase when every SM's block loads
    at once: lockstep_bytes (the lines' bytes less the tile's, times the share of the SMs that load
    together; see tile_cycles) at the SM's share of the L2 bandwidth; 0 with two or more blocks per SM.

    The L2 moves a line for a warp that wants one of its sectors at about the cost of the whole line.
    Measured on the H100 (benchmarks/tile_lines.py; a lone 8-warp block per SM, every SM loading, from
    the L2): tiled_2d's tile (160 lines for 8 KB) exposes 798-970 cycles with float4 loads against
    318-326 for 8 contiguous KB (results/archive/tile-lines-20261124-h100-sxm-3.txt and -4.txt, two
    GPUs): 5.0-6.7 cycles per extra line, 3.0 where A's rows are 2 KB apart instead of 16 KB (the
    sharing table of -4); a 256 x 8 A tile (288 lines for 12 KB) 2.7-2.8 per extra line. The term's
    rate, the L2 share (128 B / 28 B per clock = 4.6 cycles per line on the H100 at 7.3 TB/s), lies in
    that range; the L2's address mapping, which makes 16 KB-strided rows dearer and also slows a
    strided tile of whole lines (128 x 32 A: 1,024-1,232 cycles against 435-487 for 32 contiguous KB),
    is not modelled. Two blocks per SM are left to the calibrated share X of tile_cycles: a round of both
    blocks' 160-line tiles exposes 476-1,130 cycles (against 798-970 for one lone block's), and
    tiled_2d_float4's default, two such blocks per SM, is predicted within 0.2 % at 4096 without the term."""
    return np.where(np.asarray(b) == 1, np.asarray(lockstep_bytes, float) / l2_bpc_sm, 0.0)


# ---- time per k-tile -----------------------------------------------------------------------
@dataclass(frozen=True)
class TileWork:
    """One block's work per k-tile (arrays over configs): warp FFMAs and other warp instructions,
    L1TEX wavefronts, L2 / DRAM / local bytes (DRAM's as the stream rate would take them: the bytes over
    the share of that rate they get, TrafficStage.dram_rate), where the local frames live (`local_level`: 1 L1, else
    minus the share only DRAM holds), warps per block, average global-load latency (cycles), kind
    (0 one element per thread, 1 tiled, 2 tiled with prefetch), the latency a one-element
    kernel's k step exposes and the k steps it waits once for (load_steps: exposed_k is
    (mem_latency + load_steps x the FFMA latency) / load_steps)."""

    ffma: np.ndarray
    other: np.ndarray
    smem_wavefronts: np.ndarray
    l2_bytes: np.ndarray
    dram_bytes: np.ndarray
    local_bytes: np.ndarray
    local_level: np.ndarray
    warps: np.ndarray
    mem_latency: np.ndarray
    kind: np.ndarray
    exposed_k: np.ndarray
    local_store_share: np.ndarray = 0.5  # the share of local_bytes that are stores (STL): the binary's loop, else half
    dram_bus_bytes: np.ndarray = 0.0  # the bus's floor under the dram term (dram_bus_bytes), in dram_bytes' units
    load_steps: np.ndarray = 4.0  # one-element kernels: k steps a warp waits once for (predict.one_element_steps)


@dataclass(frozen=True)
class SMRates:
    """Per-SM rates in SM cycles: issue slots per clock (schedulers x issue), FP32 lanes, shared-memory
    bytes per clock, the SM's share of L2 and DRAM bytes per clock, the measured L2->SM port (None:
    not measured) and the shared-memory latency."""

    schedulers: float
    lanes: float
    smem_bpc: float
    l2_bpc: float
    dram_bpc: float
    port_bpc: Optional[float]
    smem_latency: float


@dataclass(frozen=True)
class Fractions:
    """Achievable fraction of each ceiling by Little's law (arrays over configs)."""

    fma: np.ndarray
    smem: np.ndarray
    l2: np.ndarray
    dram: np.ndarray


# a prefetched tile's lines wait behind the block's own shared loads in the L1 data stage (data_stage_wait), charged
# where the load-use window applies (predict.window_applies)
DATA_STAGE_WAIT = True


def data_stage_wait(return_lines, busy):
    """Cycles a prefetched tile's last line arrives later than through an idle L1 data stage. A global load's data
    enter the register file through the L1TEX data stage, one wavefront per line its warp touches
    (predict.tile_load_lines, ldg_returns), the same stage that serves the shared loads, one wavefront per clock
    (the model's shared pipe). A single-buffered block waits for its tile with nothing else in the stage: that is
    the case calibrate's tile loop measures (Figures.tile_exposure) and the port burst stands for. A block that
    prefetches into registers gets its tile back while its warps run the k-tile's shared loads, which keep the stage
    busy a share `busy` of its clocks (their wavefronts over the compute phase, less the tile's own lines). Served as
    they come, the tile's lines get the share the shared loads leave: `return_lines` lines take
    return_lines / (1 - busy) clocks instead of return_lines, so the last arrives return_lines * busy / (1 - busy)
    later; where both wait the stage takes them in turn, so the lines get at least half of it and arrive at most
    return_lines later (busy of a half or more). Nothing here is fitted: the lines come from the binary's load
    pattern and the busy share from the replayed compute phase and the bank-conflict simulation.
    Measured: double_buffer's default alone on each of 16 SMs of the H200 at 512 x 512 x 1024 after validate's flush
    waits 151-167 cycles a k-tile at the shared stores that take its next tile (Nsight Compute's PC sampling,
    docs/model.md "A first touch's wait, sampled"), where the first touch (770 cycles), its port burst and the unused
    sectors fit in the FFMAs before the stores (984 cycles); its 160 lines behind a stage its shared loads keep busy
    over half the time arrive 160 cycles later, which leaves 111 cycles exposed (docs/model.md, "The tile's lines
    behind the shared loads")."""
    share = np.clip(np.asarray(busy, float), 0.0, 0.5)
    return np.asarray(return_lines, float) * share / (1.0 - share)


def block_stage_wait(return_lines, t_smem, b, compute):
    """data_stage_wait of one block's `return_lines` lines where b blocks' shared loads take t_smem cycles of the
    data stage in a compute phase of `compute` cycles: the busy share is their wavefronts less the tile's own lines
    over the compute phase (what tile_cycles adds to a prefetching block's load phase, and predict reports)."""
    lines = np.asarray(return_lines, float)
    return DATA_STAGE_WAIT * data_stage_wait(lines, (t_smem - b * lines) / np.maximum(compute, 1.0))


# a one-element kernel's warps queue at the L1 between their waits (one_element_queue); False: the larger of the two
ONE_ELEMENT_QUEUE = True


def one_element_queue(t_lat, t_smem, warps, steps):
    """SM cycles a k step of a one-element kernel (naive, coalesced) whose warps both wait out their loads' latency
    and queue for the L1's data stage: the exact mean-value analysis of a closed network of `warps` customers (the
    SM's resident warps) that each, once a batch of `steps` k steps, take D cycles of the data stage (their lines:
    steps x t_smem / warps, one wavefront a clock, t_smem being all warps' lines of a k step) and spend the rest of
    an unloaded batch, Z = steps x t_lat - D, issuing and waiting for their loads (t_lat: the latency-bound cycles of
    a k step, issue plus the exposed latency). With the station idle a batch takes D + Z = steps x t_lat; as it
    fills, a warp's loads wait behind the others' lines: R_n = D (1 + Q_{n-1}), X_n = n / (R_n + Z), Q_n = X_n R_n
    for n = 1 .. warps, and a batch takes warps / X. The result lies between max(t_lat, t_smem) and their sum,
    furthest above the larger where the two are equal; far from there it is the larger. Nothing is fitted: D and Z
    come from the same lines and latency the two terms use. (The analysis takes the service times as exponential;
    the data stage's are fixed, whose queues are shorter, so it tends to overstate the wait.) Measured on the
    lent H200 (results/20261202-222500-h200-source-kernels, the catalogue's naive at M = 1-8, docs/model.md
    "One-element kernels: the L1 queue between the waits"): at 4x4096x4096, 32 warps an SM, 5 lines a warp and
    k step (160 cycles of lines against 172 of latency) the kernel takes 207 cycles a k step."""
    t_lat, t_smem = np.asarray(t_lat, float), np.asarray(t_smem, float)
    warps = np.broadcast_to(np.maximum(np.ceil(np.asarray(warps, float)), 1.0), t_lat.shape)
    n_max = int(np.max(warps)) if warps.size else 0
    steps = np.broadcast_to(np.maximum(np.asarray(steps, float), 1.0), t_lat.shape)
    D = steps * t_smem / warps
    Z = np.maximum(steps * t_lat - D, 0.0)
    q = np.zeros_like(t_lat)
    x = np.zeros_like(t_lat)
    for n in range(1, max(n_max, 1) + 1):
        live = n <= warps
        r = D * (1.0 + q)
        xn = n / np.maximum(r + Z, 1e-12)
        x = np.where(live, xn, x)
        q = np.where(live, xn * r, q)
    out = warps / np.maximum(x, 1e-30) / steps
    return np.where(np.isfinite(out) & (x > 0), np.maximum(out, np.maximum(t_lat, t_smem)), np.maximum(t_lat, t_smem))


# the guarded edge body's loop charged its instruction fetch, its blocks apart (predict._edge_extra, Figures.fetch_rate's
# apart), measured with benchmarks/lone_fetch.py --spread --groups on the H100 and scored on the H100 and H200 shape
# runs (docs/model.md, "The fetch of blocks apart"); off, the edge loop is charged its replay alone
EDGE_FETCH = True


def tile_cycles(b, work: TileWork, rates: SMRates, f: Fractions, *, c_ffma, hide=1.0, fetch_rate=np.inf, overlap=0.0,
                tile_exposure: Optional[Callable] = None, scheduled=None, lockstep_bytes=0.0,
                scheduled_latency=None, sms_share=1.0, store_bpc=None, return_lines=0.0, queue_cycles=0.0, landing=0.0):
    """SM cycles for b resident blocks to each finish one k-tile; the largest term bounds it.

    fma: b*FFMA*c/(lanes/32)/f_fma (c = issue cycles per FFMA: 1 from the datasheet, peak/measured
    outer-product rate after calibration)   issue: b*(FFMA*c + other)/min(schedulers, resident warps)
    and never faster than the SM can fetch the instructions: b*(FFMA + other)/fetch_rate, the rate
    calibrate measures for a loop of the tile loop's code size at this many warps (matters only
    once the unrolled loop outgrows the instruction caches; no limit from the datasheet; a warp alone
    on its scheduler is limited instruction by instruction in the simulated loop: model.schedule)
    smem: b*wavefronts/(B per clk/128)/f_smem   l2, dram: b*bytes/(per-SM bandwidth share)/f
    local: spill/local-array traffic where the frames live: L1 (local_level = 1) at the L1 rate;
    otherwise the L2 holds L2 bytes / all SMs' frames of them, DRAM the rest (local_level = minus
    the DRAM share), each at the SM's share of its bandwidth among the SMs that run blocks (`sms_share`:
    all SMs / those SMs in a grid of one partial wave, else 1), and never faster than the SM's own paths, where both were
    measured: its loads (LDL) through the L2->SM port, its stores (STL) at the SM's store rate
    (`store_bpc`, memory.store_bytes_per_clock_per_sm), one after the other; `work.local_store_share` of
    the bytes are stores. With every SM running blocks the share is the slower (about 27 B per clock per
    SM on the H100 against 120 in and 28.8 out); a grid that leaves SMs idle gives the rest more. Measured
    with one block per SM on the H100 (docs/model.md, "Local frames beyond L1: the SM's own paths")
    latency: resident blocks share the schedulers round-robin, which keeps them in lockstep: they
    all request their next tile at once, so a block without prefetch waits the load latency plus
    the transfer of the SM's whole burst after its compute phase max(issue, smem); with double
    buffering only what outlasts the compute phase is exposed: the share `hide` of the compute
    phase that the binary issues after the loads (measure.sass); a ring of s buffers (async_pipeline)
    has s - 1 tiles in flight: the copies issued in one k-tile are first used s - 1 k-tiles later, so `hide` is
    that share of the phase that issues them plus s - 2 whole phases (2.8, not 3 x 0.8 = 2.4, for a four-stage ring
    whose copies come after a fifth of its phase). Nothing couples different SMs,
    so one SM's burst arrives through its own L2->SM port (`port_bpc`, measured by perfmodel
    calibrate), not at its 1/SMs share of the L2 bandwidth; the average rate stays bounded by the
    share (the l2 term). Without a measured port the share is used (datasheets do not give it).
    The compute phase is max(issue, fma, smem) + overlap * min(issue, smem) (fma: where a warp FFMA holds
    its scheduler's pipe longer than its issue clock, the 16-lane schedulers of Volta, Turing and GA100,
    the load phase of a single-buffered block cannot hide under it); `overlap` is the share of the
    smaller pipe time that the resident warps cannot run under the larger one (Figures.pipe_overlap:
    about 0.6 with one warp per scheduler, 0.2 with two, 0.05 with four or more; 0 without a calibration).
    With calibrate's single-buffered tile loop (`tile_exposure`, Figures.tile_exposure) the load phase
    is one block's: latency + its own tile through the port (the loop exposes the same ~420 cycles
    with 1-4 blocks per SM: the co-resident blocks' bursts overlap their latency instead of queueing
    behind it), and a single-buffered kernel exposes the measured share X(b, compute / phase) of it
    (1 with one or two blocks; 0.8 / 0.7 with three / four and long compute phases, as the blocks drift
    apart). DRAM enters through the latency mix and, for the average, through the dram term: the same
    loop streaming a DRAM-resident region exposes 464 cycles with one block (not the pointer chase's
    +317) and about twice that with 3-4 (docs/model.md).
    scheduled (per config, NaN where unknown): the compute phase simulated from the binary's k-tile loop
    (model.schedule: issue order, FFMA rate, fragment-load latency, pipe queueing and the barrier, all
    from the SASS and measured figures). Where given it replaces max(issue, smem) + overlap * min and
    the two shared-memory latencies at the tile boundary (store -> barrier -> first fragment load),
    which the simulated loop already contains.
    lockstep_bytes (per config): where one block runs per SM (b = 1) and the SMs' blocks started
    together (a grid of lone blocks, or one partial wave), the bytes of the lines one block's tile touches
    beyond its sectors (tile_line_bytes less the tile's bytes) times the share of the SMs that load at
    once: nothing drifts such blocks apart, so every SM asks the L2 for its lines at the same moment and
    the load phase grows by lockstep_load_cycles.
    scheduled_latency (per config, NaN where unknown): the same loop replayed as one whole pass with its
    global loads' latency (the average, mem_latency) in the binary's order (model.schedule with
    global_latency): where its warps wait longer than compute + exposed, because the loads and the
    instructions that use them lie close together (scalar loads each stored to shared memory soon after, a
    prefetch the compiler sank, spill reloads between them) and one or two warps a scheduler have nothing
    else to issue, the latency term is that replay, and exposed what it adds to the compute phase. The
    closed form's one load phase per k-tile is the best case of the same binary.
    return_lines (per config): where the load-use window applies (predict.window_applies), the lines of one block's
    tile, which come back behind the block's own shared loads: a prefetching block's load phase grows by
    data_stage_wait (0 elsewhere: other blocks' warps issue in the wait, and a single-buffered block's stage is idle).
    queue_cycles (per config): where one block runs per SM, what its scalar tile loads wait beyond latency + burst
    as the L1 takes an SM's loads that miss it at a limited rate (load_queue_cycles), added to the load phase.
    landing (per config): what a ring of cp.async copies waits for its tile to land from DRAM beyond the load phase
    (ring_landing_extra), added to the load phase its prefetch hides (kind 2; 0 elsewhere).
    kind: 0 one element per thread, 1 tiled, 2 tiled with prefetch.
    Returns (cycles per term stacked, exposed latency, X: the measured share of the load phase a
    single-buffered kernel exposes, NaN where it does not apply)."""
    sched, lanes, smem_bpc, l2_bpc_sm, dram_bpc_sm = rates.schedulers, rates.lanes, rates.smem_bpc, rates.l2_bpc, rates.dram_bpc
    port_bpc, smem_latency = rates.port_bpc, rates.smem_latency
    f_fma, f_smem, f_l2, f_dram = (np.maximum(x, 1e-12) for x in (f.fma, f.smem, f.l2, f.dram))
    ffma_block, other_block, smem_wavefronts_block = work.ffma, work.other, work.smem_wavefronts
    l2_bytes_tile, dram_bytes_tile, local_bytes_tile, local_level = work.l2_bytes, work.dram_bytes, work.local_bytes, work.local_level
    warps_block, mem_latency, kind, exposed_k = work.warps, work.mem_latency, work.kind, work.exposed_k
    slots = np.minimum(sched, b * warps_block)
    t_fma = b * ffma_block * c_ffma / (lanes / 32.0) / f_fma
    t_fetch = b * (ffma_block + other_block) / fetch_rate
    t_issue = np.maximum(b * (ffma_block * c_ffma + other_block) / slots, t_fetch)
    t_smem = b * smem_wavefronts_block / (smem_bpc / WAVEFRONT_BYTES) / f_smem
    t_l2 = b * l2_bytes_tile / l2_bpc_sm / f_l2
    # the SM's own bytes at its share and Little's-law fraction, and at least what the whole bus carries beside
    # them (dram_bus_bytes: the flush's write-back; it leaves the term as it was where nothing is written back)
    t_dram = np.maximum(b * dram_bytes_tile / dram_bpc_sm / f_dram, b * work.dram_bus_bytes / dram_bpc_sm)
    miss = np.clip(-np.asarray(local_level, float), 0.0, 1.0)  # share of the frames only DRAM holds
    beyond = b * local_bytes_tile * ((1.0 - miss) / l2_bpc_sm + miss / dram_bpc_sm)
    if store_bpc is not None and port_bpc is not None:  # the SM's own load and store paths, and its share among the busy SMs
        st = np.asarray(work.local_store_share, float)
        beyond = np.maximum(beyond / np.maximum(sms_share, 1.0),
                            b * local_bytes_tile * ((1.0 - st) / port_bpc + st / store_bpc))
    t_local = np.where(local_level > 0, b * local_bytes_tile / smem_bpc, beyond)
    # the FP32 pipe bounds the compute phase too: on 16-lane schedulers (Volta, Turing, GA100) a warp FFMA
    # holds it two clocks, so t_fma can exceed t_issue; elsewhere the issue of the same FFMAs binds first
    compute = np.maximum(np.maximum(t_issue, t_fma), t_smem) + overlap * np.minimum(t_issue, t_smem)
    sim = np.full_like(compute, np.nan) if scheduled is None else np.broadcast_to(np.asarray(scheduled, float), compute.shape)
    has_sim = np.isfinite(sim)
    compute = np.where(has_sim, np.maximum(np.maximum(sim, t_fetch), t_smem), compute)
    burst = t_l2 if port_bpc is None else b * l2_bytes_tile / port_bpc
    lockstep = lockstep_load_cycles(b, lockstep_bytes, l2_bpc_sm) + np.where(np.asarray(b) == 1, queue_cycles, 0.0)
    load_phase = mem_latency + np.maximum(burst, t_dram) + lockstep
    single, share = load_phase, np.nan
    if tile_exposure is not None and port_bpc is not None:
        # measured by calibrate's single-buffered tile loop (Figures.tile_exposure): the resident
        # blocks' bursts do not add up (one block's burst through the port is what shows, from L2 or
        # DRAM alike; DRAM bandwidth bounds only the average, the dram term), and b blocks expose the
        # share X(b, compute / phase) of one block's phase
        load_phase = mem_latency + l2_bytes_tile / port_bpc + lockstep
        share = tile_exposure(b, compute / np.maximum(load_phase, 1.0))
        single = share * load_phase
    # a prefetched tile's lines behind the block's shared loads in the L1 data stage (data_stage_wait; return_lines: its
    # lines where the load-use window applies, else 0)
    pf_phase = load_phase + landing + block_stage_wait(return_lines, t_smem, b, compute)
    exposed = np.where(kind == 0, exposed_k,
                       np.where(kind == 2, np.maximum(0.0, pf_phase - hide * compute), single)
                       + np.where(has_sim, 0.0, 2 * smem_latency))
    t_lat = np.where(kind == 0, t_issue, compute) + exposed
    one = np.asarray(kind) == 0
    if ONE_ELEMENT_QUEUE and np.any(one):  # one-element kernels: their warps also queue at the L1 (one_element_queue)
        one = np.broadcast_to(one, t_lat.shape)
        pick = lambda x: np.broadcast_to(np.asarray(x, float), t_lat.shape)[one]  # noqa: E731
        q = one_element_queue(t_lat[one], pick(t_smem), pick(b) * pick(warps_block), pick(work.load_steps))
        # the wait goes to the larger of the two terms, so the bound stays the one that dominates
        lat_wins = t_lat[one] >= pick(t_smem)
        t_lat, exposed = t_lat.copy(), np.broadcast_to(exposed, t_lat.shape).copy()
        t_smem = np.broadcast_to(np.asarray(t_smem, float), t_lat.shape).copy()
        exposed[one] = np.where(lat_wins, q - pick(t_issue), exposed[one])
        t_lat[one] = np.where(lat_wins, q, t_lat[one])
        t_smem[one] = np.where(lat_wins, t_smem[one], q)
    if scheduled_latency is not None:  # the binary's own order of loads and their uses, where it waits longer
        sl = np.broadcast_to(np.asarray(scheduled_latency, float), t_lat.shape)
        longer = np.isfinite(sl) & (kind > 0) & (sl > t_lat)
        exposed = np.where(longer, sl - compute, exposed)
        t_lat = np.where(longer, sl, t_lat)
    share = np.where(kind == 1, share, np.nan)
    return np.stack([t_fma, t_issue, t_smem, t_l2, t_dram, t_local, t_lat]), exposed, share


TERMS = ("fma", "issue", "smem", "l2", "dram", "local", "latency")
BOUNDS = TERMS + ("fixed",)  # a prediction's bound: a term, or fixed costs (launch, first tiles)


def waves(blocks, blocks_per_sm, sm_count, refill=1):
    """Full waves of sm_count*blocks_per_sm blocks, and the tail: the busiest SM's blocks in the
    last partial wave.

    A grid of less than one wave is spread over the SMs as it launches: ceil(remainder / SMs) on the
    busiest. The blocks after a full wave go instead to the slots that free first, and the blocks that
    shared an SM and started together free theirs together: the SM takes `refill` blocks at once (the
    blocks that fit in the warps an SM takes at a refill, Compute.refill_warps_per_sm; 1 where that was not
    measured), so a short last wave runs `refill` blocks to an SM on fewer SMs, at most the b resident
    blocks and the blocks left, and never fewer than the spread. Blocks free their slots together only while
    they run in step: after the first full wave, or with at most two resident an SM; three or more drift
    apart over later waves (as the tile loop's exposed share X, Figures.tile_exposure, measures them), free
    their slots one at a time, and the blocks after them spread again. Measured on the H100
    (benchmarks/block_dispatch.py, results/archive/block-dispatch-20261128-h100-sxm*): after one full wave
    of blocks of 128 threads, two to four resident per SM, the 33 to 198 blocks left went two to an SM,
    and with two resident the grid took two waves' time whatever their number, after two and three full
    waves as well; with three or four resident, after two full waves, one to an SM; blocks of 256 and 512
    threads went one to an SM; of 32, 64 and 96 threads up to eight warps' worth."""
    per_wave = sm_count * blocks_per_sm
    full = np.floor(blocks / per_wave)
    rem = blocks - full * per_wave
    spread = np.ceil(rem / sm_count)
    packed = np.minimum(np.minimum(blocks_per_sm, np.maximum(refill, 1)), rem)
    in_step = (full == 1) | (np.asarray(blocks_per_sm) <= 2)  # blocks that still free their slots together
    tail = np.where((full >= 1) & in_step, np.maximum(spread, packed), spread)
    return per_wave, full, tail


def tile_loop_cycles(ktiles, w, cycles_full, cycles_tail):
    """The k-tile loops of all waves: each full wave's k-tiles at the largest term with the full
    resident blocks, the tail wave's at the largest with its blocks. cycles_*: (terms, ...) arrays;
    the result has their shape less the first axis (draws of model.uncertainty keep a draw axis)."""
    return ktiles * (w.full_waves * cycles_full.max(axis=0) + (w.tail > 0) * cycles_tail.max(axis=0))
