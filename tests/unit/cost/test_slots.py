"""Slot names: one per GPU board (so overlapping GPU requests on a host exclude each other), one per
host for a CPU profile that asks for it, none otherwise; the profile field that decides is validated."""
from __future__ import annotations

import pytest

from specops.cost.slots import RunSlots, run_slots, slot_names
from specops.pipeline.backend import backend_for
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile

# What NVML would answer on a 2-GPU host (recorded, not read: there is no GPU here).
BOARDS = {0: "GPU-6f1b2c3d-aaaa", 1: "GPU-0c9e8d7f-bbbb"}


def names(exclusive, gpus, boards=BOARDS, host="gpu-host-1"):
    return slot_names(exclusive, gpus, hostname=host, uuids=lambda: boards)


def test_a_cpu_backend_holds_a_slot_only_when_asked():
    assert names(None, "none") == [] and names(False, "none") == []
    assert names(True, "none") == ["cpu:gpu-host-1"]


def test_every_run_takes_the_host_lock_of_its_slots_unless_it_shares_its_devices():
    slots = lambda exclusive, gpus: run_slots(exclusive, gpus, hostname="h", uuids=lambda: BOARDS)  # noqa: E731
    assert slots(None, "none") == RunSlots(limits=[], locks=["cpu:h"])  # a CLI run and a worker's run of this host
    assert slots(True, "none") == RunSlots(limits=["cpu:h"], locks=["cpu:h"])
    assert slots(None, "1") == RunSlots(limits=["gpu:h:GPU-6f1b2c3d-aaaa"], locks=["gpu:h:GPU-6f1b2c3d-aaaa"])
    assert slots(False, "none") == slots(False, "all") == RunSlots(limits=[], locks=[])


@pytest.mark.parametrize("gpus, boards", [
    ("all", ["GPU-0c9e8d7f-bbbb", "GPU-6f1b2c3d-aaaa"]), ("2", ["GPU-0c9e8d7f-bbbb", "GPU-6f1b2c3d-aaaa"]),
    ("1", ["GPU-6f1b2c3d-aaaa"]), ("device=1", ["GPU-0c9e8d7f-bbbb"]), ("1,0", ["GPU-0c9e8d7f-bbbb", "GPU-6f1b2c3d-aaaa"]),
    ("GPU-0c9e8d7f-bbbb", ["GPU-0c9e8d7f-bbbb"]),
])
def test_a_gpu_backend_holds_one_slot_per_board(gpus, boards):
    assert names(None, gpus) == [f"gpu:gpu-host-1:{b}" for b in boards]
    assert names(True, gpus) == names(None, gpus)


def test_runs_on_all_gpus_and_on_one_of_them_share_a_slot():
    assert set(names(None, "all")) & set(names(None, "device=0")) == {"gpu:gpu-host-1:GPU-6f1b2c3d-aaaa"}
    assert not set(names(None, "device=0")) & set(names(None, "device=1"))


@pytest.mark.parametrize("gpus", ["all", "0,2", "2", "device=1", "GPU-0c9e8d7f-bbbb"])
def test_without_nvml_every_gpu_request_holds_the_host_wide_slot(gpus):
    """"all" and "0" must exclude each other, and without NVML nothing says which board an index is."""
    assert names(None, gpus, boards=None) == ["gpu:gpu-host-1:all"]


def test_a_gpu_profile_can_opt_out():
    assert names(False, "all") == []


def test_names_carry_no_character_prefect_refuses():
    assert names(True, "none", host="a/b%c&d<e>f") == ["cpu:a-b-c-d-e-f"]


def test_the_embedded_profile_takes_a_host_slot_through_its_serving_field():
    loaded = load_profile("ngram-local", ["serving.exclusive=true"])
    gpus = backend_for(loaded.profile).gpus()
    assert slot_names(loaded.profile.serving.exclusive, gpus, hostname="h") == ["cpu:h"]
    assert slot_names(load_profile("ngram-local").profile.serving.exclusive, gpus, hostname="h") == []


def test_the_serving_field_is_validated():
    with pytest.raises(ProfileError, match="serving.exclusive"):
        load_profile("ngram-local", ["serving.exclusive=sometimes"])
