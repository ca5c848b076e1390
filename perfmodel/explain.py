"""Text views of a `Prediction` (the CLI prints these; no figures here)."""
from __future__ import annotations

from .model import Prediction
from .model.predict import SCATTERED_STORE_RATIO, one_element_pipe_clocks
from .model.terms import one_wave
from .model import uncertainty as U


def _si(x: float, unit: str) -> str:
    for scale, p in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.2f} {p}{unit}"
    return f"{x:.0f} {unit}"


def render(p: Prediction) -> str:
    r, o, w, i = p.resources, p.occupancy, p.waves, p.issue
    cfg = ", ".join(f"{k}={v}" for k, v in p.config.items())
    L = [f"{p.kernel} ({cfg}) on {p.device}, M={p.M} N={p.N} K={p.K}, SM clock {p.sm_clock_MHz:.0f} MHz, "
         f"peak {p.peak_GFLOPS:,.0f} GFLOPS",
         f"Device figures: {p.figures}" + (f"; {p.ffma_issue_cycles:.2f} issue cycles per FFMA (calibrated outer-product rate)"
                                            if p.ffma_issue_cycles > 1 else ""), ""]
    L.append("Resources")
    L.append(f"  threads/block {r.threads_per_block} ({r.warps_per_block} warps), registers/thread {r.registers_per_thread} "
             f"[{r.registers_source}], shared memory/block {r.smem_per_block_bytes} B")
    L.append(f"  prefetch of the next tile: {p.prefetch}")
    if p.load_use_share is not None:
        L.append(f"    (but the last wave's warps, each alone on its scheduler or of a block alone on its SM in one partial wave, "
                 f"wait at the shared stores that take the loads: only the {p.load_use_share:.0%} of the FFMAs before them "
                 f"hide the loads; model.schedule.load_use_window)")
        if p.data_stage_wait_cycles >= 0.5:
            L.append(f"    (and their tile's lines come back through the L1 data stage behind their own shared loads: "
                     f"{p.data_stage_wait_cycles:,.0f} cycles later than through an idle one; terms.data_stage_wait)")
    if r.local_traffic:
        L.append(f"  local memory: {r.local_frame_bytes} B frame per thread; {r.local_traffic}")
    L.append("Occupancy")
    L.append(f"  {o.blocks_per_sm} blocks/SM = {o.warps_per_sm} warps = {o.occupancy_pct:.1f} %  (limited by {o.limiter})")
    L.append("Traffic and arithmetic intensity")
    L.append(f"  {'level':6} {'bytes':>12} {'flop/B':>9} {'bandwidth':>14} {'ceiling':>14}")
    for lv in p.traffic:
        L.append(f"  {lv.level:6} {_si(lv.bytes, 'B'):>12} {lv.intensity_flop_per_byte:9.1f} {lv.bandwidth_GBps:>9,.0f} GB/s "
                 f"{lv.ceiling_GFLOPS:>9,.0f} GFLOPS")
    if p.dram_rate < 0.95:
        L.append(f"  (dram at {p.dram_rate:.0%} of the stream rate: A's reads come as a walk of {p.dram_segment_bytes:.0f}-byte row segments, "
                 f"which DRAM serves below it; memory.dram_row_segment_efficiency)")
    if p.flush_writeback_us > 0:
        L.append(f"  (dram: + {p.flush_writeback_us:.1f} us of write-back: the timing's flush leaves every L2 line dirty, and "
                 f"each line this kernel reads in evicts one; memory.flush_writeback_us_by_MiB, counted in the dram term as "
                 f"bus time beyond what the grid's own reads leave free)")
    if p.l1_lines_per_warp_step is not None:
        lines, banks, rate, lsu = p.l1_lines_per_warp_step, p.l1_bank_wavefronts_per_warp_step, p.l1_line_rate, p.lsu_pipe_clocks
        pipe = one_element_pipe_clocks(banks - 1.0, lsu)  # banks counts B's line too
        held = (f", each of its two loads holding the pipe at least {lsu:.0f} clocks (the SM's load/store units): {pipe:.0f}"
                if lsu > 1 else "")
        L.append(f"  (L1, per warp and k step: {lines:.0f} distinct lines at {rate:.1f} a clock [{p.l1_line_rate_source}] "
                 f"= {lines / rate:.1f} cycles, {banks:.0f} data wavefronts from the banks{held}: the larger, "
                 f"{max(pipe, lines / rate):.1f}, is what smem counts)")
    if p.ldg_returns_per_warp_tile:
        L.append(f"  (L1 data stage: a warp's global load of the tile touches {p.ldg_lines_per_load:.1f} lines on average, one "
                 f"wavefront each; beyond the loads' width that is {p.ldg_returns_per_warp_tile:.0f} wavefronts per warp and k-tile, "
                 f"counted in smem and in the simulated pass's pipe work)")
    L.append("Little's law (per SM: in flight needed = latency x throughput vs available)")
    L.append(f"  {'level':6} {'latency':>8} {'needed':>10} {'available':>10} {'unit':>10} {'fraction':>9}")
    for row in p.littles_law:
        L.append(f"  {row.level:6} {row.latency_cycles:8.0f} {row.needed_in_flight:10.1f} {row.available_in_flight:10.1f} "
                 f"{row.unit:>10} {row.achievable_fraction:9.2f}")
    L.append("Instruction issue (warp instructions per block per k-tile)")
    L.append("  " + "  ".join(f"{k.upper()} {v:,.0f}" for k, v in i.per_block_per_tile.items()))
    L.append(f"  FFMA share {i.ffma_share:.1%} -> issue ceiling {i.issue_ceiling_GFLOPS:,.0f} GFLOPS")
    if i.loop_code_bytes:
        fetch = (f"the SM fetches at most {i.fetch_rate_per_sm:.2f} warp instr/clk for it (calibrated)"
                 if i.fetch_rate_per_sm else "no instruction-fetch limit known (datasheet figures)")
        L.append(f"  unrolled k-tile loop ~{i.loop_code_bytes / 1024:,.1f} KB of code: {fetch}")
        if p.lone_fetch_interval_cycles > 0:
            L.append(f"  a warp alone on its scheduler gets an instruction of it every {p.lone_fetch_interval_cycles:.2f} clocks at "
                     f"most, and no other warp issues meanwhile (calibrated with one warp per scheduler)")
    L.append("Waves")
    L.append(f"  {w.blocks} blocks, {w.blocks_per_wave} per wave -> {w.waves:.2f} waves "
             f"({w.full_waves} full, tail of {w.tail_blocks_per_sm} block(s) per SM)")
    if w.tail_refilled:
        L.append(f"  (the blocks left after the full waves take the slots those free first, {w.tail_blocks_per_sm} to an SM "
                 f"on fewer SMs: the warps an SM takes at once, measured for this SM generation)")
    L.append("Cycles per k-tile at full residency (largest bounds)")
    L.append("  " + "  ".join(f"{k} {v:,.0f}" + ("*" if k == p.bound else "") for k, v in p.cycles_per_tile.items()))
    via = (f"the tile burst through the {p.l2_port_bytes_per_clock:.0f} B/clk L2->SM port" if p.l2_port_bytes_per_clock
           else "the tile burst at the SM's share of the L2 bandwidth")
    if p.load_phase_share is not None:
        via = (f"one block's tile burst through the {p.l2_port_bytes_per_clock:.0f} B/clk port, "
               f"{p.load_phase_share:.2f} of that phase exposed with {o.blocks_per_sm} block(s)/SM (calibrated tile loop)")
    if p.scheduled_compute_cycles is not None:
        L.append(f"  (compute = {p.scheduled_compute_cycles:,.0f} cycles: the binary's k-tile loop replayed on one warp scheduler "
                 f"with {o.warps_per_sm} warps/SM: issue order, FFMA rate"
                 + (f", each FFMA holding the 16-lane FP32 pipe {p.ffma_pipe_clocks:.0f} clocks" if p.ffma_pipe_clocks > 1 else "")
                 + (f", each memory instruction holding the shared pipe at least {p.lsu_pipe_clocks:.0f} clocks"
                    if p.lsu_pipe_clocks > 1 else "")
                 + (f", operand reads from {p.register_banks} register banks" if p.register_banks else "")
                 + ", fragment-load latency, shared pipe and barrier)")
        if p.register_bank_floor_cycles is not None:
            binds = p.register_bank_floor_cycles >= p.scheduled_compute_cycles - 0.5
            L.append(f"  (register-file floor {p.register_bank_floor_cycles:,.0f} cycles: the same loop with its operand reads from "
                     f"the register banks at the chip's {p.register_bank_floor_ffma_cycles:.3f} issue cycles per FFMA"
                     + ("; it binds: the loop's register reads, not the calibrated outer-product rate, set its pace" if binds else "; below the calibrated rate")
                     + ")")
    elif p.pipe_overlap > 0:
        L.append(f"  (compute = max(issue, smem) + {p.pipe_overlap:.2f} x min(issue, smem): with {o.warps_per_sm} warps/SM the "
                 f"shared loads and the FFMAs overlap only partly, calibrated)")
    if p.lockstep_extra_cycles > 0:
        via += (f", +{p.lockstep_extra_cycles:,.0f} cycles for the unused sectors of the lines its tile touches "
                f"(every SM's lone block loads at once, at the SM's share of the L2 bandwidth)")
    if p.load_queue_cycles > 0:
        via += (f", +{p.load_queue_cycles:,.0f} cycles as its scalar loads queue for the L2's lines (the L1 takes an SM's "
                f"missing loads at a measured rate)")
    if p.ring_landing_cycles > 0:
        via += (f", +{p.ring_landing_cycles:,.0f} cycles as its cp.async copies land from DRAM later than the pointer chase "
                f"and the port's burst: the SM's tile bytes in flight, measured (memory.dram_copy_landing_cycles_by_KB), "
                f"times DRAM's share of the latency")
    which = ("DRAM's: all blocks run in one wave, so every k-tile is a first touch" if one_wave(w.blocks, w.blocks_per_wave)
             else "L2 and DRAM mixed by the loads' hit rate")
    chase = next((row.latency_cycles for row in p.littles_law if row.level == "dram"), 0.0)  # the pointer chase
    if chase and p.dram_latency_cycles > chase + 0.5:
        which += (f"; DRAM's {p.dram_latency_cycles:,.0f} cycles: the pointer chase's {chase:,.0f}, A's share of the DRAM reads "
                  f"waiting as with {p.dram_lines_in_flight:,.0f} lines in flight a SM")
    l2 = next((row.latency_cycles for row in p.littles_law if row.level == "l2"), 0.0)  # the first read's
    if not one_wave(w.blocks, w.blocks_per_wave) and p.l2_tile_latency_cycles and abs(p.l2_tile_latency_cycles - l2) > 0.5:
        which += (f"; L2 hits {p.l2_tile_latency_cycles:,.0f} cycles: {100 * p.l2_second_read_share:.0f} % of the tile bytes are "
                  f"second reads of lines an earlier wave read, the rest first reads ({l2:,.0f})")
    glob = f"global latency ({which})"
    if p.load_steps is not None:  # one-element kernels: a wait a few k steps, not a tile's load phase
        how = ("the binary's k loop waits for its loads once every" if p.load_steps_from_binary else
               "a warp is taken to wait for its loads once every")
        src = "" if p.load_steps_from_binary else " (a lower bound: the binary's loop is not read here, or the figures are the datasheet's)"
        L.append(f"  (latency = issue + {p.exposed_latency_cycles:,.0f} cycles a k step: {how} {p.load_steps:.3g} k steps{src}, "
                 f"{glob}, the FFMA chain after each wait, and the wait for the L1 behind the other warps' lines)")
    else:
        L.append(f"  (latency = compute + {p.exposed_latency_cycles:,.0f} cycles of load latency no prefetch hides: {glob}, {via}, "
                 f"store and barrier)" if p.scheduled_compute_cycles is None else
                 f"  (latency = compute + {p.exposed_latency_cycles:,.0f} cycles of load latency the prefetch does not hide: "
                 f"{glob}, {via})")
        if w.full_waves == 0 and abs(p.exposed_latency_cycles_tail - p.exposed_latency_cycles) >= 0.5:
            L.append(f"  (this grid is one partial wave, {w.tail_blocks_per_sm} block(s) an SM: "
                     f"{p.exposed_latency_cycles_tail:,.0f} cycles of load latency exposed a k-tile there)")
    if p.replayed_latency_cycles is not None and abs(p.replayed_latency_cycles - p.cycles_per_tile["latency"]) < 0.5 \
            and p.exposed_latency_cycles > 0.5:  # the replay binds (a tie with nothing exposed leaves the closed form's words)
        L[-1] = (f"  (latency = compute + {p.exposed_latency_cycles:,.0f} cycles: the same loop replayed with its global loads' latency "
                 f"({which}) in the binary's issue order waits that long for loads the prefetch does not cover, "
                 f"longer than one load phase ({via}))")
    if p.edge_blocks:
        L.append(f"Edge: {p.edge_blocks:,} of {p.waves.blocks:,} blocks lie on a ragged edge and run the guarded edge body: "
                 + (_edge_text(p) if p.edge_extra_cycles_per_tile is not None
                    else "predicted as interior blocks (no SASS of the edge body here)"))
    L.append(f"C stores: the last wave's tiles take {p.last_wave_store_us:.2f} us after its last k-tile (nothing left to hide them)")
    if p.lone_block_store_us > 0:
        why = ("one block per SM, nothing else runs while it stores" if p.occupancy.blocks_per_sm == 1 else
               f"each lane its own sector, the {p.occupancy.blocks_per_sm} blocks of an SM store one after the other"
               if p.c_store_ratio >= SCATTERED_STORE_RATIO else
               f"lanes share the sectors they store ({p.c_store_ratio:.1f} sector bytes per byte of C), one block's burst a wave "
               f"whatever the {p.occupancy.blocks_per_sm} blocks of an SM")
        L.append(f"  and every earlier wave's {p.lone_block_store_us:.2f} us in all: {why}")
    if p.k_slices > 1 and p.reduction_fused:
        L.append(f"Split-K: {p.k_slices} slices of K, {p.waves.blocks // p.k_slices:,} output tiles each (the blocks above count every slice's, "
                 f"the k-tiles are one slice's); each slice writes a partial C and the last of a tile's slices to finish sums the tile's "
                 f"{p.k_slices} partials in the same launch: {p.reduction_us:.2f} us (the busiest SM's sums: each "
                 f"its thread's chain of loads from the L2 or its bytes through the L2->SM port, after the fence and the counter)")
    elif p.k_slices > 1:
        L.append(f"Split-K: {p.k_slices} slices of K, {p.waves.blocks // p.k_slices:,} output tiles each (the blocks above count every slice's, "
                 f"the k-tiles are one slice's); each slice writes a partial C, and a second kernel reads the {p.k_slices} partials and writes C: "
                 f"{p.reduction_us:.2f} us")
        fixed = ("its time at no bytes behind the kernel that wrote them, measured on this SM generation"
                 if p.reduction_fixed_measured else "a second launch and one load latency (no floor measured for this generation)")
        if p.reduction_programmatic_saving_us:
            fixed += (f", less {p.reduction_programmatic_saving_us:.2f} us that launching it programmatically saves (set up while "
                      f"the main kernel runs; measured on this SM generation)")
        whole, l2 = p.reduction_partials_MB, p.reduction_l2_MB
        where = (f"all {whole:,.1f} MB of partials read from the L2" if l2 >= whole else
                 f"the {whole:,.1f} MB of partials read from DRAM (more than the L2 holds)" if l2 <= 0 else
                 f"{l2:,.1f} of the {whole:,.1f} MB of partials read from the L2 (what it keeps of data every SM just wrote), the rest from DRAM")
        L.append(f"  of which {p.reduction_fixed_us:.2f} us {fixed}; {where}")
    if p.launch_overhead_us and p.launch_source == "published":
        L.append(f"Launch: {p.launch_overhead_us:.2f} us of the time is the launch itself (published for this GPU's generation: "
                 f"a tiny kernel launched back to back; a launch timed alone costs more)")
    elif p.launch_overhead_us:
        L.append(f"Launch: {p.launch_overhead_us:.2f} us of the time is the launch itself (an empty kernel, timed the same way)")
    else:
        L.append("Launch: not counted (neither measured nor published for this GPU's generation)")
    L.append("")
    L.append(f"Predicted: {p.gflops:,.0f} GFLOPS = {p.pct_of_peak:.1f} % of peak, {p.time_s * 1e3:.3f} ms")
    L.append(f"Bound: {p.bound} - {p.reason}")
    if p.interval is not None:
        L.extend(render_interval(p))
    return "\n".join(L)


