"""Two H200 runs measured after their predictions (results/archive/row-stride-predictions-20261201-h200.txt and
edge-body-predictions-20261201-h200.txt): the single-buffered float4 kernels' guarded edge body at M = N = 3001 and
3072 against 2048 and 4096, replayed with the calibration the predictions used (docs/model.md, "Where the model
misses": the float4 kernels' edge body at 3001-3072)."""
import json

from recorded import replayed_rows

CAL = "results/20261130-194847-h200-bench-all/calibration.toml"
STRIDE = "results/20261201-214108-h200-row-stride"
EDGE = "results/20261201-214825-h200-edge-body"


def _errors(run: str) -> dict:
    """{(kernel, ragged, M, K): error %} of a run's points (cuBLAS has no prediction)."""
    return {(r["kernel"], json.loads(r["config"]).get("ragged", "edge"), r["M"], r["K"]): r["error_pct"]
            for r in replayed_rows(run, CAL)}


def test_the_float4_edge_body_is_fast_at_3001_to_3072_wherever_the_edge_body_runs():
    """Every shape of M = N in {3001, 3072}, K in {3001, 3004, 3072} but 3072 cubed runs the edge body; there
    tiled_2d_float4 and bank_conflict_free are predicted 8.7-30.4 % fast, at 3072 cubed (the interior) within
    -8.1..+1.0 %, while tiled_2d (scalar loads in both bodies) is within 2.6 % (2.4 % before the replay took the
    scoreboard waits on global loads) and double_buffer within 6 %
    everywhere: not A's row stride (K = 3004 is 16-byte aligned, 3001 is not), not the ragged M and N."""
    e = _errors(STRIDE)
    assert len(e) == 24
    for kern in ("tiled_2d_float4", "bank_conflict_free"):
        edge = [v for (k, _, m, kk), v in e.items() if k == kern and (m, kk) != (3072, 3072)]
        assert len(edge) == 5 and min(edge) > 8.0 and max(edge) < 31.0
        assert -9.0 < e[(kern, "edge", 3072, 3072)] < 2.0
    assert all(abs(v) < 2.7 for (k, *_), v in e.items() if k == "tiled_2d")
    assert all(abs(v) < 6.0 for (k, *_), v in e.items() if k == "double_buffer")


def test_at_2048_and_4096_the_edge_body_is_predicted_within_ten_percent():
    """The same edge body at M = N = 2048 and 4096 (K = MN - 4 and MN - 3, 16-byte aligned or not): tiled_2d_float4
    -2.7..+9.4 %, bank_conflict_free -6.1..+4.7 %; the interior points of both are -17.4..-0.5 %."""
    e = _errors(EDGE)
    assert len(e) == 48
    for kern, lo, hi in (("tiled_2d_float4", -3.0, 9.5), ("bank_conflict_free", -6.5, 5.0)):
        edge = [v for (k, r, m, kk), v in e.items() if k == kern and r == "edge" and kk % 8]
        assert len(edge) == 8 and lo < min(edge) and max(edge) < hi
        interior = [v for (k, r, m, kk), v in e.items() if k == kern and r == "edge" and kk % 8 == 0]
        assert len(interior) == 4 and max(interior) < 0.0
