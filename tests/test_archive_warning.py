"""`perfmodel accuracy` on a run folder whose loop-program archives are not beside it (a run copied out of
results/ without results/*.json.xz): its points lose the replay of their binary's loop, and the command says
so in one line instead of printing another model's score as this one's."""
from pathlib import Path

import pytest

from perfmodel.analysis import load_run
from perfmodel.cli import main

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "results" / "20261122-153912-h100-sxm-seed10"


def _copy(folder: Path, with_archives: bool) -> Path:
    """The run's ladder at 1024 written into folder/run, with the results' archives linked beside it or not."""
    run = load_run(SRC)
    ms = [m for m in run.measurements if m.M == 1024]
    rd = folder / "run"
    rd.mkdir(parents=True)
    (rd / "raw.json").write_text(run.model_copy(update={"measurements": ms}).model_dump_json())
    if with_archives:
        for a in SRC.parent.glob("*.json.xz"):
            (folder / a.name).symlink_to(a)
    return rd


def test_a_copied_run_without_its_archives_is_named(tmp_path, capsys):
    if not SRC.exists():
        pytest.skip("recorded run absent")
    bare = _copy(tmp_path / "bare", with_archives=False)
    kept = _copy(tmp_path / "kept", with_archives=True)
    assert main(["accuracy", str(bare), "--figures", "datasheet"]) == 0
    out = capsys.readouterr()
    warning = [line for line in out.err.splitlines() if line.startswith("warning: run:")]
    assert len(warning) == 1 and "sass-programs-*.json.xz" in warning[0] and str(bare.parent) in warning[0]
    bare_mape = next(line for line in out.out.splitlines() if line.startswith("overall:"))
    assert main(["accuracy", str(kept), "--figures", "datasheet"]) == 0
    out = capsys.readouterr()
    assert "warning:" not in out.err
    kept_mape = next(line for line in out.out.splitlines() if line.startswith("overall:"))
    assert bare_mape != kept_mape  # the replay of the binaries' loops is what the archives give