def _edge_text(p: Prediction) -> str:
    """What the guarded edge body adds: per k-tile on an SM of a full wave (in proportion to its share of the
    grid's blocks) and on the last wave's busiest SM, and in all (model.predict.edge_stage's edge_cycles)."""
    last = f"+{p.edge_extra_cycles_per_tile:,.0f} cycles per k-tile in the last wave"
    full = p.edge_extra_cycles_per_tile_full
    earlier = p.waves.full_waves if p.waves.tail_blocks_per_sm > 0 else max(p.waves.full_waves - 1, 0)
    if earlier and full is not None:
        share = p.edge_blocks / max(p.waves.blocks, 1)
        last += (f" and +{full:,.0f} on an SM of each earlier wave whose blocks all run it ({share:.0%} of the grid's blocks "
                 f"do)")
    total_us = p.edge_cycles / (p.sm_clock_MHz * 1e6) * 1e6
    return (f"{last}, {total_us:,.2f} us of the {p.time_s * 1e6:,.2f} us in all (its loop and the k-tile loop replayed "
            f"with their global loads' latency, each no faster than the SM fetches it where a calibration measured the "
            f"fetch: the edge loop's blocks apart, the k-tile loop's in step)")


PROVENANCE = {"given": "the clock given", "calibration": "this GPU's calibration", "generation": "its SM generation's calibration",
              "microbenchmark": "a published microbenchmark", "proxy": "another GPU's measurement (proxy)",
              "datasheet": "the datasheet", "unmeasured": "not measured: the L2 share", "l1": "not measured: the L1 line rate",
              "compiler": "the compiler", "model": "the model's L2 reuse, down to compulsory traffic", "estimate": "estimated: no compiler for this device here, or --estimate",
              "measured": "measured for its SM generation", "published": "published for its SM generation, launches back to back",
              "none": "neither measured nor published: not counted"}
