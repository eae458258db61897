"""A flow's profile: the load its caller hands over (`specops run` loads it before Prefect starts) is taken as it is,
in a real flow run (a test harness server); any other profile or overrides, or a call outside the hand-over, loads
from disk, and a bad one is still refused."""
from __future__ import annotations

from prefect import flow

import prefect_adapters.refusal as refusal
from specops.profile.loader import load_profile

SET = ["benchmark.num_requests=4"]


def test_a_flow_takes_the_profile_its_caller_handed_over_and_loads_any_other(harness, monkeypatch):
    loads = []

    def counted(*args):
        loads.append(args)
        return load_profile(*args)

    monkeypatch.setattr(refusal, "load_profile", counted)

    @flow
    def toy(profile: str, overrides: list[str]):
        return refusal.loaded_or_refused(profile, overrides)

    handed = load_profile("ngram-local", SET)
    with refusal.handed_over("ngram-local", SET, handed):
        assert toy("ngram-local", SET) is handed and loads == []
        assert toy("ngram-local", []).overrides == () and loads == [("ngram-local", [])]
        state = toy("no-such-profile", SET, return_state=True)
    assert state.is_failed() and "no-such-profile" in state.message
    assert toy("ngram-local", SET) is not handed and loads[-1] == ("ngram-local", SET)  # the block is over


def test_a_taken_or_malformed_run_id_is_refused_before_the_first_run_naming_the_parameter(harness, monkeypatch,
                                                                                          tmp_path):
    """Issue 51: a calibration refused its run id after all its A/A runs, and a sweep 26 s in with a traceback."""
    import flows.calibrate as calibrating

    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    (tmp_path / "artifacts" / "calibrate" / "ngram-local" / "taken").mkdir(parents=True)
    ran = []
    monkeypatch.setattr(calibrating, "run_specdec", lambda *args, **kwargs: ran.append(args))
    for run_id, said in (("taken", "run_id 'taken': a directory already exists"), ("../esc", "run_id '../esc': use")):
        state = calibrating.calibrate("ngram-local", 2, [], run_id, return_state=True)
        assert state.is_failed() and state.message.startswith(said), state.message
    assert ran == []
