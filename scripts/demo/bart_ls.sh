# Demo recipe: BART-LS at a small size (bart_ls_small: 3 + 3 layers, 256 wide, block-sparse
# encoder with pooled attention in the top layer) trained from scratch on aclsum_long (paper body -> abstract,
# 4K source tokens). Sourced by scripts/run_demo.sh (MODEL=bart_ls); every variable can be
# overridden from the environment.
CORPUS="${CORPUS:-aclsum_long}"
VOCAB_SIZE="${VOCAB_SIZE:-4000}"
MAX_EPOCH="${MAX_EPOCH:-40}"
EVAL_ROUGE_ARGS='{"beam": 1, "min_len": 40, "max_len_b": 200, "no_repeat_ngram_size": 3}'
TRAIN_ARGS=(
    --task abstractive_summarization --arch "${ARCH:-bart_ls_small}"
    --encoder-attention "${ATTENTION:-block}" ${BLOCK_SIZE:+--block-size "${BLOCK_SIZE}"}
    ${POOLING_LAYERS:+--pooling-layers "${POOLING_LAYERS}"}
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1
    "${FROM_SCRATCH_ARGS[@]}"
    --max-tokens 8192 --max-source-positions "${SOURCE_POSITIONS:-4096}" --max-target-positions 512
)
GEN_ARGS=(
    --task abstractive_summarization --required-batch-size-multiple 1
    --beam "${BEAM:-4}" --lenpen "${LENPEN:-2.0}" --min-len "${MIN_LEN:-40}"
    --max-len-b "${MAX_LEN_B:-200}" --no-repeat-ngram-size "${NO_REPEAT:-3}"
    --max-source-positions "${SOURCE_POSITIONS:-4096}" --max-target-positions 512
)
