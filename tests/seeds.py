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

# --- NVIDIA's ModelOpt speculative-decoding example, the seed of the trained-draft profiles ----------------
# NVIDIA/TensorRT-Model-Optimizer@7af33d29ce71beda15f2df5ce43bec7c214cb246 (tag 0.31.0, the first release whose
# example synthesizes data with server_generate.py), examples/speculative_decoding/README.md lines 18-19, 25-26
# and 132-148, and the command launch.sh builds with its defaults (launch.sh lines 98 and 125-148), verbatim.
MODELOPT_SEED_VLLM = """
pip install vllm
vllm serve TinyLlama/TinyLlama-1.1B-Chat-v1.0 --api-key token-abc123 --port 8000  --tensor-parallel-size 1
"""
MODELOPT_SEED_DATA = """
git clone https://huggingface.co/datasets/nvidia/Daring-Anteater
python3 server_generate.py --data_path Daring-Anteater/train.jsonl --output_path finetune/data.jsonl --max_token 512
"""
MODELOPT_SEED_TRAIN = """
./launch.sh --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 \\
            --data finetune/data.jsonl \\
            --mode medusa \\
            --num_epochs 1 --lr 1e-5 --save_steps 1000 \\
            --output_dir medusa-tinyllama \\
            --fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer \\
            --num_gpu 1 \\
            --medusa_num_heads 2 --medusa_num_layers 1

./launch.sh --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 \\
            --data finetune/data.jsonl \\
            --mode eagle \\
            --num_epochs 1 --lr 1e-5 --save_steps 1000 \\
            --output_dir eagle-tinyllama \\
            --fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer \\
            --num_gpu 1 \\
            --eagle_num_layers 1
"""
MODELOPT_SEED_LAUNCH = """
TRAIN_BS=${TRAIN_BS:-4}
CMD="accelerate launch $MULTI_GPU --mixed_precision bf16 main.py \\
    --mode $MODE \\
    --model_name_or_path $MODEL \\
    --model_max_length 2048 \\
    --dataloader_drop_last True \\
    --bf16 True \\
    --output_dir $OUTPUT_DIR \\
    --num_train_epochs $NUM_EPOCHS \\
    --per_device_train_batch_size $TRAIN_BS \\
    --per_device_eval_batch_size $TRAIN_BS \\
    --gradient_accumulation_steps 1 \\
    --do_eval $DO_EVAL \\
    --eval_accumulation_steps 1 \\
    --save_strategy steps \\
    --save_steps $SAVE_STEPS \\
    --learning_rate $LR \\
    --weight_decay 0.0 \\
    --warmup_steps 100 \\
    --lr_scheduler_type linear \\
    --logging_steps 1 \\
    --tf32 True \\
    --data_path $DATA \\
    $FSDP_ARGS \\
    $SPECULATIVE_ARGS
"
"""
# main.py lines 87-92 (EagleArguments) at the same commit: the EAGLE module the seed's --mode eagle builds.
MODELOPT_SEED_EAGLE_ARGS = """
@dataclass
class EagleArguments:
    eagle_num_layers: int | None = field(default=1)
    use_input_layernorm_in_first_layer: bool | None = field(default=True)
    use_last_layernorm: bool | None = field(default=False)
"""
