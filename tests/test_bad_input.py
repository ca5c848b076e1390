"""Bad input, every subcommand x every class: one line on stderr naming what is wrong, exit status 2,
no traceback, nothing written. Each row failed before the error boundary and readers existed."""
import json
import shutil
from pathlib import Path

import pytest

from perfmodel.cli import main

ROOT = Path(__file__).resolve().parent.parent
CAL = ROOT / "results" / "reference-calibration-h100-sxm.toml"  # measured on an H100 (compute capability 9.0)
RUN = ROOT / "results" / "20261122-153912-h100-sxm-seed10"


@pytest.fixture
def bad(tmp_path):
    """Files and folders of every bad kind, by name."""
    dev = (ROOT / "devices" / "a100.toml").read_text()
    f = {}
    f["binary.toml"] = tmp_path / "binary.toml"
    f["binary.toml"].write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    f["latin1.toml"] = tmp_path / "latin1.toml"
    f["latin1.toml"].write_bytes(dev.replace('"NVIDIA A100', '"NVIDIA A100 \xe9').encode("latin-1", "replace"))
    f["inf.toml"] = tmp_path / "inf.toml"
    f["inf.toml"].write_text(dev.replace("dram_bandwidth_GBps = ", "dram_bandwidth_GBps = inf #"))
    f["nogen.toml"] = tmp_path / "nogen.toml"
    f["nogen.toml"].write_text(dev.replace('generation = "sm_80"', 'generation = "sm_81"'))
    f["wronggen.toml"] = tmp_path / "wronggen.toml"
    f["wronggen.toml"].write_text(dev.replace('generation = "sm_80"', 'generation = "sm_90"'))
    f["folder.toml"] = tmp_path / "folder.toml"
    f["folder.toml"].mkdir()
    f["file"] = tmp_path / "a_file.toml"
    f["file"].write_text("x = 1\n")
    for name, text in (("truncated", None), ("null", "null"), ("empty", "{}"), ("list", "[1, 2]"), ("binary", None),
                       ("version", None)):
        d = tmp_path / f"run-{name}"
        d.mkdir()
        raw = (RUN / "raw.json").read_text() if RUN.exists() else '{"environment": {}}'
        if name == "truncated":
            (d / "raw.json").write_text(raw[: len(raw) // 2])
        elif name == "binary":
            (d / "raw.json").write_bytes(b"\xff\xfe\x00binary")
        elif name == "version":
            (d / "raw.json").write_text(raw.replace('"schema_version": 1', '"schema_version": 99', 1)
                                        if '"schema_version": 1' in raw else '{"schema_version": 99}')
        else:
            (d / "raw.json").write_text(text)
        f[f"run-{name}"] = d
    return f


CASES = [
    # unreadable files
    ("predict", ["predict", "--device", "{binary.toml}"], "not a text file"),
    ("predict", ["predict", "--device", "{latin1.toml}"], "not UTF-8"),
    ("predict", ["predict", "--device", "h100-sxm", "--calibration", "{binary.toml}"], "not a text file"),
    ("devices", ["devices", "show", "{binary.toml}"], "not a text file"),
    ("sweep", ["sweep", "--device", "{latin1.toml}"], "not UTF-8"),
    ("roofline", ["roofline", "--device", "{binary.toml}", "-o", "{tmp}/r.png"], "not a text file"),
    ("report", ["report", "{run-binary}", "--out", "{tmp}/o"], "expected UTF-8 text"),
    ("accuracy", ["accuracy", "{run-binary}"], "expected UTF-8 text"),
    # malformed results
    ("report", ["report", "{run-truncated}", "--out", "{tmp}/o"], "not valid JSON"),
    ("report", ["report", "{run-null}", "--out", "{tmp}/o"], "JSON NoneType"),
    ("report", ["report", "{run-empty}", "--out", "{tmp}/o"], "environment"),
    ("report", ["report", "{run-list}", "--out", "{tmp}/o"], "JSON list"),
    ("report", ["report", "{run-version}", "--out", "{tmp}/o"], "schema_version 99"),
    ("accuracy", ["accuracy", "{run-truncated}"], "not valid JSON"),
    ("accuracy", ["accuracy", "{run-empty}"], "environment"),
    # failed writes
    ("roofline", ["roofline", "--device", "a100", "-o", "/proc/roof.png"], "/proc/roof.png"),
    ("roofline", ["roofline", "--device", "a100", "-o", "{file}/roof.png"], "is a file, not a folder"),
    ("report", ["report", str(RUN), "--out", "/proc/x"], "/proc/x"),
    # wrong input accepted
    ("predict", ["predict", "--device", "{inf.toml}"], "finite"),
    ("devices", ["devices", "show", "{inf.toml}"], "finite"),
    ("sweep", ["sweep", "--device", "{inf.toml}"], "finite"),
    ("roofline", ["roofline", "--device", "{inf.toml}", "-o", "{tmp}/r.png"], "finite"),
    ("predict", ["predict", "--device", "rtx2070s", "--calibration", str(CAL)], "compute capability 9.0"),
    ("sweep", ["sweep", "--device", "a100", "--calibration", str(CAL)], "compute capability 9.0"),
    ("roofline", ["roofline", "--device", "v100", "--calibration", str(CAL), "-o", "{tmp}/r.png"], "compute capability 9.0"),
    ("sweep", ["sweep", "--device", "a100", "--kernel", "tiled_2d", "--kernel", "tiled_2d"], "more than once"),
    ("roofline", ["roofline", "--device", "a100", "--kernel", "naive", "--kernel", "naive", "-o", "{tmp}/r.png"], "more than once"),
    ("predict", ["predict", "--device", "{nogen.toml}"], "unknown generation 'sm_81'"),
    ("devices", ["devices", "show", "{wronggen.toml}"], "is not that of generation sm_90"),
    ("predict", ["predict", "--device", "h200", "--figures", "datasheet", "--calibration", str(CAL)], "exclude each other"),
    ("sweep", ["sweep", "--device", "h200", "--figures", "datasheet", "--calibration", str(CAL)], "exclude each other"),
    ("accuracy", ["accuracy", str(RUN), "--figures", "generation", "--calibration", str(CAL)], "has no effect with --figures generation"),
    ("accuracy", ["accuracy", "--published", "--figures", "measured"], "takes --figures generation or datasheet"),
    ("accuracy", ["accuracy", str(RUN), "--published"], "takes no RUN folders"),
    ("accuracy", ["accuracy", "--published", "--calibration", str(CAL)], "takes no --calibration"),
    ("accuracy", ["accuracy", "--published", "{binary.toml}"], "not a text file"),
    ("accuracy", ["accuracy", "--published", "{inf.toml}"], "source: Field required"),
    # misleading message
    ("predict", ["predict", "--device", "{folder.toml}"], "is a folder"),
    ("report", ["report", "{file}", "--out", "{tmp}/o"], "not a folder"),
    # silently ignored
    ("predict", ["predict", "--device", "a100", "--size", "512", "-M", "1024"], "conflicts with -M"),
    ("sweep", ["sweep", "--device", "a100", "--size", "512", "-K", "64"], "conflicts with -K"),
    ("sweep", ["sweep", "--device", "a100", "--sample", "5"], "--sample has no effect without --measure"),
    ("sweep", ["sweep", "--device", "a100", "--seed", "3"], "--seed has no effect without --measure"),
    ("devices", ["devices", "list", "extra"], "takes no NAME"),
    ("predict", ["predict", "--device", "a100", "--size", "1099511627776"], "2,147,483,647"),
    ("sweep", ["sweep", "--device", "a100", "-M", "4294967296"], "2,147,483,647"),
    ("roofline", ["roofline", "--device", "a100", "--size", "3000000000", "-o", "{tmp}/r.png"], "2,147,483,647"),
    # no GPU (this suite runs where pycuda is absent; the GPU suite covers the other case)
    ("validate", ["validate", "--resume", "{tmp}"], "holds no plan.json"),
    ("validate", ["validate", "--resume", "{tmp}", "--seed", "2"], "--seed cannot change it"),
    ("validate", ["validate", "--resume", "{tmp}", "--sample", "0"], "--sample cannot change it"),
    ("validate", ["validate", "--sample", "20"], "it needs --shapes CLASS|all"),
    ("validate", ["validate", "--shapes", "small", "--sample", "-1"], "-1 is negative"),
    ("validate", ["validate", "--shapes", "small", "--quick"], "--quick applies to the square ladder run only"),
    ("validate", ["validate"], "CUDA GPU"),
    ("calibrate", ["calibrate"], "CUDA GPU"),
    ("devices", ["devices", "detect"], "CUDA GPU"),
    ("sweep", ["sweep", "--device", "h100-sxm", "--measure", "3", "--sass", "0"], "CUDA GPU"),
    ("sweep", ["sweep", "--device", "h100-sxm", "--shapes", "small"], "give --measure K"),
    ("sweep", ["sweep", "--device", "h100-sxm", "--shapes", "small", "--measure", "5", "--size", "512"], "--size/-M/-N/-K cannot apply"),
    ("sweep", ["sweep", "--device", "h100-sxm", "--shapes", "all", "--measure", "5", "--kernel", "double_buffer"], "--kernel cannot apply"),
    ("sweep", ["sweep", "--device", "h100-sxm", "--shapes", "huge", "--measure", "5"], "invalid choice: 'huge'"),
    ("sweep", ["sweep", "--device", "h100-sxm", "--shapes", "small", "--measure", "5"], "CUDA GPU"),
    ("sweep", ["sweep", "--device", "h100-sxm", "--measure-overlap", "--sass", "0"], "CUDA GPU"),
    ("sweep", ["sweep", "--device", "h100-sxm", "--measure-overlap", "--measure", "3"], "excludes --measure K"),
    ("sweep", ["sweep", "--device", "h100-sxm", "--measure-overlap", "--json"], "--json and --csv cannot apply"),
    ("choose", ["choose", "--device", "h100-sxm", "--measure", "--sass", "0"], "CUDA GPU"),
    ("choose", ["choose", "--device", "h100-sxm", "--measure", "--json"], "--json cannot apply"),
    ("choose", ["choose", "--device", "h100-sxm", "--figures", "datasheet", "--calibration", str(CAL)], "exclude each other"),
    ("choose", ["choose", "--device", "nope"], "unknown device"),
    ("accuracy", ["accuracy", "--intervals", "--published"], "takes no --published or --figures"),
    ("accuracy", ["accuracy", "--intervals", "--figures", "datasheet"], "takes no --published or --figures"),
    ("accuracy", ["accuracy", "--model-spread", "{file}"], "writes a new file only"),
    ("accuracy", ["accuracy", "--model-spread", "{tmp}/s.toml", "--intervals"], "excludes --intervals"),
    ("accuracy", ["accuracy", "--published", "--model-spread", "{file}"], "writes a new file only"),
    ("accuracy", ["accuracy", str(RUN), "--model-spread", "{tmp}/s.toml", "--figures", "generation"], "takes --figures measured"),
    ("accuracy", ["accuracy", str(RUN), "--by", "kernel,tile"], "unknown key 'tile'; allowed: kernel, bound"),
    ("accuracy", ["accuracy", str(RUN), "--by", ","], "no key given"),
    ("accuracy", ["accuracy", str(RUN), "--by", "bound,bound"], "names a key twice"),
    ("accuracy", ["accuracy", str(RUN), "--points", "{file}"], "--points writes a new file only"),
    ("accuracy", ["accuracy", str(RUN), "--points", "{tmp}/no/such/p.csv"], "does not exist"),
    ("accuracy", ["accuracy", "--published", "--by", "kernel,run"], "unknown key 'run'; allowed: source, device, generation"),
    ("accuracy", ["accuracy", "--published", "--points", "{file}"], "--points writes a new file only"),
    ("accuracy", ["accuracy", "--published", "--model-spread", "{tmp}/s.toml", "--by", "kernel"], "--model-spread cannot apply"),
    ("accuracy", ["accuracy", "--intervals", "--points", "{tmp}/p.csv"], "--intervals cannot apply"),
    ("accuracy", ["accuracy", str(RUN), "--model-spread", "{tmp}/s.toml", "--by", "run"], "--model-spread cannot apply"),
]


def _has_gpu():
    try:
        import pycuda.driver as drv

        drv.init()
        return drv.Device.count() > 0
    except Exception:
        return False


@pytest.mark.parametrize("cmd,argv,says", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_is_one_line_and_exit_2(cmd, argv, says, bad, tmp_path, capsys):
    if says == "CUDA GPU" and _has_gpu():
        pytest.skip("a GPU is present")
    if "seed10" in " ".join(argv) and not RUN.exists():
        pytest.skip("recorded run absent")
    names = {**{k: str(v) for k, v in bad.items()}, "tmp": str(tmp_path)}
    for k, v in names.items():
        argv = [a.replace("{" + k + "}", v) for a in argv]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (argv, out, err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err and says in err, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


def test_a_near_empty_problem_is_bound_by_fixed_costs(capsys):
    assert main(["predict", "--device", "a100", "--size", "1"]) == 0
    out = capsys.readouterr().out
    assert "Bound: fixed - launch and fixed costs" in out and "FP32 FMA pipe is saturated" not in out
    assert main(["predict", "--device", "a100", "--size", "4096"]) == 0
    assert "Bound: fixed" not in capsys.readouterr().out


def test_a_calibration_of_another_chip_of_the_same_capability_is_named(capsys):
    """The H100's calibration stands for the H200 (same SM, compute capability 9.0), and says whose it is;
    another compute capability needs --force-calibration, and the output says it was forced."""
    assert main(["predict", "--device", "h200", "--calibration", str(CAL), "--estimate"]) == 0
    assert "measured (NVIDIA H100 80GB HBM3" in capsys.readouterr().out
    assert main(["predict", "--device", "rtx2070s", "--calibration", str(CAL), "--force-calibration", "--estimate"]) == 0
    assert "calibration of compute capability 9.0 used for 7.5 (forced)" in capsys.readouterr().out


def test_every_recorded_run_replays(tmp_path, capsys, monkeypatch):
    """Every run under results/, the four that predate the record of their kernel sources included,
    replays: its raw.json loads, every point gets its build facts and a prediction (the loop simulation
    is left out here to keep this fast; the hold-out replay test covers it), and `perfmodel report` on an
    old run says which facts were estimated."""
    from perfmodel import facts

    monkeypatch.setattr(facts.RunFacts, "program", lambda self, cfg: None)
    monkeypatch.setattr(facts.RunFacts, "_today", lambda self, cfg: None)  # recorded facts only: no compiler
    monkeypatch.setattr(facts.RunFacts, "prebuild", lambda self, cfgs, progress=None: 0)
    runs = sorted(p.parent for p in (ROOT / "results").glob("*/raw.json*") if p.name in ("raw.json", "raw.json.xz"))
    assert len(runs) >= 21
    # one command over every run (scored in parallel processes, forked after the patches above)
    assert main(["accuracy", *map(str, runs), "--figures", "datasheet", "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)["runs"]
    assert [s["run"] for s in scored] == [r.name for r in runs]
    old = ROOT / "results" / "20261122-092121-h100-sxm"
    assert main(["report", str(old), "--out", str(tmp_path / "r")]) == 0
    assert "estimated registers" in (tmp_path / "r" / "report.md").read_text() or \
        "0 the simulated k-tile loop" in (tmp_path / "r" / "report.md").read_text()
    shutil.rmtree(tmp_path / "r")


def test_a_bug_says_it_is_a_bug(monkeypatch, capsys):
    """Only a genuine bug prints a traceback, and then it says so (exit status 1, not 2)."""
    from perfmodel import cli

    def broken(a):
        raise ZeroDivisionError("model bug")

    monkeypatch.setitem(cli.COMMANDS, "predict", broken)
    assert main(["predict", "--device", "a100"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err and "a bug" in err
