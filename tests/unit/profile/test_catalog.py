from specops.profile.catalog import format_catalog
from specops.profile.loader import list_profile_names


def test_profiles_command_lists_every_profile_and_the_matrix():
    text = format_catalog()
    assert "INVALID" not in text
    for name in list_profile_names():
        assert f"  {name} " in text
    matrix = text.split("method x backend:")[1].strip().split("\n\n")[0].splitlines()
    rows = {line.split()[0]: line.split()[1:7] for line in matrix[1:]}
    header = matrix[0].split()[1:]
    assert header == ["local", "trtllm", "trtllm-engine", "trtllm-serve", "vllm", "vllm-serve"]
    # Medusa: the embedded runtime, the engine backend and vLLM (under Triton or its own server); never the LLM API
    assert rows["medusa"] == ["yes", "-", "yes", "-", "yes", "yes"]
    assert rows["ngram"][0] == "yes" and rows["eagle3"][2] == "-"  # no EAGLE-3 engines
    assert "GPU profiles: image -> versions inside it:" in text and "TensorRT-LLM 1.2.1" in text
