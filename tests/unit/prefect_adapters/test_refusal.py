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
    with refusal.handed_over(("ngram-local", SET, handed)):
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


def test_a_refusal_names_the_runs_overrides_and_profile_not_the_clis_flag_nor_a_clone_path(harness):
    """Issue 51: a deployment's run refused on the worker named `--set` (a CLI flag) and the worker's temporary clone
    path."""
    from specops.profile.loader import profiles_dir

    @flow
    def toy(profile: str, overrides: list[str]):
        return refusal.loaded_or_refused(profile, overrides)

    state = toy("ngram-local", ["benchmark.num_requests=-3"], return_state=True)
    assert state.is_failed() and "profiles/ngram-local.yaml (with overrides benchmark.num_requests=-3)" in state.message
    assert "--set" not in state.message and str(profiles_dir()) not in state.message, state.message
    state = toy("ngram-local", ["num_requests 4"], return_state=True)
    assert "overrides: num_requests 4: expected key=value" in state.message, state.message


def test_the_engines_line_for_a_refused_run_carries_no_traceback():
    """prefect/flow_engine.py run_flow logs every Failed deployment run as "Engine execution exited with unexpected
    exception" with its traceback; for a refusal the refusal's own line said why."""
    import logging

    from specops.profile.errors import ProfileError

    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append
    logger = logging.getLogger("prefect.flow_runs")
    logger.addHandler(handler)
    try:
        for error in (ProfileError("overrides", [("benchmark.num_requests", "too few")]), RuntimeError("a fault")):
            try:
                raise error
            except Exception:
                logger.error("Engine execution exited with unexpected exception", exc_info=True)
    finally:
        logger.removeHandler(handler)
    refused, fault = seen
    assert (refused.levelno, refused.exc_info, refused.getMessage()) == (
        logging.INFO, None, "Engine execution ended: the run was refused (the line above says why)")
    assert fault.levelno == logging.ERROR and fault.exc_info is not None  # a fault keeps its traceback


def test_compare_upgrade_and_calibrate_load_each_profile_once_and_hand_each_run_its_load(harness, monkeypatch,
                                                                                            tmp_path):
    """Issue 52: a comparison of N profiles loaded them 4N times, an upgrade check its profile 8 times. Each flow
    here is real, under the harness; its member runs are stand-ins (a whole run of each is another test's), each a
    flow whose first act is the real one of specdec's: loaded_or_refused."""
    import flows.calibrate as calibrating
    import flows.compare as comparing
    import flows.upgrade as upgrading
    from specops.results.calibration import AA_OVERRIDE
    from specops.upgrade.defaults import CPU_REFERENCE
    from tests.results_factory import run_result

    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    loads, members = [], []

    def counted(*args):
        loads.append(args)
        return load_profile(*args)

    @flow
    def member(profile: str, overrides: list[str]):
        return refusal.loaded_or_refused(profile, overrides)

    def run(profile, overrides, role=None):
        members.append((profile, list(overrides), member(profile, overrides)))
        return run_result(profile=profile)

    monkeypatch.setattr(refusal, "load_profile", counted)
    for module in (comparing, upgrading, calibrating):
        monkeypatch.setattr(module, "run_specdec", run)
    monkeypatch.setattr(comparing, "publish_comparison", lambda results, run_id: "table")
    monkeypatch.setattr(upgrading, "publish_upgrade", lambda profile, sides, results, run_id: "table")
    monkeypatch.setattr(calibrating, "publish_calibration", lambda calibration, run_id: "table")
    pair = ["ngram-vllm-serve-cpu", "suffix-vllm-serve-cpu"]
    assert comparing.compare(pair, SET) == "table"
    assert loads == [(p, SET) for p in pair] and [(p, o) for p, o, _ in members] == [(p, SET) for p in pair]
    assert [m.profile.method.kind for _, _, m in members] == ["ngram", "suffix"]
    loads[:], members[:] = [], []
    assert upgrading.upgrade("ngram-vllm-serve-cpu", [CPU_REFERENCE], [], SET) == "table"
    assert loads == [("ngram-vllm-serve-cpu", SET)]  # the sides are the one load with their own overrides on top
    assert [o for _, o, _ in members] == [[*SET, CPU_REFERENCE], SET]
    assert [m.profile.backend.kind for _, _, m in members] == ["local", "vllm-serve"]
    loads[:], members[:] = [], []
    assert calibrating.calibrate("ngram-local", 2, SET, "", 2) == "table"
    assert loads == [("ngram-local", SET)]
    assert [o for _, o, _ in members] == [[*SET, AA_OVERRIDE]] * 2 + [SET] * 2
    assert [m.profile.method.kind for _, _, m in members] == ["none"] * 2 + ["ngram"] * 2
