"""GPU energy: arithmetic on recorded NVML counters everywhere; real counters only where a GPU is present."""
from __future__ import annotations

import sys
import time
from types import SimpleNamespace

import pynvml
import pytest

from specops.cost import nvml
from specops.cost.meter import CostMeter
from specops.cost.nvml import EnergyCounterError, cpu_model, energy_delta_j, gpu_indices, host_record, nvml_available
from specops.results.model import Cost

# Two recorded readings of 2 devices (mJ since driver load), 10 s apart at ~300 W and ~60 W.
BEFORE = {0: 812_345_678, 1: 91_000_000}
AFTER = {0: 815_350_678, 1: 91_600_500}
# By hand: GPU 0 spent 3_005_000 mJ = 3005.0 J, GPU 1 600_500 mJ = 600.5 J; together 3605.5 J.
# 2,500 output tokens: 3605.5 J * 1000 / 2500 = 1442.2 J per 1k tokens.


def test_energy_delta_of_recorded_readings():
    assert energy_delta_j(BEFORE, AFTER) == pytest.approx(3605.5)
    assert Cost(output_tokens=2500, gpu_energy_j=energy_delta_j(BEFORE, AFTER)).gpu_j_per_1k_tokens == pytest.approx(
        1442.2)
    assert energy_delta_j(BEFORE, BEFORE) == 0.0


def test_per_1k_tokens_without_tokens_or_a_measurement_is_none():
    assert Cost(output_tokens=0, gpu_energy_j=12.0, cpu_seconds=12.0).gpu_j_per_1k_tokens is None
    assert Cost(output_tokens=4000, gpu_energy_j=12.0).gpu_j_per_1k_tokens == pytest.approx(3.0)
    assert Cost(output_tokens=4000, cpu_seconds=12.0).cpu_s_per_1k_tokens == pytest.approx(3.0)
    assert Cost(output_tokens=4000).cpu_s_per_1k_tokens is None


def test_backwards_counter_is_an_error():
    with pytest.raises(EnergyCounterError, match="GPU 1 went backwards"):
        energy_delta_j(BEFORE, {0: AFTER[0], 1: 5_000})


def test_readings_of_different_devices_are_an_error():
    with pytest.raises(EnergyCounterError, match="different GPUs"):
        energy_delta_j(BEFORE, {0: AFTER[0]})


@pytest.mark.parametrize("gpus, indices", [
    ("all", None), (None, None), ("2", [0, 1]), ("1", [0]), ("0,2", [0, 2]), ("device=0,2", [0, 2]),
    ("device=3", [3]), (" 2, 1 ", [1, 2]), ("none", []), ("", []),
])
def test_gpu_indices(gpus, indices):
    assert gpu_indices(gpus) == indices


def test_gpu_uuids_cannot_be_mapped():
    with pytest.raises(ValueError, match="UUIDs"):
        gpu_indices("GPU-6f1b2c3d-0000-0000-0000-000000000000")


def test_window_sums_recorded_energy_over_rounds():
    readings = iter([BEFORE, AFTER, AFTER, {0: AFTER[0] + 1000, 1: AFTER[1] + 500}])
    cpu = iter([10.0, 12.5, 20.0, 21.0])
    meter = CostMeter(cpu_seconds=lambda: next(cpu), cpu_source="container cgroup",
                      gpu_energy_mj=lambda: next(readings), gpu_source="NVML total energy, GPU 0,1")
    window = meter.window()
    for _ in range(2):
        with window:
            pass
    assert window.totals == (pytest.approx(3.5), pytest.approx(3607.0))
    cost = window.cost(output_tokens=2500)
    assert cost.gpu_j_per_1k_tokens == pytest.approx(1442.8) and cost.cpu_s_per_1k_tokens == pytest.approx(1.4)


