"""Is a closed queueing (mean-value) model of the resident blocks consistent with the recorded runs?
For every single-buffered tiled point at 4096 without local memory: C = compute phase of one block per tile
(max(issue, smem) / b, from the model), T = measured cycles per tile for the b resident blocks; solve the MVA
think time Z that reproduces T and print it beside the model's exposed load phase. CPU only.
    python3 benchmarks/mva_check.py"""
import math
from perfmodel.analysis import load_run, rows, run_facts, run_figures
def mva_time(b, C, Z):
    Q=0.0
    for k in range(1, b+1):
        R = C*(1+Q); X = k/(R+Z); Q = X*R
    return b/X   # cycles for b blocks to each finish one tile
def solveZ(b, C, T):
    lo, hi = 0.0, 50000.0
    if mva_time(b,C,0) > T: return float('nan')
    for _ in range(60):
        mid=(lo+hi)/2
        if mva_time(b,C,mid) < T: lo=mid
        else: hi=mid
    return lo
for run in ['results/20261122-093721-h100-sxm','results/20261122-100438-h100-sxm-seed1']:
    r_ = load_run(run); t = rows(r_, run_figures(run), run_facts(r_, run))
    for r in t:
        p = r.get('_prediction')
        if not p or r['kernel'] in ('naive','coalesced') or not r.get('measured_gflops') or r['M']!=4096: continue
        if p.cycles_per_tile['local']>0: continue
        b = p.occupancy.blocks_per_sm
        bk = p.config.get('bk',1)
        ktiles = math.ceil(p.K/bk)
        waves = p.waves.blocks/(b*132)
        T = r['median_ms']*1e-3*r['clock_MHz']*1e6/(waves*ktiles)
        cyc = p.cycles_per_tile
        C = max(cyc['issue'], cyc['smem'])/b
        Z = solveZ(b, C, T)
        load_model = p.exposed_latency_cycles
        tile_bytes = (p.config['bm']+p.config['bn'])*bk*4
        print(f"{r['kernel'][:14]:14} b={b:2d} bytes={tile_bytes:6d} C={C:7.0f} T={T:7.0f} Zfit={Z:7.0f} model_exposed={load_model:6.0f} pf={r.get('prefetch','')[:3]}")
