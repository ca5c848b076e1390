"""`perfmodel devices [list|show NAME|detect]`."""
from __future__ import annotations

from ..devices import GENERATION_KEYS, generation_measured, load_device, shipped_devices
from ..errors import UserError
from ..measure.detect import detect_device


def run(a) -> int:
    if a.action == "list":
        w = max(10, *map(len, shipped_devices()))
        print(f"{'name':{w}} {'CC':4} {'SMs':>4} {'boost MHz':>9} {'FP32 GFLOPS':>11} {'DRAM GB/s':>9} {'L2 MB':>6}  "
              f"{'SM figures':10}  marketing name")
        for name in shipped_devices():
            d = load_device(name)
            sm = "measured" if generation_measured(d) else "datasheet"
            print(f"{name:{w}} {d.compute_capability:4} {d.compute.sm_count:4} {d.compute.sm_clock_boost_MHz:9.0f} "
                  f"{d.peak_fp32_GFLOPS():11,.0f} {d.memory.dram_bandwidth_GBps:9,.0f} {d.memory.l2_bytes / 2**20:6.1f}  "
                  f"{sm:10}  {d.marketing_name}")
        print("SM figures: measured = calibrate measured a GPU of the generation (predict uses them unless --figures datasheet)")
        return 0
    if a.action == "show":
        if not a.name:
            raise UserError("devices show needs a NAME: one of " + ", ".join(shipped_devices()))
        d = load_device(a.name)
        print(f"{d.name}: {d.marketing_name}, compute capability {d.compute_capability}, peak FP32 {d.peak_fp32_GFLOPS():,.0f} GFLOPS")
        if d.generation:
            print(f"  generation {d.generation} (devices/generations/{d.generation}.toml): the figures marked *")
        for fig in d.figure_names():
            sec, _, field = fig.partition(".")
            val = getattr(getattr(d, sec), field) if field else getattr(d, sec)
            mark = "*" if d.generation and (sec == "limits" or field in GENERATION_KEYS.get(sec, ())) else " "
            print(f" {mark}{fig:48} {str(val):>14}   [{d.source_of(fig)}]")
        got = generation_measured(d)
        if got:
            m, gen = got
            print(f"  measured SM figures of {gen.generation} ({gen.measured_source}; {m.gpu}, {m.date}): "
                  f"{', '.join(k for k, v in m.model_dump(exclude={'gpu', 'date'}).items() if v is not None)}")
        return 0
    detect_device()  # prints what it found and which device file applies
    return 0
