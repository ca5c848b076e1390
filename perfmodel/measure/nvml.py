"""SM clock and power sampled through NVML in a background thread while timing (observer)."""
from __future__ import annotations

import threading
import time


class NvmlSampler:
    def __init__(self, index: int = 0, period_s: float = 0.005, pci_bus_id: str | None = None):
        """The GPU NVML numbers `index`, or the one at `pci_bus_id` (NVML ignores CUDA_VISIBLE_DEVICES: a
        worker that sees one GPU of several names it by its bus)."""
        import pynvml  # nvidia-ml-py

        self._nv = pynvml
        pynvml.nvmlInit()
        self._h = (pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id) if pci_bus_id
                   else pynvml.nvmlDeviceGetHandleByIndex(index))
        self._period = period_s
        self._stop = threading.Event()
        self._samples: list[tuple[float, float]] = []
        self._thread = None

    def driver_version(self) -> str:
        v = self._nv.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)

    def identity(self) -> dict:
        """The GPU's UUID, its maximum and application SM clocks (MHz; None where NVML does not say)."""
        nv = self._nv

        def ask(f, *a):
            try:
                v = f(self._h, *a)
            except Exception:
                return None
            return v.decode() if isinstance(v, bytes) else v

        return dict(uuid=ask(nv.nvmlDeviceGetUUID) or "unknown",
                    sm_clock_max_MHz=ask(nv.nvmlDeviceGetMaxClockInfo, nv.NVML_CLOCK_SM),
                    sm_clock_app_MHz=ask(nv.nvmlDeviceGetApplicationsClock, nv.NVML_CLOCK_SM))

    def _run(self):
        nv = self._nv
        while not self._stop.is_set():
            try:
                clk = nv.nvmlDeviceGetClockInfo(self._h, nv.NVML_CLOCK_SM)
                pw = nv.nvmlDeviceGetPowerUsage(self._h) / 1000.0
                self._samples.append((float(clk), float(pw)))
            except Exception:
                pass
            time.sleep(self._period)

    def start(self):
        self._samples = []
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> dict:
        self._stop.set()
        if self._thread:
            self._thread.join()
        if not self._samples:  # very short runs: one reading after the fact
            nv = self._nv
            self._samples.append((float(nv.nvmlDeviceGetClockInfo(self._h, nv.NVML_CLOCK_SM)),
                                  nv.nvmlDeviceGetPowerUsage(self._h) / 1000.0))
        clks = sorted(c for c, _ in self._samples)
        pws = sorted(p for _, p in self._samples)
        return dict(sm_clock_MHz_median=clks[len(clks) // 2], sm_clock_MHz_min=clks[0], power_W_median=pws[len(pws) // 2])
