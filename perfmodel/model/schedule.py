"""Issue-scheduler simulation of a binary's k-tile loop: the compute phase from the SASS (CPU only).

The closed-form compute phase, max(issue, smem) + overlap * min(issue, smem), knows how many
instructions a tile issues but not in which order. Two binaries with the same counts can differ by
10 %: nvcc places the next k step's fragment loads (LDS) further ahead of their first use in one
than in the other (benchmarks/lds_distance.py), and ncu shows the difference as short-scoreboard
stalls (results/ncu-top10-20261122-h100-sxm-summary.md). This module replays the loop's dependency
program (measure.sass.loop_program) on one warp scheduler, with nothing fitted:

- W warps, the busiest scheduler's share of the resident warps (ceil(b * warps per block / 4));
  the other schedulers run the same program in step, so one stands for the SM.
- One instruction per cycle per scheduler; an FFMA takes `c_ffma` cycles (calibrate's outer-product
  FFMA rate at this many resident warps; 1 from the datasheet).
- An FFMA holds its scheduler's FP32 pipe `ffma_pipe` x `c_ffma` cycles: 32 / the scheduler's FP32
  lanes (2 on the 16-lane schedulers of Volta, Turing and GA100, whose warp FFMA runs as two half-warps;
  1 from Maxwell to Pascal and on GA10x, AD10x and Hopper). The next FFMA issues once the pipe is free;
  other instructions issue in between. With a 1-clock pipe this never binds (the issue does first).
- A warp issues its next instruction once every producer it depends on has delivered: fixed-latency
  producers after `fixed_latency` cycles (the dependent-FFMA latency), shared and local loads after
  their latency once the shared-memory/L1 pipe has served them.
- The pipe serves one 128 B wavefront per clock per SM, shared by the resident warps: a wavefront
  holds it `share` cycles from one scheduler's view, the resident warps over the busiest scheduler's W
  (at most the schedulers: with 5 warps on 4 schedulers, 2.5, not the 4 of 2 warps on each). Wavefronts per shared load and store
  come from the bank-conflict simulation (smem_banks): each shared load its own where the loads of A's and
  B's fragments feed different numbers of FFMAs (lds_split), else the mean; global and local accesses count
  one per 4-byte word of width (a coalesced warp access: 128 B per word).
- Global loads deliver at once here: their latency is the load phase, which the model charges
  separately (terms.tile_cycles), so the simulation is the compute phase only.
- Scoreboard waits (where the program carries its control codes' scoreboard fields, `sb`): an
  instruction waiting on a scoreboard waits for every global load pending on it, not only for the
  producers of its registers (scoreboard_deps). With a global latency (the edge body's replay) an FFMA
  whose fragment's shared load shares a scoreboard with the next tile's loads waits for them.
- A barrier holds a warp until the warps of its block on this scheduler have reached it.
- A warp's next instruction waits out the stall count the compiler wrote into this one's control
  code (nvdisasm -hex; 1 where the program carries none): with one warp per scheduler that is the
  "wait" stall ncu reports (0.11-0.64 cycles per instruction on the loops of
  results/archive/ncu-fewwarps-20261123-h100-sxm.csv against 0.12-0.73 measured); other warps issue
  in those cycles.
- Ready warps issue loose round-robin (the least recently issued first), as measured on the H100:
  the warps of one scheduler running the same loop finish together, not one after another as
  greedy-then-oldest issue would have them (benchmarks/warp_policy.py,
  results/archive/warp-policy-20261124-h100-sxm.txt).
- Register banks (where the generation has `register_banks`, and the program its `reads`): each bank
  of the scheduler's register file supplies one warp-wide operand per clock; an instruction's reads
  (measure.sass.register_reads: its source registers by bank, less those the reuse cache serves) hold
  their bank that many clocks, and an instruction issues no earlier than one clock (BANK_SLACK) before
  every bank it reads is free. An FFMA whose three registers share a bank takes its bank three clocks
  where its issue takes one: the loss of SGEMM's three-register outer products against FP32 peak
  (benchmarks/ffma_loops.py, docs/model.md "The FFMA rate from the binary"). With LDS_WRITEBACK (off in
  the model) a shared load's data also take the ports, one clock per register, its width split over the
  two banks, charged when it issues: calibrate's shared-memory-fed loops run 5-14 % below the replay
  without that charge and within 10 % of it with it (docs/model.md, "Calibrate's loops timed long enough").
- The queue in front of the pipe is unbounded (its depth is not measured): a load waits there, its
  consumers wait for it, but issue does not; a pass is never shorter than the pipe's work in it.
- A global load's data take the pipe one wavefront per line its warp touches (predict.ldg_returns);
  what that adds beyond the load's width (`returns`: wavefronts per warp and pass) counts in the pipe's
  work of the pass, not in the queue at issue, since the data come back later.
- A warp alone on its scheduler (W = 1) issues from a loop that outgrows the instruction caches at most
  one instruction per `fetch_interval` clocks (Figures.lone_fetch_interval, calibrate's fetch table at one
  warp per scheduler): an instruction waits the longer of its own wait and the fetch, the two overlapping
  (benchmarks/lone_fetch.py); with other warps on the scheduler the fetch only caps the SM's issue rate
  (terms.tile_cycles), so the replay adds nothing there.

Returns cycles per k-tile in steady state (passes 2..P of the loop)."""
from __future__ import annotations

