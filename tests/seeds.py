"""NVIDIA's DGX Spark "Speculative Decoding" playbook recipes, written down verbatim
(NVIDIA/dgx-spark-playbooks nvidia/speculative-decoding/README.md): the first version (commit
c76a272, 2025-10-03, image release:spark-single-gpu-dev), which is our seed, and the current one
(commit 2022e2b, "Last Updated: 04/20/2026", image release:1.3.0rc12). The Draft-Target recipe is
the same in both. Each `*_SERVE` is the recipe's trtllm-serve line without its extra-options path.
"""

# Seed, "Example 1: Eagle3 Speculative Decoding with GPT-OSS 120B"
SPARK_2510_EAGLE3 = """
enable_attention_dp: false
disable_overlap_scheduler: true
enable_autotuner: false
cuda_graph_config:
    max_batch_size: 1
speculative_config:
    decoding_type: Eagle
    max_draft_len: 4
    speculative_model_dir: /opt/gpt-oss-120b-Eagle3/

kv_cache_config:
    enable_block_reuse: false
"""
SPARK_2510_EAGLE3_SERVE = ("trtllm-serve openai/gpt-oss-120b --backend pytorch --tp_size 1 --max_batch_size 1 "
                           "--kv_cache_free_gpu_memory_fraction 0.95")
# "Example 2" (2025-10) = "Option 2" (2026-04): Draft Target
SPARK_DRAFT_TARGET = """
print_iter_log: false
disable_overlap_scheduler: true
speculative_config:
  decoding_type: DraftTarget
  max_draft_len: 4
  speculative_model_dir: /opt/Llama-3.1-8B-Instruct-FP4/
kv_cache_config:
  enable_block_reuse: false
"""
SPARK_DRAFT_TARGET_SERVE = ("trtllm-serve nvidia/Llama-3.3-70B-Instruct-FP4 --backend pytorch --tp_size 1 "
                            "--max_batch_size 1 --kv_cache_free_gpu_memory_fraction 0.9")
# 2026-04, "Option 1: EAGLE-3"
SPARK_2604_EAGLE3 = """
enable_attention_dp: false
disable_overlap_scheduler: false
enable_autotuner: false
cuda_graph_config:
    max_batch_size: 1
speculative_config:
    decoding_type: Eagle
    max_draft_len: 5
    speculative_model_dir: /opt/gpt-oss-120b-Eagle3/

kv_cache_config:
    free_gpu_memory_fraction: 0.9
    enable_block_reuse: false
"""
SPARK_2604_EAGLE3_SERVE = "trtllm-serve openai/gpt-oss-120b --backend pytorch --tp_size 1 --max_batch_size 1"
