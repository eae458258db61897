"""The replay's work inside the vLLM venv (run by its python: specops never imports vLLM itself).

`python worker.py REQUEST.json RESULT.json` does one of (or "tokenize": a recorded log's requests and answers as
token ids, for a replay of recorded traffic):
- "generate": the target's greedy continuations of the prompts, with vLLM's own offline engine (`vllm.LLM`), as
  the served benchmark asks for them: the prompt text sent to /v1/completions (no chat template), temperature 0,
  exactly `output_tokens` tokens (min_tokens = max_tokens, ignore_eos), the caller adding what drafts past the
  request's end are checked against;
- "simulate": greedy verification replayed over those token sequences (each request `length` tokens) for each
  setting, drafts proposed by the engines' own proposers: vLLM 0.32's n-gram matcher
  (vllm/v1/spec_decode/ngram_proposer.py, _find_longest_matched_ngram_and_propose_tokens) and arctic-inference's
  SuffixDecodingCache, driven as vllm/v1/spec_decode/suffix_decoding.py drives it.

Standalone on purpose: the vLLM venv holds no specops, and this file imports vLLM only inside the functions that
need it, so specops' own tests import `replay` with a stand-in proposer.
"""
from __future__ import annotations

import json
import sys
import time


def replay(prompt: list[int], output: list[int], proposer, k: int, length: int | None = None) -> dict:
    """One request of `length` output tokens (default: all of `output`) under greedy verification, as the engine
    steps it. The prefill samples output[0] (no drafts); each decode step then verifies the proposer's draft: the
    longest prefix equal to the true continuation is accepted and the target adds its own token, so the step emits
    accepted + 1. `output` may run past `length` (the greedy continuation beyond max_tokens): vLLM drafts and counts
    acceptances past a request's max_tokens on its last step (its scheduler caps drafts by max_model_len only,
    vllm/v1/core/sched/scheduler.py at 0.32.0), and so does this where the truth is known; past it a draft is cut."""
    import numpy as np

    length = len(output) if length is None else length
    context = list(prompt) + list(output[:1])
    proposer.begin(prompt)
    proposer.extend(output[:1])
    done, steps, drafted_steps, drafted, accepted = 1, 0, 0, 0, 0
    while done < length:
        room = min(k, len(output) - done - 1)
        draft = list(proposer.propose(np.asarray(context, dtype=np.int32), room))[:room] if room > 0 else []
        hits = 0
        while hits < len(draft) and int(draft[hits]) == output[done + hits]:
            hits += 1
        new = output[done:done + hits + 1]
        context += new
        proposer.extend(new)
        done += len(new)
        steps += 1
        drafted_steps += bool(draft)
        drafted += len(draft)
        accepted += hits
    proposer.end()
    return {"steps": steps, "emitted": length - 1, "drafted_steps": drafted_steps, "drafted": drafted,
            "accepted": accepted}


class NgramProposer:
    """vLLM's n-gram matcher over the whole context, as NgramProposer.batch_propose calls it per request."""

    def __init__(self, setting: dict, max_model_len: int):
        from vllm.v1.spec_decode.ngram_proposer import _find_longest_matched_ngram_and_propose_tokens

        self.find = _find_longest_matched_ngram_and_propose_tokens
        self.min_n, self.max_n, self.max_model_len = setting["min"], setting["max"], max_model_len

    def begin(self, prompt):
        pass

    def extend(self, tokens):
        pass

    def propose(self, context, k):
        return self.find(context, self.min_n, self.max_n, self.max_model_len, k).tolist()

    def end(self):
        pass