from functools import lru_cache
from typing import Optional, Sequence

import numpy as np


BANK_SLACK = 1.0  # clocks an instruction may issue before the banks it reads are free (docs/model.md)
# shared loads' register writes charged to the register banks when they issue: measured on calibrate's loops and
# not adopted (docs/model.md, "Calibrate's loops timed long enough"); benchmarks/ffma_loops.py replays with it
LDS_WRITEBACK = False
# the compute phase's replay with its blocks at evenly spread points of the loop where three or more are resident
# (simulate's `apart`; the replays with the global loads' latency, the edge body's and the latency term's, stay in
# step): on since it took the H100 and H200 shape runs closer (docs/model.md, "Blocks apart in the replay")
BLOCKS_APART = True
# the latency term's replay (the loop with its global loads' latency, terms.tile_cycles' scheduled_latency) with its
# blocks apart as well, where three or more are resident: evaluated and not adopted (docs/model.md, "The latency
# term's replay with the blocks apart"); the edge body's replay stays in step either way
LATENCY_APART = False


def passes_for(n: int) -> int:
    """Loop passes to simulate: enough for a steady state, fewer for very long unrolled loops."""
    return 4 if n <= 4000 else 3


def simulate(program: dict, warps: int, warps_per_block: int, c_ffma: float, smem_latency: float,
             local_latency: float, fixed_latency: float, lds_wavefronts: float, sts_wavefronts: float,
             share: float, passes: int | None = None, global_latency: float = 0.0, banks: int = 0,
             ldg_wavefronts: float = 0.0, ffma_pipe: float = 1.0, returns: float = 0.0,
             fetch_interval: float = 0.0, in_step: bool = False, lsu_pipe: float = 1.0, copy_clocks: tuple = (),
             apart: bool = False) -> float:
    """Cycles one pass of the loop takes on a scheduler holding `warps` warps (see the module doc).
    global_latency > 0: a global load's consumers wait that long after it issues (the edge-path term
    uses this to see how the binary orders its loads; the compute phase keeps 0, its load phase being
    charged by terms.tile_cycles). banks: the register banks of a scheduler (0: no register-bank term;
    programs without `reads` have none either). ldg_wavefronts: what each global load (G) occupies the
    pipe for (predict.ldg_wavefronts; 0: its width in words). ffma_pipe: clocks an FFMA holds the
    scheduler's FP32 pipe per issue clock (fp32_pipe_clocks). returns: pipe wavefronts per warp and pass
    beyond the instructions' own (the global loads' lines beyond their width: predict.ldg_returns).
    fetch_interval: the fewest clocks between a lone warp's (W = 1) instructions that the fetch allows
    (Figures.lone_fetch_interval; 0: no limit; ignored for W > 1). in_step: the scheduler's warps replayed
    in step, as one warp that issues each instruction once for each of them (its issue, FFMA pipe, register
    reads and pipe wavefronts times W), so that every wait of one is a wait of all; not the model's rule
    (benchmarks/lds_waits.py --replay; docs/model.md, "Where the model misses": split_k 64 x 256 with bk = 16
    on the H200). lsu_pipe: the fewest clocks a memory instruction holds the pipe (lsu_pipe_clocks; 1: a
    wavefront's). copy_clocks: for a loop whose global loads are cp.async copies (LDGSTS: async_pipeline's),
    (words a lane, clocks) pairs: a copy of that width holds the pipe at least those clocks
    (memory.async_copy_clocks_by_bytes, measured by benchmarks/ldgsts_rate.py); (): its width, as a load's."""
    cls, wide, deps = program["cls"], program["wide"], program_deps(program)
    n = len(cls)
    if n == 0:
        return 0.0
    P = passes or passes_for(n)
    W = max(int(warps), 1)
    lock = W if in_step else 1  # warps that issue each instruction together
    if lock > 1:
        W = 1
    per_block = max(1, min(int(warps_per_block), W))
    cost = [lock * (c_ffma if k == "F" else 1.0) for k in cls]
    hold = [float(x) for x in program.get("stall") or [1] * n]  # control-code stall counts (1: none read)
    if W == 1 and lock == 1 and fetch_interval > 0:  # the fetch and the warp's own waits overlap: the longer one holds it
        cost = [max(x, fetch_interval) for x in cost]
        hold = [max(x, fetch_interval) for x in hold]
    per_lds = isinstance(lds_wavefronts, tuple)  # each shared load its own wavefronts (lds_split), else one mean
    wf = [lock * ((lds_wavefronts[i] if per_lds else lds_wavefronts) if k == "S" else sts_wavefronts if k == "T" else
                  (ldg_wavefronts if k == "G" and ldg_wavefronts > 0 else float(wide[i])) if k in "GLK" else 0.0)
          for i, k in enumerate(cls)]
    if copy_clocks:  # a cp.async copy holds the pipe the clocks measured for its width, at least its wavefronts
        cc = dict(copy_clocks)
        wf = [max(x, lock * cc[int(wide[i])]) if k == "G" and int(wide[i]) in cc else x for i, (x, k) in enumerate(zip(wf, cls))]
    if lsu_pipe > 1.0:  # a warp's memory instruction takes 32 / load-store units clocks however few its wavefronts
        wf = [max(x, lock * lsu_pipe) if k in "STGLK" else x for x, k in zip(wf, cls)]
    returns = lock * returns
    lat = [smem_latency if k == "S" else local_latency if k == "L" else fixed_latency for k in cls]
    rd = program.get("reads") if banks else None
    if rd and len(rd) == 2 * n and banks == 2:
        r0 = [lock * float(rd[2 * i]) for i in range(n)]
        r1 = [lock * float(rd[2 * i + 1]) for i in range(n)]
    else:
        r0 = r1 = None
    if r0 is not None and LDS_WRITEBACK:  # a shared load's data enter the register file through the same bank
        for i, k in enumerate(cls):       # ports as reads: one clock per register, split over the banks
            if k == "S":
                r0[i] += lock * wide[i] / 2.0
                r1[i] += lock * wide[i] / 2.0
    # per instruction, what issuing it does (0: a latency after issue; 1: a pipe wavefront, done after the
    # pipe's latency; 2: a pipe wavefront, done a global latency after issue; 3: a pipe wavefront, done a
    # fixed latency after issue) and what holds it back (the FP32 pipe, the register banks)
    use_g = global_latency > 0
    how = [(0 if not wf[i] else 1 if k in "SL" else 2 if k == "G" and use_g else 3) for i, k in enumerate(cls)]
    isF = [k == "F" for k in cls]
    isB = [k == "B" for k in cls]
    banked = r0 is not None
    nxt_deps = [deps[(i + 1) % n] for i in range(n)]  # the dependencies of the instruction after i
    bank0 = bank1 = -1e9  # when each bank finishes the reads given to it
    fma_hold = lock * float(ffma_pipe) * c_ffma  # clocks an FFMA keeps the FP32 pipe
    fma_free = -1e9  # when the FP32 pipe takes the next FFMA
    # apart: the blocks of this scheduler's warps start at evenly spread points of the loop (block j of B at
    # j * n / B), as blocks that drifted apart run it; a block's own warps stay together (its barriers)
    blocks_here = -(-W // per_block)
    off = [((w // per_block) * n) // blocks_here if apart and lock == 1 else 0 for w in range(W)]
    done = [[0.0] * ((P + 1) * n) for _ in range(W)]
    pc = list(off)  # absolute instruction index (pass * n + i), from the warp's starting point
    ip = [o % n for o in off]  # pc % n
    ready = [0.0] * W
    last = [-1.0 - w for w in range(W)]
    live = list(range(W))  # warps neither at a barrier nor finished, in order (none left: every one is done, or
    # every remaining one waits at a barrier, which cannot happen with symmetric blocks)
    waiting: dict[int, list[int]] = {}
    pass_end = [[0.0] * P for _ in range(W)]
    sched = 0.0
    pipe = 0.0
    end = P * n
    stop = [o + end for o in off]  # each warp runs P passes from where it starts
    while live:
        best, t_best = -1, float("inf")
        s0 = bank0 - BANK_SLACK
        s1 = bank1 - BANK_SLACK
        for w in live:  # the warp that can issue first (ties: the one that issued longest ago)
            t = ready[w]
            if sched >= t:
                t = sched
            i = ip[w]
            if isF[i] and fma_free > t:
                t = fma_free
            if banked:
                if r0[i] and s0 > t:
                    t = s0
                if r1[i] and s1 > t:
                    t = s1
            if t < t_best - 1e-9 or (t < t_best + 1e-9 and last[w] < last[best]):
                best, t_best = w, t
        w, t = best, t_best
        g = pc[w]
        i = ip[w]
        sched = t + cost[i]
        last[w] = t
        if isF[i]:
            fma_free = t + fma_hold
        if banked:
            x = r0[i]
            if x:
                bank0 = (t if t > bank0 else bank0) + x
            x = r1[i]
            if x:
                bank1 = (t if t > bank1 else bank1) + x
        h = how[i]
        dw = done[w]
        if h:
            x = wf[i]
            start = t if t > pipe else pipe
            pipe = start + x * share
            dw[g] = (start + lat[i] + (x - 1.0) * share if h == 1 else
                     t + global_latency if h == 2 else t + fixed_latency)
        else:
            dw[g] = t + lat[i]
        g += 1
        pc[w] = g
        j = i + 1
        if j == n:
            j = 0
        if (g - off[w]) % n == 0:
            pass_end[w][(g - off[w]) // n - 1] = t
        ip[w] = j
        if g >= stop[w]:
            live.remove(w)
        else:
            r = t + hold[i]  # the warp's next instruction waits out this one's stall count
            for d in nxt_deps[i]:
                e = g - d
                if e >= 0 and dw[e] > r:
                    r = dw[e]
            ready[w] = r
        if isB[i]:
            blk = w // per_block
            group = waiting.setdefault(blk, [])
            group.append(w)
            members = min(per_block, W - blk * per_block)
            if len(group) >= members:
                release = t + 1.0
                for v in group:
                    ready[v] = max(ready[v], release)
                    if v != w and pc[v] < stop[v]:
                        live.append(v)
                live.sort()
                waiting[blk] = []
            elif g < stop[w]:
                live.remove(w)
    if P > 1:  # steady state: from the last warp finishing pass 1 to the last finishing pass P
        span = (max(pe[P - 1] for pe in pass_end) - max(pe[0] for pe in pass_end)) / (P - 1)
    else:
        span = max(pe[0] for pe in pass_end)
    # the simulated queue in front of the pipe has no depth limit (the MIO queue's depth is not measured),
    # so issue never waits for the pipe itself: its throughput bounds the pass instead
    return float(max(span, W * (sum(wf) + returns) * share))


# the scoreboard waits on global loads in the replays (program_deps): on, scored on the H100 and H200 shape runs
# (docs/model.md, "Scoreboards shared by global and shared loads"); off, the register flow alone
SCOREBOARD_WAITS = True


def scoreboard_deps(program: dict, fields: Sequence[Sequence[int]]) -> list[list[int]]:
    """Per instruction of a loop program, the distances back to the global loads it waits for through the
    scoreboards beyond its register flow (program["deps"]). A control code names the scoreboard an
    instruction's result releases and the mask of scoreboards the instruction waits for (measure.sass.
    control_codes, `fields` its [write, read, wait] per instruction); a scoreboard counts, so a wait on it holds
    the warp until every instruction still pending on it is done: an instruction waiting on scoreboard b waits for
    every producer that released b since the last wait on b, whatever registers it wrote. nvcc has six; where a
    loop keeps more loads in flight, global and shared loads share them, and an FFMA that waits for its
    fragment's shared load then also waits for the global loads on that scoreboard, which the register flow
    alone would let arrive during the math. Only global loads (class G) are listed: they are what the replays
    with a global latency (the edge body's, load_use_window's) see wait; the shared loads' own grouping on
    the scoreboards stays the register flow's (the compute phase as calibrated and scored). Distances reach
    into the previous pass, like program["deps"]; only those not in deps are listed."""
    cls, n = program["cls"], len(program["cls"])
    pending: dict[int, list[int]] = {b: [] for b in range(6)}
    out: list[list[int]] = [[] for _ in range(n)]
    for j in range(2 * n):
        i = j % n
        write, _, wait = fields[i]
        ds = set()
        for b in range(6):
            if wait >> b & 1:
                ds.update(j - k for k in pending[b])
                pending[b] = []
        if j >= n:
            own = set(program["deps"][i])
            out[i] = sorted(d for d in ds if d not in own and cls[(j - d) % n] == "G")
        if write < 6:
            pending[write].append(j)
    return out


def program_deps(program: dict) -> list[list[int]]:
    """A loop program's dependencies as the warp waits for them: the register flow (program["deps"]) and, where
    the program carries its control codes' scoreboard fields (`sb`), the scoreboard waits on global loads
    (scoreboard_deps)."""
    sb = program.get("sb")
    deps = program["deps"]
    if not SCOREBOARD_WAITS or not sb or len(sb) != len(deps):
        return deps
    key = program["id"]
    if key not in _SB_DEPS:
        _SB_DEPS[key] = [sorted(set(a) | set(b)) for a, b in zip(deps, scoreboard_deps(program, sb))]
    return _SB_DEPS[key]


_SB_DEPS: dict[str, list[list[int]]] = {}  # program_deps of the programs carrying `sb`, by program id


def program_key(program: dict) -> str:
    """The id the replay caches a program under: its id, marked where the replay takes its scoreboard fields (an
    archive written before programs carried them holds the same loop, the same id, without)."""
    return program["id"] + ("+sb" if SCOREBOARD_WAITS and program.get("sb") else "")


@lru_cache(maxsize=65536)
def _cached(program_id: str, args: tuple) -> float:
    *positional, lsu_pipe, copy_clocks, apart = args  # simulate's arguments up to fetch_interval, then three keywords (in_step stays free)
    return simulate(_PROGRAMS[program_id], *positional, lsu_pipe=lsu_pipe, copy_clocks=copy_clocks, apart=apart)


_PROGRAMS: dict[str, dict] = {}  # loop programs by their id (a digest of the loop's SASS)


def load_use_window(program: Optional[dict]) -> Optional[float]:
    """Share of a loop program's FFMAs that a warp issues between a global load and the first instruction
    that waits for it (reads or overwrites its destination registers: the shared store that stages the
    next tile; or, where the program carries its scoreboard fields, waits on the scoreboard the load
    releases: program_deps), the smallest over the loop's global loads: the part of the compute phase that hides the
    next tile's loads from a warp alone on its scheduler. The prefetch share (measure.sass.prefetch_fraction)
    counts the FFMAs from the last load to the barrier; those after the stores hide nothing from a lone
    warp, which waits at them (Nsight Compute's PC sampling of double_buffer 128 x 64 x 8 alone on its SM:
    35-37 % of its samples on the long scoreboard, at the stores; docs/model.md, "Where the model misses").
    None without a program or where nothing in the loop waits for a global load's registers (cp.async
    copies land in shared memory)."""
    if not program:
        return None
    cls, deps = program["cls"], program_deps(program)
    n, total = len(cls), sum(c == "F" for c in cls)
    first: dict[int, int] = {}  # a load's position -> the distance to its first consumer (into the next pass)
    for j, ds in enumerate(deps):
        for d in ds:
            p = (j - d) % n
            if cls[p] == "G" and 0 < d <= n:
                first[p] = min(first.get(p, d), d)
    if not first or not total:
        return None
    return min(sum(cls[(p + k) % n] == "F" for k in range(1, d)) for p, d in first.items()) / total


def global_load_waits(program: Optional[dict]) -> Optional[int]:
    """How many times a warp waits for its global loads in one pass of a loop program (steady state: the
    second of two passes, so loads of the previous pass count), or None without a program or global loads.

    A warp issues in order. An instruction that reads the result of a global load still in flight holds the
    warp until that load's data arrive: one wait of a global load's latency. The loads the warp issued before
    that instruction were issued within a few cycles of each other, a small fraction of that latency, so
    they arrive with it: after the wait no load issued so far is in flight. Counting the waits this way
    needs only the program's order and its dependency edges (measure.sass.loop_program's `deps`). nvcc 13.0 unrolls the
    naive and coalesced k loops 16 times: for sm_75, sm_86 and sm_89 it issues all 32 loads before the first
    FFMA (one wait a pass), for sm_80 and sm_90 it interleaves them with the FFMAs in three batches (three)."""
    if not program or "G" not in program["cls"]:
        return None
    cls, deps = program["cls"], program_deps(program)
    n = len(cls)
    in_flight: set[int] = set()
    waits = 0
    for j in range(2 * n):
        i = j % n
        if any(j - d in in_flight for d in deps[i]):
            waits += j >= n
            in_flight.clear()
        if cls[i] == "G":
            in_flight.add(j)
    return waits


def lds_split(program: dict, groups, mean: float, tiles_per_pass: float):
    """Each shared load of a loop program its own wavefronts, from the bank simulation's groups of one warp's
    k-tile (smem_banks.read_groups: FFMAs one load feeds, loads a k-tile, mean wavefronts): the program's
    shared loads ranked by the FFMAs that read their registers (its dependencies), the group that feeds the
    most taking the loads that feed the most, tiles_per_pass x its count of them, and so on; loads beyond the
    groups' count keep `mean`, and the whole is scaled to `mean` a load, so the pipe's work in a pass is the
    mean's. A conflicted fragment's loads then finish as late as their wavefronts make them, where the mean
    spreads the conflicts over every load. A tuple over the program's instructions (0 for those that are no
    shared load), or `mean` where every load comes out the same."""
    cls, deps = program["cls"], program["deps"]
    n = len(cls)
    lds = [i for i in range(n) if cls[i] == "S"]
    if not lds or len(groups) < 2:
        return mean
    fed = dict.fromkeys(lds, 0)
    for i, ds in enumerate(deps):
        if cls[i] == "F":
            for d in ds:
                j = (i - d) % n
                if j in fed:
                    fed[j] += 1
    ranked = sorted(lds, key=lambda i: (-fed[i], i))
    wf = dict.fromkeys(lds, float(mean))
    at = 0
    for _, count, w in groups:
        take = int(round(count * tiles_per_pass))
        for i in ranked[at:at + take]:
            wf[i] = float(w)
        at += take
    total = sum(wf.values())
    if total <= 0:
        return mean
    scale = mean * len(lds) / total
    out = tuple(round(wf[i] * scale, 4) if i in wf else 0.0 for i in range(n))
    vals = {out[i] for i in lds}
    return mean if len(vals) == 1 else out


def fp32_pipe_clocks(fp32_lanes_per_sm: float, schedulers: float) -> float:
    """Clocks a warp FFMA holds its scheduler's FP32 pipe: 32 lanes / the scheduler's lanes, never under 1.
    Volta, Turing and GA100 have 64 FP32 lanes per SM in four partitions (whitepapers; the CUDA
    Programming Guide's arithmetic throughput table: 64 results per clock per SM for compute capability
    7.x and 8.0): 16 per scheduler, so a warp's FFMA occupies its pipe two clocks. Maxwell, Pascal
    (GP10x), GA10x, AD10x and Hopper have 32 per scheduler: one clock, as its issue."""
    return max(1.0, 32.0 / max(float(fp32_lanes_per_sm) / max(float(schedulers), 1.0), 1e-9))


def lsu_pipe_clocks(ldst_units_per_sm) -> float:
    """Clocks a warp's memory instruction (LDS, STS, LDG, LDL, STL) holds the SM's L1TEX pipe at the least:
    32 threads / the SM's load/store units, never under 1; 1 where the generation file does not give them (here
    all but Volta's and Turing's). Volta has 32 (8 a processing block): one clock, the same as the one
    wavefront the pipe serves a clock, so nothing changes there. Turing has 16 (Cornell Virtual Workshop,
    devices/generations/sm_75.toml): a warp's instruction passes them twice, so a 4-byte shared load that one
    wavefront serves (a broadcast, or 32 words in 32 banks) still takes two clocks of the pipe, while a 16-byte
    one (four wavefronts) is bound by the banks as before: by this rule the SM reads shared memory at 64 B a
    clock with 4-byte loads and 128 B with 16-byte ones."""
    if not ldst_units_per_sm:
        return 1.0
    return max(1.0, 32.0 / float(ldst_units_per_sm))


def compute_cycles_per_tile(program: dict, tiles_per_pass: float, resident_warps: float, warps_per_block: float,
                            schedulers: int, c_ffma: float, smem_latency: float, local_latency: float,
                            fixed_latency: float, lds_wavefronts: float, sts_wavefronts: float,
                            global_latency: float = 0.0, banks: int = 0, ldg_wavefronts: float = 0.0,
                            ffma_pipe: float = 1.0, ldg_returns: float = 0.0, fetch_interval: float = 0.0,
                            lsu_pipe: float = 1.0, copy_clocks: tuple = (), latency_term: bool = False) -> float:
    """SM cycles for the resident warps to finish one k-tile's compute phase (simulate, per tile); with
    global_latency > 0, the whole pass with its global loads' waits in the binary's order; banks: the
    generation's register banks (0: no register-bank term); ffma_pipe: fp32_pipe_clocks; ldg_returns:
    the wavefronts a warp's global loads of one k-tile take beyond their width (predict.ldg_returns);
    fetch_interval: the fewest clocks between a lone warp's instructions that the fetch allows (simulate);
    lsu_pipe: lsu_pipe_clocks; lds_wavefronts: the mean per shared load, or per instruction of the program
    (lds_split); copy_clocks: simulate's (cp.async copies); latency_term: this is the latency term's replay (with
    global_latency), whose blocks are apart only under LATENCY_APART."""
    W = int(np.ceil(resident_warps / schedulers))
    per_block = int(np.ceil(warps_per_block / schedulers))
    # the SM's pipe serves every resident warp's wavefronts; the busiest scheduler holds W of them, so a
    # wavefront of its warps waits for resident / W others' (the schedulers' count where the warps divide
    # evenly: 5 warps on 4 schedulers are 2 + 1 + 1 + 1, not 2 on each)
    share = float(min(schedulers, max(resident_warps, 1.0) / W))
    pid = program_key(program)
    _PROGRAMS.setdefault(pid, program)
    args = (W, per_block, round(float(c_ffma), 4), float(smem_latency), float(local_latency), float(fixed_latency),
            (lds_wavefronts if isinstance(lds_wavefronts, tuple) else round(float(lds_wavefronts), 4)),
            round(float(sts_wavefronts), 4), share, None, round(float(global_latency), 1), int(banks),
            round(float(ldg_wavefronts), 4), float(ffma_pipe),
            round(float(ldg_returns) * tiles_per_pass, 4), round(float(fetch_interval), 4), float(lsu_pipe),
            tuple(copy_clocks), bool(resident_warps >= 3 * warps_per_block
                                     and (BLOCKS_APART and not global_latency or LATENCY_APART and latency_term and global_latency)))
    return _cached(pid, args) / max(tiles_per_pass, 1e-9)
