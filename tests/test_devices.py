import math
import tomllib

import pytest

from perfmodel import UserError, load_device, shipped_devices
from perfmodel.devices import DeviceSpec

EXPECTED = {"gtx1060m", "rtx2070s", "v100", "a100", "k620", "h100-sxm", "h200"}


def test_the_seven_devices_ship():
    assert EXPECTED <= set(shipped_devices())


@pytest.mark.parametrize("name", sorted(shipped_devices()))
def test_every_device_file_loads_and_every_figure_has_a_source(name):
    d = load_device(name)
    assert d.name == name  # file stem = device name
    assert d.schema_version == 1
    for fig in d.figure_names():
        assert d.source_of(fig), fig
    # peak = SMs x lanes x 2 x boost, within 2 % of the datasheet figure where one is given
    if d.datasheet_peak_fp32_GFLOPS:
        assert math.isclose(d.peak_fp32_GFLOPS(), d.datasheet_peak_fp32_GFLOPS, rel_tol=0.02)


def test_h100_peak_from_first_principles():
    # 132 SMs x 128 lanes x 2 flop x 1.98 GHz = 66,908 GFLOPS
    assert load_device("h100-sxm").peak_fp32_GFLOPS() == pytest.approx(132 * 128 * 2 * 1.98)


def _raw(name):
    return tomllib.loads(shipped_devices()[name].read_text())


def _write(tmp_path, data):
    import json

    lines = []

    def emit(prefix, table):
        scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
        if prefix:
            lines.append(f"[{prefix}]")
        for k, v in scalars.items():
            key = f'"{k}"' if "." in k else k
            lines.append(f"{key} = {json.dumps(v)}")
        for k, v in table.items():
            if isinstance(v, dict):
                emit(f"{prefix}.{k}" if prefix else k, v)

    emit("", data)
    p = tmp_path / "mine.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_user_file_by_path_loads(tmp_path):
    p = _write(tmp_path, _raw("v100"))
    assert load_device(str(p)).compute.sm_count == 80


@pytest.mark.parametrize("mutate, expect", [
    (lambda d: d["compute"].__setitem__("sm_count", -4), "compute.sm_count"),
    (lambda d: d["memory"].__setitem__("l2_bandwidth_GBps", "fast"), "memory.l2_bandwidth_GBps"),
    (lambda d: d["latency"].__setitem__("warp_size", 32), "latency.warp_size"),  # extra field forbidden
    (lambda d: d.__setitem__("datasheet_peak_fp32_GFLOPS", 20000), "differs from datasheet"),
    (lambda d: d["sources"].pop("memory.l2_bytes"), "without a source"),
    (lambda d: d.__setitem__("schema_version", 7), "schema_version"),
])
def test_malformed_device_file_names_field_and_reason(tmp_path, mutate, expect):
    data = _raw("v100")
    mutate(data)
    with pytest.raises(UserError) as e:
        load_device(str(_write(tmp_path, data)))
    assert expect in str(e.value)
    assert "\n" not in str(e.value)


def test_unknown_device_lists_valid_ones():
    with pytest.raises(UserError) as e:
        load_device("gtx9090")
    for name in EXPECTED:
        assert name in str(e.value)


def test_spec_is_frozen():
    d = load_device("a100")
    with pytest.raises(Exception):
        d.compute.sm_count = 1
    assert isinstance(d, DeviceSpec)
