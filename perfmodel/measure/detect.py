"""`perfmodel devices detect`: match the local GPU to a shipped device file, or write one."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from ..devices import device_table, load_device, shipped_devices
from .gpu import Gpu

# (substring of the driver's name, compute capability) -> shipped device (None: a sibling SKU with other figures)
KNOWN = [("H200", "9.0", "h200"), ("H100", "9.0", "h100-sxm"), ("A100-PCIE", "8.0", "a100-pcie"), ("A100", "8.0", "a100"),
         ("V100", "7.0", "v100"), ("2070 SUPER", "7.5", "rtx2070s"), ("1060", "6.1", "gtx1060m"), ("K620", "5.0", "k620"),
         ("3070 Ti", "8.6", "rtx3070ti"), ("3090 Ti", "8.6", None), ("3090", "8.6", "rtx3090"), ("A6000", "8.6", "a6000"),
         ("Tesla T4", "7.5", "t4"), ("2080 Ti", "7.5", "rtx2080ti"),
         # "RTX 3080" names the 10 GB board (rtx3080) and the 12 GB one (70 SMs, 912 GB/s) alike: not matched
         ("4090", "8.9", "rtx4090"), ("4060 Laptop", "8.9", "rtx4060-laptop"),
         ("L40", "8.9", None), ("NVIDIA L4", "8.9", "l4"), ("A10G", "8.6", None), ("NVIDIA A10", "8.6", "a10")]


def match_shipped(gpu_name: str, cc: str) -> str | None:
    for frag, c, dev in KNOWN:
        if frag.lower() in gpu_name.lower() and c == cc:
            return dev
    return None


def _nearest(cc: str) -> str:
    target = float(cc)
    return min(shipped_devices(), key=lambda n: (abs(float(load_device(n).compute_capability) - target), n))


def write_from_driver(gpu, path: Path) -> Path:
    """A device file from the driver's attributes; figures the driver lacks come from the nearest
    shipped device of the same (or closest) compute capability, each marked as a proxy."""
    a = gpu.drv.device_attribute
    g = lambda attr: gpu.dev.get_attribute(getattr(a, attr))  # noqa: E731
    base_name = _nearest(gpu.cc)
    base = device_table(shipped_devices()[base_name])  # every figure, its generation's included
    base.pop("generation", None)  # the file written holds them all (the GPU's own generation may differ)
    today = datetime.now(timezone.utc).date().isoformat()
    drv_src = f"CUDA driver attribute on this GPU ({gpu.name}), read by perfmodel devices detect on {today}"
    proxy_src = f"proxy: copied from shipped device {base_name} (nearest compute capability); not measured on this GPU"
    clock_MHz = g("CLOCK_RATE") / 1000.0
    data = dict(base)
    data.pop("datasheet_peak_fp32_GFLOPS", None)
    slug = "".join(ch if ch.isalnum() else "-" for ch in gpu.name.lower()).strip("-")
    data.update(name=slug, marketing_name=gpu.name, compute_capability=gpu.cc)
    data["compute"] = dict(base["compute"], sm_count=g("MULTIPROCESSOR_COUNT"), sm_clock_boost_MHz=clock_MHz,
                           sm_clock_base_MHz=min(base["compute"]["sm_clock_base_MHz"], clock_MHz))
    bw = 2 * g("MEMORY_CLOCK_RATE") * 1e3 * g("GLOBAL_MEMORY_BUS_WIDTH") / 8 / 1e9
    data["memory"] = dict(base["memory"], dram_bandwidth_GBps=round(bw, 1), l2_bytes=g("L2_CACHE_SIZE"))
    smem_sm = g("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")
    data["limits"] = dict(base["limits"], max_threads_per_sm=g("MAX_THREADS_PER_MULTIPROCESSOR"),
                          max_warps_per_sm=g("MAX_THREADS_PER_MULTIPROCESSOR") // 32,
                          registers_per_sm=g("MAX_REGISTERS_PER_MULTIPROCESSOR"), registers_per_block=g("MAX_REGISTERS_PER_BLOCK"),
                          smem_per_sm_bytes=smem_sm, smem_per_block_optin_bytes=g("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
                          smem_carveout_KB=sorted({k for k in base["limits"]["smem_carveout_KB"] if k * 1024 < smem_sm} | {smem_sm // 1024}))
    driver_fields = ["compute.sm_count", "compute.sm_clock_boost_MHz", "memory.dram_bandwidth_GBps", "memory.l2_bytes"]
    sources = {f: proxy_src for f in base["sources"]}
    sources.update({f: drv_src for f in driver_fields})
    sources["limits"] = drv_src + " (thread, register and shared-memory limits); granularities " + proxy_src
    data["sources"] = sources
    data["proxy_fields"] = [k for k, v in sources.items() if v == proxy_src]
    lines = [f"# Written by perfmodel devices detect on {today} for {gpu.name}: driver figures plus proxies.", ""]
    def emit(prefix, table):
        if prefix:
            lines.append(f"\n[{prefix}]")
        for k, v in table.items():
            if not isinstance(v, dict):
                lines.append(f"{json.dumps(k) if '.' in k else k} = {json.dumps(v)}")
        for k, v in table.items():
            if isinstance(v, dict):
                emit(k, v)
    emit("", data)
    if path.exists():
        raise FileExistsError(path)
    path.write_text("\n".join(lines) + "\n")
    load_device(str(path))  # must validate
    return path


def detect_device(out_dir: Path | None = None) -> str:
    """Name (or path) of the device file for the local GPU; prints what it found."""
    gpu = Gpu()
    name = match_shipped(gpu.name, gpu.cc)
    if name:
        d = load_device(name)
        note = "" if d.compute.sm_count == gpu.sm_count else f" (warning: driver reports {gpu.sm_count} SMs, file has {d.compute.sm_count})"
        print(f"{gpu.name} (compute capability {gpu.cc}, {gpu.sm_count} SMs, L2 {gpu.l2_bytes / 2**20:.0f} MB) -> {name}{note}")
        return name
    out_dir = out_dir or Path.cwd()
    slug = "".join(ch if ch.isalnum() else "-" for ch in gpu.name.lower()).strip("-")
    path = write_from_driver(gpu, out_dir / f"{slug}.toml")
    print(f"{gpu.name} is not a shipped device: wrote {path} from driver attributes (proxies marked)")
    return str(path)