def test_window_with_a_reset_counter_has_no_energy():
    readings = iter([BEFORE, {0: 1, 1: 2}])
    meter = CostMeter(gpu_energy_mj=lambda: next(readings), gpu_source="NVML total energy, GPU 0,1")
    window = meter.window()
    window.start()
    assert window.stop() == (None, None)
    cost = window.cost(output_tokens=100)
    assert cost.gpu_energy_j is None and "went backwards" in cost.gpu_source


def test_cuda_version_text():
    assert nvml._cuda_version(12040) == "12.4" and nvml._cuda_version(11080) == "11.8"


class FakeNvml(SimpleNamespace):
    """pynvml with two recorded devices; counts init/shutdown so that every init is closed."""

    def __init__(self):
        errors = {name: getattr(pynvml, name) for name in dir(pynvml) if name.startswith("NVMLError")}
        super().__init__(**errors, inits=0, shutdowns=0)

    def nvmlInit(self):
        self.inits += 1

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        return AFTER[handle]

    def nvmlDeviceGetName(self, handle):
        return b"NVIDIA H100 80GB HBM3" if handle == 0 else "NVIDIA L4"

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(total=(80 if handle == 0 else 24) * 2**30)

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return (9, 0) if handle == 0 else (8, 9)

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlSystemGetCudaDriverVersion_v2(self):
        return 12040


def test_nvml_calls_through_a_recorded_driver(monkeypatch):
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert nvml_available() is None
    assert nvml.energy_mj(None) == AFTER and nvml.energy_mj([1]) == {1: AFTER[1]}
    gpus, driver, cuda = nvml.gpu_host_info()
    assert gpus == [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_gb": 80.0, "compute_capability": "9.0"},
                    {"index": 1, "name": "NVIDIA L4", "memory_gb": 24.0, "compute_capability": "8.9"}]
    assert nvml.gpu_architecture([1]) == [{"name": "NVIDIA L4", "compute_capability": "8.9"}]
    assert [d["compute_capability"] for d in nvml.gpu_architecture(None)] == ["9.0", "8.9"]
    assert nvml.gpu_architecture([]) == []
    assert (driver, cuda) == ("550.54.15", "12.4")
    assert nvml.energy_source([0, 1]) == (True, "NVML total energy, GPU 0,1")
    record = host_record()
    assert [g.name for g in record.gpus] == ["NVIDIA H100 80GB HBM3", "NVIDIA L4"] and record.cuda == "12.4"
    assert [g.compute_capability for g in record.gpus] == ["9.0", "8.9"] and record.driver == "550.54.15"
    assert fake.inits == fake.shutdowns > 0


def test_without_a_gpu_there_is_a_reason_not_an_error():
    if nvml_available() is None:
        pytest.skip("this host has a usable NVIDIA GPU")
    reason = nvml_available()
    assert isinstance(reason, str) and reason
    meter = CostMeter.with_gpus(lambda: 0.0, "process tree", "all")
    assert meter.gpu_energy_mj is None and meter.gpu_source == reason
    record = host_record()
    assert record.gpus == [] and record.driver is None and record.cuda is None
    assert record.cores >= 1 and record.memory_gb > 0 and record.cpu_model


def test_no_gpu_side_for_a_server_without_gpus():
    meter = CostMeter.with_gpus(lambda: 0.0, "process tree", "none")
    assert meter.gpu_energy_mj is None and meter.gpu_source == "the server has no GPU"


def test_cpu_model_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n")
    assert cpu_model(info) == "AMD EPYC 7B13 64-Core Processor"
    assert cpu_model(tmp_path / "missing")  # falls back to platform, never empty


@pytest.mark.skipif(nvml_available() is not None, reason=f"needs an NVIDIA GPU and driver: {nvml_available()}")
def test_real_gpu_energy_counter_needs_gpu():
    before = nvml.energy_mj(None)
    time.sleep(0.5)
    after = nvml.energy_mj(None)
    assert set(before) == set(after) and before
    assert all(after[i] >= before[i] for i in before)
    assert energy_delta_j(before, after) >= 0
    gpus, driver, cuda = nvml.gpu_host_info()
    assert len(gpus) == len(before) and driver and cuda
