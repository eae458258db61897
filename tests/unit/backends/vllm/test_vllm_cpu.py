"""The vLLM CPU engine's host facts: which CPUs its kernels run on, and the cores of servers side by side."""
from __future__ import annotations

from specops.backends.vllm import cpu as vllm_cpu


def test_a_cpu_without_the_kernels_instruction_sets_cannot_serve(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx\n\nprocessor\t: 1\nflags\t\t: fpu sse avx\n")
    flags = vllm_cpu.cpu_flags(cpuinfo)
    assert flags == {"fpu", "sse", "sse2", "avx"}
    problem = vllm_cpu.isa_problem(flags)
    assert problem and "avx512f, avx2" in problem and "import_kernels" in problem
    assert vllm_cpu.isa_problem(flags | {"avx2"}) is None and vllm_cpu.isa_problem(flags | {"avx512f"}) is None
    assert vllm_cpu.isa_problem(None) is None  # unknown (not Linux): vLLM's own start-up says
    assert vllm_cpu.cpu_flags(tmp_path / "missing") is None


def test_servers_side_by_side_get_cores_of_their_own_only_where_one_stays_spare():
    assert vllm_cpu.core_share(0, 2, [0, 1]) is None  # 2 cores: vLLM's default for both, the same for each
    assert vllm_cpu.core_share(0, 2, [0, 1, 2]) == "0" and vllm_cpu.core_share(1, 2, [0, 1, 2]) == "1"
    assert vllm_cpu.core_share(0, 2, list(range(8))) == "0,1,2" and vllm_cpu.core_share(1, 2, list(range(8))) == "3,4,5"
    assert vllm_cpu.core_share(0, 1, list(range(8))) is None  # one server: vLLM's own choice


def test_preflight_names_a_pinned_distribution_the_venv_lacks(tmp_path, monkeypatch):
    """arctic-inference (suffix decoding) is pinned beside vllm-cpu: a venv without it is named, with the fix."""
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text('#!/bin/sh\necho \'{"vllm-cpu": "0.32.0", "arctic-inference": null}\'\n')
    python.chmod(0o755)
    monkeypatch.setattr(vllm_cpu, "venv", lambda: vllm_cpu.VllmVenv(tmp_path))
    monkeypatch.setattr(vllm_cpu, "cpu_flags", lambda: {"avx2"})
    assert vllm_cpu.pinned() == {"vllm-cpu": "0.32.0", "arctic-inference": "0.3.0"}
    problems = vllm_cpu.preflight()
    assert len(problems) == 1 and "holds arctic-inference (none)" in problems[0] and "make install" in problems[0]
