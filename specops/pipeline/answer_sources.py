"""Who answers the training-data prompts, by `kind`: the target served on the profile's `backend`, on the seed's
`vllm-container` (draft.train.data.server), or a running OpenAI-compatible `endpoint` (draft.train.data.endpoint).
The flow asks its source what to serve, the synthesis task how to ask it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specops.draft import store
from specops.draft.gpu import SYNTHESIS, synthesis_endpoint
from specops.draft.spec import DataSpec
from specops.draft.synthesize import openai_answerer
from specops.host.liveness import Watchdog
from specops.pipeline.backend import synthesis_backend_for
from specops.pipeline.check import watched_generate
from specops.registry import Registry
from specops.run.variant import Variant, base_method
from specops.settings import secret, settings


def on_the_profiles_backend(profile, backend):
    """The target on the profile's backend, with as many instances as requests in flight."""
    return backend, Variant(SYNTHESIS.name, base_method(), parallel=profile.draft.train.data.concurrency)


@dataclass(frozen=True)
class AnswerSource:
    # (profile, backend, server | None, variant, target) -> answer(prompt) -> text
    answerer: Callable[..., Callable[[str], str]]
    text_format: str = "chat"  # the records written: chat answers, or raw completions of the served target
    served: bool = True  # whether the flow serves serving()'s (backend, variant) for it
    serving: Callable = on_the_profiles_backend  # (profile, the profile's backend) -> (backend, variant)

    def prompt_items(self, data: DataSpec, target, cache_dir) -> list:
        """The prompts; for raw completions a conversation's user turn goes through the target's chat template."""
        raw = self.text_format == "completion"
        return store.prompt_items(data, _chat_template(target.path) if raw else None, cache_dir)


def _generate(profile, backend, server, variant, target):
    watch = Watchdog(server, "training-data synthesis")
    return lambda prompt: watched_generate(backend, server, variant, prompt, profile.draft.train.data.max_tokens, watch)


def _ask_vllm(profile, backend, server, variant, target):
    endpoint = synthesis_endpoint(server)
    return openai_answerer(endpoint.url, endpoint.model, profile.draft.train.data.max_tokens,
                           profile.serving.request_timeout_s, endpoint.api_key)


def _ask_endpoint(profile, backend, server, variant, target):
    data = profile.draft.train.data
    return openai_answerer(data.endpoint, data.endpoint_model or target.source, data.max_tokens,
                           profile.serving.request_timeout_s, secret(settings().specops_endpoint_api_key))


ANSWER_SOURCES: Registry[AnswerSource] = Registry("training-data answer source")
ANSWER_SOURCES.register("backend", AnswerSource(_generate, text_format="completion"))
ANSWER_SOURCES.register("vllm-container", AnswerSource(_ask_vllm, serving=lambda profile, backend: (
    synthesis_backend_for(profile), SYNTHESIS)))
ANSWER_SOURCES.register("endpoint", AnswerSource(_ask_endpoint, served=False))


def answer_source(data: DataSpec) -> AnswerSource:
    """The registered source of the data section's kind (`server` and `endpoint` exclude each other)."""
    return ANSWER_SOURCES.get("vllm-container" if data.server is not None else "endpoint" if data.endpoint
                              else "backend")


def _chat_template(target_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(target_dir))
    if not getattr(tokenizer, "chat_template", None):
        return None
    return lambda text: tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                                     add_generation_prompt=True, tokenize=False)
