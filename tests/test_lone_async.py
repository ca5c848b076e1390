"""An H200 run measured after its predictions (results/archive/lone-async-predictions-20261201-h200.txt):
async_pipeline at bk = 4, 8 and 16 with 2-4 stages, warp_tiled and double_buffer, four blocks (each alone on its
SM), replayed with the calibration the predictions used (docs/model.md, "async_pipeline alone on its SM")."""
import json

from recorded import replayed_rows

CAL = "results/20261130-194847-h200-bench-all/calibration.toml"
RUN = "results/20261201-185611-h200-lone-async"


def _errors() -> dict:
    """{(kernel, bk, stages, K): error %} of the run's 22 points (cuBLAS has no prediction)."""
    out = {}
    for r in replayed_rows(RUN, CAL):
        c = json.loads(r["config"])
        out[(r["kernel"], c["bk"], c.get("stages"), r["K"])] = r["error_pct"]
    return out


def test_the_default_build_within_two_percent_and_the_rings_the_split_over_charges():
    """Before each shared load took its own wavefronts (docs/model.md, "Each shared load its own wavefronts") the
    model missed two binaries, bk = 8 with three stages (the default, +6.9 to +7.4 %) and bk = 4 with two (+9.5 %),
    and held the other five within 2 %. Since: the default +1.3 / +1.8 %, bk = 4 with two stages +4.4 %, while the
    rings of two and four at bk = 8 go to -5.4…-5.6 % and bk = 4 with four to -4.9 % (one warp a scheduler: the
    conflicted A loads cost less here than their wavefronts' latency); over the 14 points 3.0 -> 3.6 %. Since a ring's
    copies wait for their landing from DRAM (terms.ring_landing_extra), bk = 4 with two stages +0.3 / +0.6 % and the 14
    points 3.2 %; nothing else moves."""
    e = _errors()
    assert len(e) == 22
    asy = {k: v for k, v in e.items() if k[0] == "async_pipeline"}
    assert len(asy) == 14
    by = lambda bk, st: [v for k, v in asy.items() if (k[1], k[2]) == (bk, st)]  # noqa: E731
    assert all(0.5 <= v <= 2.5 for v in by(8, 3))
    assert all(-1.0 <= v <= 1.0 for v in by(4, 2))
    assert all(-6.5 <= v <= -4.5 for v in by(8, 2) + by(8, 4) + by(4, 4))
    assert all(abs(v) <= 2.5 for v in by(4, 3) + by(16, 2))
    assert sum(abs(v) for v in asy.values()) / len(asy) <= 3.5


def test_the_controls():
    """warp_tiled (register staging) is predicted slow there, more as bk grows (-4.6, -6.2, -13.2 % at K = 16,384),
    double_buffer's default fast (+6.7 %), as in the shape runs' points of one block a scheduler."""
    e = _errors()
    wt = [e[("warp_tiled", bk, None, 16384)] for bk in (8, 16, 32)]
    assert wt[0] > wt[1] > wt[2] and -5.5 < wt[0] < -3.5 and wt[2] < -12.0
    assert 5.5 < e[("double_buffer", 8, None, 16384)] < 7.5
