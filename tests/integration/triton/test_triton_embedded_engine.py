"""tritonserver serving the real DecodingEngine on the embedded SmolLM2-135M: method none and ngram."""
import json
import os
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from specops.backends.triton_server import TritonServer
from specops.triton import client
from specops.triton.model_config import python_generate_config
from specops.triton.repository import write_python_model

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CACHE = Path(os.environ.get("SPECOPS_CACHE", Path(__file__).resolve().parents[3] / ".cache" / "specops"))
# A repeating list: the model continues it, and prompt lookup finds (and gets accepted) drafts.
PROMPT = "apple, banana, cherry, date, elderberry, fig, grape, " * 2 + "apple, banana,"


@pytest.fixture(scope="module")
def embedded_server(tmp_path_factory):
    from specops.sources.embedded import fetch_embedded

    model_dir = fetch_embedded(CACHE).path
    root = tmp_path_factory.mktemp("triton-embedded")
    write_python_model(root / "repo", python_generate_config("base", model_dir=model_dir, method="none"))
    write_python_model(
        root / "repo",
        python_generate_config("spec", model_dir=model_dir, method="ngram", options={"num_speculative_tokens": 4}),
    )
    with TritonServer(root / "repo", root / "triton.log") as server:
        t0 = time.monotonic()
        endpoint = server.wait_ready(300)
        print(f"tritonserver with 2 embedded models ready in {time.monotonic() - t0:.1f}s")
        yield server, endpoint
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(root) in " ".join(p.info["cmdline"] or [])]


def test_ngram_is_lossless_and_counts_drafts(embedded_server):
    _, endpoint = embedded_server
    timings = {}
    outputs = {}
    for model in ("base", "spec"):
        t0 = time.monotonic()
        outputs[model] = client.generate(endpoint, model, PROMPT, max_tokens=32, temperature=0.0)
        timings[model] = time.monotonic() - t0
    print(f"generate 32 tokens: {timings}; output {outputs['spec']!r}")
    assert outputs["spec"] == outputs["base"]
    assert len(outputs["base"]) > 10
    base, spec = client.read_metrics(endpoint, model="base"), client.read_metrics(endpoint, model="spec")
    assert base["spec_decode_num_drafts"] == 0 and base["spec_decode_num_emitted_tokens"] > 0
    assert spec["spec_decode_num_drafts"] > 0
    assert 0 < spec["spec_decode_num_accepted_tokens"] <= spec["spec_decode_num_draft_tokens"]
    assert sum(client.accepted_per_position(spec)) == spec["spec_decode_num_accepted_tokens"]
    assert spec["spec_decode_num_emitted_tokens"] == base["spec_decode_num_emitted_tokens"]


def test_non_streamed_generate_matches_streamed(embedded_server):
    _, endpoint = embedded_server
    streamed = client.generate(endpoint, "spec", PROMPT, max_tokens=12)
    req = urllib.request.Request(
        f"http://{endpoint.http_url}/v2/models/spec/generate",
        data=json.dumps({"text_input": PROMPT, "sampling_parameters": json.dumps({"max_tokens": 12, "temperature": 0})}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as resp:
        assert json.loads(resp.read())["text_output"] == PROMPT + streamed
