"""A non-editable `pip install .` (a built wheel) must carry devices/ (with generations/), kernels/ and shapes/."""
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"wheel build failed: {r.stderr[-2000:]}")
    return next(out.glob("perfmodel-*.whl"))


def test_wheel_carries_data_and_loads_it(wheel, tmp_path):
    names = zipfile.ZipFile(wheel).namelist()
    assert "perfmodel/_data/devices/h100-sxm.toml" in names
    assert "perfmodel/_data/kernels/manifest.toml" in names
    assert "perfmodel/_data/devices/generations/sm_90.toml" in names
    assert "perfmodel/_data/shapes/corpus.toml" in names
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    code = ("import perfmodel, perfmodel.paths as p; assert '_data' in str(p.data_dir('devices')); "
            "from perfmodel import load_device, KernelConfig, predict; "
            "from perfmodel.shapes import corpus; assert len(corpus()) >= 40; "
            "print(round(predict(load_device('k620'), KernelConfig.make('naive'), 512).gflops))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip()) > 0
