"""How much nvcc's front end (cicc) varies from run to run, and whether the wheels' cicc+ptxas build is
one of the builds nvcc itself makes (CPU; needs a local nvcc 13.0 and the `sass` extra).

cicc's output depends on where the process's memory lands (address-space layout randomisation): the
same source and options give one of a few PTX texts, and now and then ptxas turns them into different
cubins. This builds every default kernel for sm_75/80/90 RUNS times with each toolchain and prints, per
kernel and architecture, how many distinct cubins each made, their registers, and whether the two sets
share a cubin.
    PYTHONPATH=. python3 benchmarks/cicc_variation.py [RUNS]"""
import hashlib
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from perfmodel.catalogue import KernelConfig, kernel_ids
from perfmodel.measure import build, toolchain
from perfmodel.paths import data_dir

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 6
nvcc_path, wheels = toolchain.find_nvcc(), toolchain._wheel_cicc()
if nvcc_path is None or wheels is None:
    raise SystemExit("needs a local nvcc and NVIDIA's compiler wheels (pip install '.[sass]')")
nvcc = toolchain.Toolchain("nvcc", "local", (nvcc_path,))


def one(job):
    tc, kernel, arch = job
    cfg = KernelConfig.make(kernel)
    cubin, log = tc.compile(build.source_path(cfg), cfg.label(), build.defines(cfg), arch, data_dir("kernels"))
    return tc.kind, kernel, arch, hashlib.sha1(cubin).hexdigest()[:10], toolchain.resource_usage(log)["registers"]


jobs = [(tc, k, a) for _ in range(runs) for k in kernel_ids() for a in (75, 80, 90) for tc in (nvcc, wheels)]
print(f"{len(jobs)} builds ({runs} per kernel, architecture and toolchain)", file=sys.stderr, flush=True)
outcomes: dict = {}
with ThreadPoolExecutor(2) as ex:
    for i, (kind, kernel, arch, digest, regs) in enumerate(ex.map(one, jobs), 1):
        outcomes.setdefault((kernel, arch), {"nvcc": Counter(), "cicc+ptxas": Counter()})[kind][(digest, regs)] += 1
        if i % 54 == 0:
            print(f"  {i}/{len(jobs)}", file=sys.stderr, flush=True)
varied = disjoint = 0
print(f"{'kernel':22s} arch  nvcc cubins (registers: count)          wheels cubins                       shared")
for (kernel, arch), by in outcomes.items():
    fmt = lambda c: " ".join(f"{d[:6]}({r}):{n}" for (d, r), n in c.most_common())
    shared = bool({d for d, _ in by["nvcc"]} & {d for d, _ in by["cicc+ptxas"]})
    varied += len(by["nvcc"]) > 1 or len(by["cicc+ptxas"]) > 1
    disjoint += not shared
    print(f"{kernel:22s} sm_{arch} {fmt(by['nvcc']):38s} {fmt(by['cicc+ptxas']):35s} {'yes' if shared else 'NO'}")
print(f"{varied} of {len(outcomes)} kernel/architecture pairs built more than one cubin; "
      f"{disjoint} share no cubin between nvcc and the wheels")
