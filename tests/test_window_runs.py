"""Two H200 runs measured after their predictions (results/archive/window-predictions-20261130-h200.txt and
window-controls-predictions-20261130-h200.txt): the double_buffer and split_k defaults, and tiled_2d's, in grids of
one partial wave with one block an SM (9 to 121 blocks), replayed with the calibration the predictions used."""
from unittest import mock

import numpy as np
from recorded import replayed_rows

from perfmodel.model import terms as T

CAL = "results/20261130-010700-h200-bench-all/calibration.toml"
WINDOW = "results/20261130-105559-h200-window"
CONTROLS = "results/20261130-105745-h200-window-controls"


def _replay(rd: str, old_rule: bool = False, stage_wait: bool = True) -> dict:
    """{(kernel, M, K): (error %, measured GFLOPS)}; old_rule: the load-use window only for lone warps; stage_wait:
    the tile's lines wait behind the block's shared loads where the window applies (terms.data_stage_wait)."""
    out = {}
    with mock.patch.object(T, "DATA_STAGE_WAIT", stage_wait):
        for r in replayed_rows(rd, CAL, lone_warps_window=old_rule):
            assert r["M"] == r["N"]
            out[(r["kernel"], r["M"], r["K"])] = (r["error_pct"], r["measured_gflops"])
    return out


def test_the_window_run_measured_after_its_predictions():
    """20 points. double_buffer: 9.7 -> 7.7 % MAPE; at 9 and 25 blocks nothing moves (the window still covers the
    model's load phase; +10…+14 % fast, the first touch's latency), from 49 blocks on each point is predicted slower,
    overshooting at 121 (-6 / -7 %). split_k: 4.1 -> 3.3 % (4.0 -> 3.3 % before split_k's reduction floor became what
    it adds behind its writer); its grids of two blocks an SM or more than a wave (896 and
    up) do not move, its 36- and 100-block grids move by 7-9 points. (The window's own effect, without the data
    stage's wait that came after it: test_stage_wait_on_the_window_run.)"""
    new, old = _replay(WINDOW, stage_wait=False), _replay(WINDOW, old_rule=True, stage_wait=False)
    assert len(new) == 20 and new.keys() == old.keys()
    for kernel, before, after in (("double_buffer", 9.7, 7.7), ("split_k", 4.1, 3.3)):
        ks = [k for k in new if k[0] == kernel]
        assert abs(np.mean([abs(old[k][0]) for k in ks]) - before) < 0.06
        assert abs(np.mean([abs(new[k][0]) for k in ks]) - after) < 0.06
    db_still = [k for k in new if k[0] == "double_buffer" and k[1] <= 640]
    assert all(new[k][0] == old[k][0] and 10.0 < new[k][0] < 15.0 for k in db_still)
    assert all(new[k][0] < old[k][0] - 3.0 for k in new if k[0] == "double_buffer" and k[1] >= 896)
    assert all(new[k][0] == old[k][0] for k in new if k[0] == "split_k" and k[1] >= 896)
    assert all(old[k][0] - new[k][0] > 7.0 for k in new if k[0] == "split_k" and k[1] <= 640)


def test_a_lone_blocks_k_tile_does_not_grow_with_the_grid():
    """One block an SM, one partial wave: double_buffer's and tiled_2d's measured time for the same K stays within
    5 % from 9 to 121 blocks (a k-tile takes as long whether 9 or 121 SMs load at once), where the model's grows with
    the unused sectors of the SMs that load at once (terms.lockstep_load_cycles): tiled_2d goes from -0.7 % to
    -12.1 % (K = 8192). This assertion of the miss fails once a term stops the growth."""
    meas = {**_replay(WINDOW), **_replay(CONTROLS)}
    for kernel in ("double_buffer", "tiled_2d"):
        for K in (2048, 8192):
            # one block an SM, all at once: the grid's time is one block's (M = N = 384 ... 1408: 9 ... 121 blocks)
            t = np.array([2.0 * m * m * K / meas[(kernel, m, K)][1] for m in (384, 640, 896, 1152, 1408)])
            assert t.max() / t.min() < 1.05, (kernel, K, t)
    e = [meas[("tiled_2d", m, 8192)][0] for m in (384, 640, 896, 1152, 1408)]
    assert all(a > b for a, b in zip(e, e[1:])) and e[0] - e[-1] > 10.0


def test_stage_wait_on_the_window_run():
    """The same 20 points with the window's tile lines waiting behind the block's shared loads (terms.data_stage_wait):
    double_buffer 7.7 -> 6.3 % MAPE, every point 7-10 points slower: its 9- and 25-block grids from +10…+14 % to
    +0.6…+5.9 %, the larger ones past their measurement (to -15 % at 121 blocks: the unused-sector term's growth, test
    below); split_k 3.3 -> 4.5 % (3.3 -> 4.8 % before split_k's reduction floor became what it adds behind its
    writer), its 36- and 100-block grids 6-8 points slower, the rest unchanged."""
    new, old = _replay(WINDOW), _replay(WINDOW, stage_wait=False)
    for kernel, before, after in (("double_buffer", 7.7, 6.3), ("split_k", 3.3, 4.5)):
        ks = [k for k in new if k[0] == kernel]
        assert abs(np.mean([abs(old[k][0]) for k in ks]) - before) < 0.06
        assert abs(np.mean([abs(new[k][0]) for k in ks]) - after) < 0.06
    assert all(0.0 < new[k][0] < 6.0 for k in new if k[0] == "double_buffer" and k[1] <= 640)
    assert all(7.0 < old[k][0] - new[k][0] < 10.5 for k in new if k[0] == "double_buffer")
    assert all(new[k][0] == old[k][0] for k in new if k[0] == "split_k" and k[1] >= 896)
    assert all(5.5 < old[k][0] - new[k][0] < 8.5 for k in new if k[0] == "split_k" and k[1] <= 640)
