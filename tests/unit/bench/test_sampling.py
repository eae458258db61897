"""Which prompts a run sends: the file's formats, categories chosen and sampled, and bad asks refused naming the field
and the file (Spec-Bench's and MT-Bench's files from ../shared/reference)."""
import json
from collections import Counter

import pytest

from specops.bench.prompts import PromptFileError, load_prompts, read_records
from specops.bench.sampling import WorkloadError, workload_of
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile
from tests.reference import REFERENCE

SPEC_BENCH = REFERENCE / "spec_bench" / "question.jsonl"
MT_BENCH = REFERENCE / "eagle_data" / "mt_bench_question.jsonl"


def bench(*overrides: str, profile: str = "ngram-vllm-serve-cpu"):
    return load_profile(profile, list(overrides)).profile.benchmark


def test_check_prompts_follow_the_benchmark_prompts(tmp_path):
    w = workload_of(bench("benchmark.num_requests=5", "benchmark.warmup_requests=1"), 3, tmp_path)
    humaneval = load_prompts("humaneval")
    assert (w.prompts, w.warmup, w.measured, w.check) == (humaneval[:6], 1, humaneval[1:6], humaneval[6:9])
    assert not w.conversations and w.categories == [None] * 6 and w.named_categories() == []


def test_check_prompts_wrap_to_the_start_when_the_source_is_short(tmp_path):
    w = workload_of(bench("benchmark.num_requests=200"), 2, tmp_path)
    assert w.check == load_prompts("humaneval")[:2]
    assert len(w.measured) == 200 and w.measured[164 - w.warmup] == w.prompts[0]  # the tool wraps around


def test_every_format_gives_its_first_user_turn_and_its_category(tmp_path):
    lines = [{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
                           {"role": "assistant", "content": "hello"}], "category": "chat"},
             {"conversations": [{"from": "human", "value": "q1"}, {"from": "gpt", "value": "a1"}]},
             {"turns": ["t1", "t2"], "category": "writing"},
             {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    records = read_records(path)
    assert [(r.text, r.category, r.chat) for r in records] == [
        ("hi", "chat", True), ("q1", None, True), ("t1", "writing", True), ("a\nb", None, True)]


def test_a_file_mixing_conversations_and_plain_text_is_refused_at_the_line(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"turns": ["q"]}\n{"text": "raw"}\n')
    with pytest.raises(PromptFileError, match="line 1 is a conversation"):
        read_records(path)


def test_categories_are_sampled_n_each_by_seed_round_robin_and_warm_up_is_not_drawn(tmp_path):
    asked = ("benchmark.prompts=" + str(SPEC_BENCH), "benchmark.categories=[qa, rag, translation]",
             "benchmark.per_category=3", "benchmark.warmup_requests=1", "benchmark.seed=7")
    w = workload_of(bench(*asked), 2, tmp_path)
    assert w.conversations and w.seed == 7 and w.requests == 9 and w.warmup == 1
    assert w.measured_categories == ["qa", "rag", "translation"] * 3  # round robin over the categories
    assert w.named_categories() == ["qa", "rag", "translation"]
    assert w.prompts[0] not in w.measured and not set(w.check) & set(w.measured)
    same, other = workload_of(bench(*asked), 2, tmp_path), workload_of(bench(*asked[:-1], "benchmark.seed=8"), 2,
                                                                       tmp_path)
    assert same.prompts == w.prompts and other.measured != w.measured  # the seed decides, and only it
    texts = {json.loads(line)["turns"][0]: json.loads(line)["category"] for line in SPEC_BENCH.read_text().splitlines()}
    assert [texts[p] for p in w.prompts] == w.categories  # each prompt keeps its own category


def test_per_category_sets_the_number_of_measured_requests():
    asked = ("benchmark.prompts=spec-bench", "benchmark.categories=[coding, writing]", "benchmark.per_category=3")
    assert bench(*asked).num_requests == bench(*asked, "benchmark.num_requests=5").num_requests == 6


@pytest.mark.parametrize(("overrides", "field", "says"), [
    (("benchmark.prompts=spec-bench", "benchmark.categories=[coding, poetry]"), "benchmark.categories",
     "['poetry'] not in spec-bench; its categories: writing (10), roleplay (10)"),
    ((f"benchmark.prompts={MT_BENCH}", "benchmark.categories=[qa]"), "benchmark.categories",
     f"['qa'] not in {MT_BENCH}; its categories: writing (10)"),
    (("benchmark.categories=[coding]",), "benchmark.categories", "humaneval has no `category` on its lines"),
    ((f"benchmark.prompts={SPEC_BENCH}", "benchmark.categories=[writing, qa]", "benchmark.num_requests=4"),
     "benchmark.categories", "['qa'] get no measured prompt"),
    (("benchmark.prompts=mt-bench", "benchmark.categories=[coding]", "benchmark.per_category=11"),
     "benchmark.per_category", "11 prompts from each category, but mt-bench has fewer in ['coding']"),
    (("benchmark.per_category=2",), "benchmark.per_category", "samples from each of benchmark.categories"),
    (("benchmark.prompts=spec-bench", "benchmark.categories=[qa]", "benchmark.mix={rag: 1}"), "benchmark.mix",
     "['rag'] not among benchmark.categories"),
    (("benchmark.prompts=spec-bench.json",), "benchmark.prompts", "prompts must be one of ['humaneval', "
     "'spec-bench', 'mt-bench']"),
])
def test_a_category_the_prompts_cannot_give_is_refused_at_load_naming_the_field_and_file(overrides, field, says):
    with pytest.raises(ProfileError) as caught:
        bench(*overrides)
    assert field in str(caught.value) and says in str(caught.value), str(caught.value)


def test_the_named_workloads_catalogue_matches_the_reference_files():
    from specops.bench.workloads import WORKLOADS, known_copy

    for name, path in (("spec-bench", SPEC_BENCH), ("mt-bench", MT_BENCH)):
        records = read_records(path)
        assert WORKLOADS[name].categories == dict(Counter(r.category for r in records))
        assert known_copy(path) is WORKLOADS[name] and all(r.chat for r in records)


def test_a_workload_error_names_the_field():
    err = WorkloadError("benchmark.categories", "x")
    assert (err.field, str(err)) == ("benchmark.categories", "benchmark.categories: x")
