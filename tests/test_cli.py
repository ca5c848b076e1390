import json
import subprocess
import sys

import pytest

from perfmodel.cli import main


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_predict_breakdown(capsys):
    rc, out, err = run(capsys, "predict", "--device", "rtx2070s", "--bm", "128")
    assert rc == 0 and err == ""
    for section in ("Resources", "Occupancy", "limited by", "Traffic and arithmetic intensity", "Little's law",
                    "Instruction issue", "FFMA share", "Waves", "Predicted:", "% of peak", "Bound:"):
        assert section in out


def test_predict_json_is_the_prediction(capsys):
    rc, out, _ = run(capsys, "predict", "--device", "h100-sxm", "--kernel", "warp_tiled", "-M", "2048", "-N", "1024", "-K", "512", "--json")
    data = json.loads(out)
    assert rc == 0 and data["kernel"] == "warp_tiled" and (data["M"], data["N"], data["K"]) == (2048, 1024, 512)
    assert data["gflops"] > 0 and data["bound"]


@pytest.mark.parametrize("argv, fragment", [
    (["predict", "--device", "gtx9090"], "unknown device"),
    (["predict", "--device", "v100", "--kernel", "fast"], "unknown kernel"),
    (["predict", "--device", "v100", "--bm", "96"], "invalid double_buffer configuration"),
    (["predict", "--device", "v100", "--size", "0"], "not positive"),
    (["predict", "--device", "v100", "-M", "-5"], "-M"),
    (["predict", "--device", "v100", "--size", "abc"], "not an integer"),
    (["predict", "--device", "v100", "--kernel", "tiled_1d", "--tn", "4"], "takes no parameter tn"),
    (["predict", "--device", "/nonexistent/x.toml"], "does not exist"),
    (["devices", "show", "nope"], "unknown device"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_one_line_exit_2(capsys, argv, fragment):
    rc, out, err = run(capsys, *argv)
    assert rc == 2
    assert err.count("\n") == 1 and fragment in err and "Traceback" not in err


@pytest.mark.parametrize("typed, meant", [("gtx1060", "gtx1060m"), ("h100", "h100-sxm"), ("rtx2070", "rtx2070s"),
                                           ("a100-sxm", "a100"), ("rtx4060", "rtx4060-laptop"), ("k620x", "k620")])
def test_a_mistyped_device_name_gets_the_shipped_name_it_probably_meant(capsys, typed, meant):
    rc, _, err = run(capsys, "predict", "--device", typed)
    assert rc == 2 and err.count("\n") == 1
    assert f"unknown device '{typed}' (did you mean {meant}" in err and "shipped devices:" in err


def test_no_suggestion_for_a_name_like_none_and_device_names_ignore_case(capsys):
    rc, _, err = run(capsys, "predict", "--device", "nope")
    assert rc == 2 and "did you mean" not in err
    rc, out, _ = run(capsys, "predict", "--device", "RTX2070S", "--json")
    assert rc == 0 and json.loads(out)["device"] == "rtx2070s"


def test_malformed_device_file_from_cli(capsys, tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("schema_version = 1\nname = 'x'\n")
    rc, _, err = run(capsys, "predict", "--device", str(p))
    assert rc == 2 and "marketing_name" in err and err.count("\n") == 1


def test_devices_list_and_show(capsys):
    rc, out, _ = run(capsys, "devices")
    assert rc == 0 and "h100-sxm" in out and "66,908" in out
    rc, out, _ = run(capsys, "devices", "show", "rtx2070s")
    assert rc == 0 and "latency.smem_latency_cycles" in out and "[gemm-theory]" in out


def test_console_script_subprocess():
    r = subprocess.run([sys.executable, "-m", "perfmodel", "predict", "--device", "nope"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: unknown device") and "Traceback" not in r.stderr


@pytest.mark.parametrize("argv", [["validate", "--quick"], ["calibrate"], ["devices", "detect"],
                                  ["sweep", "--device", "h100-sxm", "--kernel", "double_buffer", "--measure", "2"]])
def test_gpu_commands_without_a_gpu_say_how_to_fix_it(capsys, argv, tmp_path, monkeypatch):
    from conftest import _have_gpu

    if _have_gpu():
        pytest.skip("a GPU is present")
    monkeypatch.chdir(tmp_path)  # nothing may be written
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("pip install 'perfmodel[cuda]'" in err or "no CUDA GPU" in err)
    assert not any(tmp_path.iterdir())


def test_predict_says_where_registers_come_from(capsys):
    assert main(["predict", "--device", "v100", "--estimate"]) == 0
    assert "[estimate (register tile + fragments + staging)]" in capsys.readouterr().out
    assert main(["predict", "--device", "a100", "--registers", "96"]) == 0
    assert "96 [--registers]" in capsys.readouterr().out


def test_roofline_and_predict_agree_on_every_shipped_device(tmp_path, monkeypatch, capsys):
    """Both commands take a configuration's build facts from facts.for_config: with the facts any
    compiler would give replaced by a stand-in (so no compile is needed here), every kernel of the
    default ladder on every shipped device gets the same prediction from both."""
    import json

    from perfmodel import facts, load_device, shipped_devices
    from perfmodel.catalogue import get_kernel, kernel_ids, runs_on
    from perfmodel.report import plots

    def stand_in(cfg, compute_capability, estimate=False):
        return facts.BuildFacts(registers=96, registers_source="stand-in", local_bytes=8, origin="given")

    plotted = {}

    def capture(dev, preds, out, title):
        plotted[dev.name] = preds
        return out, None

    monkeypatch.setattr(facts, "for_config", stand_in)
    monkeypatch.setattr(plots, "roofline", capture)
    for dev in shipped_devices():
        assert main(["roofline", "--device", dev, "-o", str(tmp_path / f"{dev}.png")]) == 0
        cc = load_device(dev).compute_capability  # the kernels that run there (async_pipeline: 8.0 and newer)
        assert [p.kernel for p in plotted[dev]] == [k for k in kernel_ids() if runs_on(get_kernel(k), cc)]
        for p in plotted[dev]:
            capsys.readouterr()
            assert main(["predict", "--device", dev, "--kernel", p.kernel, "--size", "4096", "--json"]) == 0
            q = json.loads(capsys.readouterr().out)
            assert q["resources"]["registers_source"] == "stand-in"
            d = json.loads(p.model_dump_json())
            if q["interval"] is not None:  # (none where no block fits)
                assert q["interval"].pop("parts") and d["interval"].pop("parts") is None  # predict also says what each input adds
            assert q == d