class SuffixProposer:
    """arctic-inference's suffix trees, fed as vLLM's SuffixDecodingProposer feeds them: the prompt's tree at the
    request's start, then every sampled token; the pattern is the context's last max_tree_depth tokens. One cache
    serves the requests in order, so with max_cached_requests > 0 earlier responses draft later ones, as served."""

    def __init__(self, setting: dict, max_model_len: int):
        from arctic_inference.suffix_decoding import SuffixDecodingCache

        self.setting, self.max_model_len, self.requests = setting, max_model_len, 0
        self.cache = SuffixDecodingCache(max_tree_depth=setting["depth"],
                                         max_cached_requests=setting["cached"])

    def begin(self, prompt):
        import numpy as np

        self.requests += 1
        self.cache.start_request(self.requests, np.asarray(prompt, dtype=np.int32))

    def extend(self, tokens):
        self.cache.add_active_response(self.requests, [int(t) for t in tokens])

    def propose(self, context, k):
        s = self.setting
        pattern = context[max(0, len(context) - s["depth"]):]
        room = min(k, self.max_model_len - len(context) - 1)
        return self.cache.speculate(self.requests, pattern, max_spec_tokens=room,
                                    max_spec_factor=s["factor"], min_token_prob=s["min_prob"]).token_ids

    def end(self):
        self.cache.stop_request(self.requests)


PROPOSERS = {"ngram": NgramProposer, "suffix": SuffixProposer}


def simulate(request: dict) -> dict:
    sequences, max_model_len = request["sequences"], request["max_model_len"]
    results = []
    for index, setting in enumerate(request["settings"]):
        proposer = PROPOSERS[setting["method"]](setting, max_model_len)
        results.append([replay(s["prompt"], s["output"], proposer, setting["k"], request.get("length"))
                        for s in sequences])
        if (index + 1) % 20 == 0:
            print(f"replay: {index + 1}/{len(request['settings'])} settings simulated", file=sys.stderr, flush=True)
    return {"results": results}


def chat_conversation(prompt: str) -> list[dict]:
    """One prompt as a chat request's messages: one user message, as specops.bench.prompts.chat_messages builds
    them for the benchmark and the lossless check (this file imports no specops; a test holds the two equal)."""
    return [{"role": "user", "content": prompt.strip()}]


def generate(request: dict) -> dict:
    from vllm import LLM, SamplingParams

    n = request["output_tokens"]
    llm = LLM(model=request["model"], **request["engine_args"])
    params = SamplingParams(temperature=0.0, max_tokens=n, min_tokens=n, ignore_eos=True)
    if request.get("chat"):  # rendered as the chat endpoint renders them, through the target's chat template
        outputs = llm.chat([chat_conversation(p) for p in request["prompts"]], params, use_tqdm=False)
    else:
        outputs = llm.generate(request["prompts"], params, use_tqdm=False)
    return {"sequences": [{"prompt": list(o.prompt_token_ids), "output": list(o.outputs[0].token_ids)}
                          for o in outputs]}


def tokenize(request: dict) -> dict:
    """Recorded requests and their answers as token ids, with the target's tokenizer as vLLM's server uses it: a chat
    request's messages rendered by the chat template with the generation prompt, then tokenized without special
    tokens (ChatCompletionRequest.add_special_tokens defaults to false), a completion's text with them (true for
    CompletionRequest); the answer without (vllm/entrypoints/openai/{chat_completion,completion}/protocol.py)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(request["model"])
    sequences = []
    for r in request["records"]:
        if r["messages"] is not None:
            text = tok.apply_chat_template(r["messages"], add_generation_prompt=True, tokenize=False)
            prompt = tok(text, add_special_tokens=False)["input_ids"]
        else:
            prompt = tok(r["prompt"], add_special_tokens=True)["input_ids"]
        answer = tok(r["answer"], add_special_tokens=False)["input_ids"]
        sequences.append({"prompt": list(prompt), "output": list(answer)})
    return {"sequences": sequences}


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as fh:
        request = json.load(fh)
    start = time.monotonic()
    result = {"generate": generate, "simulate": simulate, "tokenize": tokenize}[request["mode"]](request)
    result["seconds"] = time.monotonic() - start
    with open(argv[2], "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":  # vLLM's engine may spawn processes, which re-import this module
    sys.exit(main(sys.argv))
