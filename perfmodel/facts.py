"""What is known about the compiled kernel of one configuration (`BuildFacts`), from one place.

Every command that predicts (`predict`, `sweep`'s re-ranking, `roofline`, `report`, `validate`,
`accuracy`) takes its build facts from here, so two commands never disagree on one configuration:

- `for_config`: a configuration about to be predicted: the compiler's registers, spills, prefetch
  share, local bytes per k-tile and k-tile loop program where a toolchain here targets the device
  (measure.toolchain: the local nvcc, else NVIDIA's compiler wheels, NVRTC 12.9 for sm_50-sm_72;
  measure.build, measure.sass; cached on disk by sources, options and toolchain), else the estimate.
- `for_measurement`: a point of a recorded run: the registers, spills and SASS facts recorded with
  the binary that ran; the loop program from an archive beside the runs (or, for a run made with
  today's kernel sources, today's build); whatever is unknown is estimated, and `origin` says so.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Optional, Sequence

from .catalogue import KernelConfig, edge_blocks
from .measure import build, sass, toolchain
from .measure.records import Measurement, Run

ESTIMATE = "estimate (register tile + fragments + staging)"


@dataclass(frozen=True)
class BuildFacts:
    """Facts about one compiled configuration; None where unknown (the model then estimates).

    registers: registers per thread; local_bytes: the local frame per thread (spills); prefetch: the
    share of a double-buffered loop's FFMAs issued after the next tile's loads (None: as the source
    intends, 1); local_tile_bytes: local bytes one thread moves per k-tile (None: from the frame size);
    program: the k-tile loop as a dependency program (measure.sass.loop_program; None: closed form);
    edge_program: the same for the out-of-line edge body the blocks on a ragged edge run (None: edge
    blocks are predicted as interior ones).
    The *_source strings say where each fact came from and are shown to the user."""

    registers: Optional[int] = None
    registers_source: str = ESTIMATE
    local_bytes: int = 0
    prefetch: Optional[float] = None
    prefetch_source: str = "source"
    local_tile_bytes: Optional[float] = None
    program: Optional[dict] = None
    edge_program: Optional[dict] = None
    origin: str = "estimate"  # estimate | given | compiler | recorded run | source binary
    # how split_k's second kernel was launched in the run these facts come from ("programmatic" or "stream":
    # measure.records.Environment.reduction_launch); None: as the catalogue's launcher launches it today, with
    # programmatic stream serialization wherever the device's generation measured what that saves
    reduction_launch: Optional[str] = None


ESTIMATED = BuildFacts()


def given(registers: Optional[int], source: str = "compiler", local_bytes: int = 0) -> BuildFacts:
    """Facts a caller states (a register count it knows, e.g. `--registers`)."""
    if registers is None:
        return replace(ESTIMATED, local_bytes=local_bytes)
    return BuildFacts(registers=registers, registers_source=source, local_bytes=local_bytes, origin="given")


def compiled(cfg: KernelConfig, compute_capability: str) -> Optional[BuildFacts]:
    """The compiler's facts for cfg (cached on disk), or None where no toolchain here targets the device
    (measure.toolchain: the local nvcc, NVIDIA's compiler wheels, NVRTC 12.9 for sm_50-sm_72)."""
    bi = sass.binary_inputs(cfg, compute_capability)
    if not bi:
        return None
    prefetch, pf_src = None, "source"
    if bi["prefetch"] is not None:
        prefetch, pf_src = bi["prefetch"], f"SASS {bi['sass_arch']}"
    elif cfg.spec.uses_smem and bi["sass_arch"] is None:
        pf_src = f"source; no SASS: {sass.missing(compute_capability)}"
    return BuildFacts(registers=bi["registers"], registers_source=f"{bi['toolchain']}, {bi['arch']} (spills {bi['spill_stores']} B)",
                      local_bytes=bi["local_bytes"], prefetch=prefetch, prefetch_source=pf_src,
                      local_tile_bytes=bi["local_tile_bytes"], program=bi["program"], edge_program=bi.get("edge_program"),
                      origin="compiler")


def for_config(cfg: KernelConfig, compute_capability: str, estimate: bool = False) -> BuildFacts:
    """Facts for predicting cfg: the compiler's where a toolchain here builds for the device, else the estimate."""
    if estimate:
        return ESTIMATED
    got = compiled(cfg, compute_capability)
    if got is not None:
        return got
    why = missing(compute_capability) if not can_compile(compute_capability) else "the compiler failed"
    return replace(ESTIMATED, registers_source=f"{ESTIMATE}; {why}")


def _compiled_job(job) -> Optional[BuildFacts]:
    return compiled(*job)


def _sass_job(job) -> None:
    try:
        sass.sass_facts(*job)
    except toolchain.CompileError:
        pass  # the replay estimates what cannot be built


def compiled_many(configs: Sequence[KernelConfig], compute_capability: str,
                  progress: Optional[Callable[[int, int], None]] = None) -> list[Optional[BuildFacts]]:
    """`compiled` for many configurations, in parallel processes (nvcc runs as subprocesses);
    progress(done, total) after each."""
    out = []
    with ProcessPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
        for j, r in enumerate(pool.map(_compiled_job, [(c, compute_capability) for c in configs]), 1):
            out.append(r)
            if progress:
                progress(j, len(configs))
    return out


def can_compile(compute_capability: str) -> bool:
    """Whether a toolchain here builds for this device (registers and spills; the SASS where an nvdisasm
    reads it)."""
    return build.toolchain_for(compute_capability) is not None


def missing(compute_capability: str) -> str:
    """Why no toolchain here builds for this device (where can_compile is False)."""
    return toolchain.missing(build.arch_of(compute_capability))


# ---- recorded runs ---------------------------------------------------------------------------
class RunFacts:
    """Build facts of a recorded run's points: what the run recorded of each binary, the loop-program
    archives in `archive_dirs` (beside the runs), and today's build where the run used today's sources."""

    def __init__(self, run: Run, archive_dirs: Sequence[Path] = ()):
        self.run = run
        self.archive = sass.ProgramArchive(archive_dirs)
        env = run.environment
        self.same_sources = bool(env.kernel_sources_sha256) and env.kernel_sources_sha256 == build.sources_sha256()

    def prebuild(self, configs: Sequence[KernelConfig], progress: Optional[Callable[[int, int], None]] = None) -> int:
        """Build, in parallel processes, today's SASS facts (cached on disk) of the configurations whose loop
        program the archive does not hold, where the run used today's sources: what `_today` would build
        one at a time. Returns how many it built."""
        if not self.same_sources or not sass.available(self.run.environment.compute_capability):
            return 0
        env = self.run.environment
        need = {c.label(): c for c in configs
                if self.archive.program(sass.archive_key(env.kernel_sources_sha256, env.nvcc_flags, c)) is None}
        jobs = [(c, env.compute_capability) for c in need.values()]
        if not jobs:
            return 0
        with ProcessPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
            for j, _ in enumerate(pool.map(_sass_job, jobs), 1):
                if progress:
                    progress(j, len(jobs))
        return len(jobs)

    def _today(self, cfg: KernelConfig) -> Optional[dict]:
        """SASS facts of today's build of cfg, if the run used today's sources (then they stand for the
        binary that ran); else None."""
        if not self.same_sources:
            return None
        return sass.sass_facts(cfg, self.run.environment.compute_capability)

    def _loop(self, cfg: KernelConfig, key_of: Callable, fact: str) -> Optional[dict]:
        """A loop program of the binary the run built for cfg: archived under key_of(sources, flags, cfg),
        else the `fact` of today's same-source build."""
        env = self.run.environment
        if env.kernel_sources_sha256:
            prog = self.archive.program(key_of(env.kernel_sources_sha256, env.nvcc_flags, cfg))
            if prog is not None:
                return prog
        facts = self._today(cfg)
        return None if facts is None else facts.get(fact)

    def program(self, cfg: KernelConfig) -> Optional[dict]:
        """The k-tile loop of the binary the run built for cfg: archived, else today's same-source build."""
        return self._loop(cfg, sass.archive_key, "loop_program")

    def edge_program(self, cfg: KernelConfig) -> Optional[dict]:
        """The edge body's loop of the binary the run built for cfg: archived, else today's same-source build."""
        return self._loop(cfg, sass.edge_archive_key, "edge_loop_program")

    def for_measurement(self, m: Measurement, cfg: KernelConfig) -> BuildFacts:
        """The facts of the binary that ran for point m (the edge body's loop only where m has edge blocks)."""
        program = self.program(cfg)
        has_edge = cfg.spec.uses_smem and edge_blocks(m.M, m.N, m.K, cfg.bm, cfg.bn, cfg.bk, cfg.ragged)[1] > 0
        edge_program = self.edge_program(cfg) if has_edge else None
        prefetch, pf_src = None, "source"
        if cfg.buffers >= 2:
            if m.prefetch_fraction is not None:
                prefetch, pf_src = m.prefetch_fraction, "SASS of the binary that ran"
            else:
                facts = self._today(cfg)
                if facts is not None:
                    prefetch, pf_src = facts["prefetch_fraction"], f"SASS {facts['arch']} (same sources)"
                else:
                    pf_src = "source intent (run predates SASS records)"
        local_tile = None
        if m.spill_bytes and m.local_tile_bytes is not None:
            local_tile = m.local_tile_bytes  # recorded with the binary that ran
        elif m.spill_bytes and (program is not None or self.same_sources):
            # the loop of the binary that ran: archived under the run's sources, else today's same-source build
            counts = sass.program_loop_counts(program) if program is not None else self._today(cfg)
            local_tile = sass.local_bytes_per_tile(counts, cfg)
        return BuildFacts(registers=m.registers, registers_source="binary that ran" if m.registers else ESTIMATE,
                          local_bytes=m.spill_bytes or 0, prefetch=prefetch, prefetch_source=pf_src,
                          local_tile_bytes=local_tile, program=program, edge_program=edge_program,
                          origin="recorded run" if m.registers else "estimate",
                          reduction_launch=self.run.environment.reduction_launch or "stream")
