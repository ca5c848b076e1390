"""benchmarks/store_share.py on the small-K class of the two H100 shape runs (CPU): the share of every
resident block's store burst that the measured points pay is about none where a warp's lanes share sectors
and about all where every lane writes its own (predict.SCATTERED_STORE_RATIO, docs/model.md "Scattered
stores"); the script refuses what is not a recorded run."""
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RUNS = [ROOT / "results" / "20261123-185325-h100-sxm-shapes-all", ROOT / "results" / "20261123-232112-h100-sxm-shapes-all-seed2"]
CAL = str(ROOT / "results" / "reference-calibration-h100-sxm.toml")


def _module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import store_share
    finally:
        sys.path.pop(0)
    return store_share


def test_only_a_lanes_own_sectors_make_the_blocks_store_one_after_the_other():
    m = _module()
    rows = m.shares(m.points(RUNS, CAL, "small_k"), 0.05)
    shared = np.array([r["share"] for r in rows if r["ratio"] < 8])
    own = np.array([r["share"] for r in rows if r["ratio"] >= 8])
    assert len(shared) >= 40 and len(own) >= 5
    assert abs(np.median(shared)) < 0.25
    assert np.median(own) > 0.6
    assert {r["kernel"] for r in rows if r["ratio"] >= 8} == {"tiled_2d"}


def test_the_script_refuses_a_folder_that_is_not_a_run(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "store_share.py"), str(tmp_path)], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 2 and "not a recorded run" in r.stderr and "Traceback" not in r.stderr