MODEL_SPREAD = {"transfer": "published measurements of GPUs whose generation nobody calibrated"}
INPUT_NAMES = {"clock": "SM clock", "ffma": "FFMA rate", "smem": "shared-memory bandwidth", "l2": "L2 bandwidth",
               "dram": "DRAM bandwidth", "latency": "memory latency", "port": "L2->SM port", "model": "the model itself",
               "registers": "registers per thread", "reuse": "DRAM traffic",
               "launch": "launch cost"}


REGIME_WORDS = {"lone": "at most one warp per scheduler", "subwave": "under one wave", "few": "under four waves",
                "many": "four waves or more"}


def _model_source(p: Prediction) -> str:
    """Where the interval's model part comes from: the published points, or the recorded points of the
    prediction's bound and occupancy regime (or of its bound, or all, where those are too few), predicted from
    datasheet figures where the prediction is."""
    kind = p.interval.inputs.get("model", "recorded")
    if kind not in ("recorded", "datasheet"):
        return MODEL_SPREAD.get(kind, kind)
    key, n = U.residual_group(p.bound, p.regime, kind)
    if not key:
        return "no recorded residuals"
    what = "recorded residuals" + (" from datasheet figures" if kind == "datasheet" else "")
    if "/" in key:
        return f"{what} of {n:,} points bound by {p.bound}, {REGIME_WORDS.get(p.regime, p.regime)}"
    return f"{what} of {n:,} points bound by {key}" if key != "all" else f"{what} of all {n:,} points"


def render_interval(p: Prediction) -> list[str]:
    """The interval lines of `predict`: the 50 % and 90 % intervals, and what each input adds alone."""
    iv = p.interval
    L = [f"Interval: 50 % {iv.q25_GFLOPS:,.0f}-{iv.q75_GFLOPS:,.0f} GFLOPS, 90 % {iv.q05_GFLOPS:,.0f}-{iv.q95_GFLOPS:,.0f} GFLOPS "
         f"({100 * (iv.q05_GFLOPS / p.gflops - 1):+.0f} % to {100 * (iv.q95_GFLOPS / p.gflops - 1):+.0f} % of the prediction)"]
    if iv.parts:
        L.append("  90 % range from each source alone (the others at their figures):")
        for k, (lo, hi) in sorted(iv.parts.items(), key=lambda kv: kv[1][0] - kv[1][1]):
            src = _model_source(p) if k == "model" else PROVENANCE.get(iv.inputs.get(k, ""), iv.inputs.get(k, ""))
            L.append(f"    {INPUT_NAMES.get(k, k):24} {100 * lo:+6.1f} % to {100 * hi:+6.1f} %   [{src}]")
    return L
