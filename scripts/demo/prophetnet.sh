# Demo recipe: ProphetNet (prophetnet_summ_small: 3+3 layers, 256 wide, n = 2) trained from
# scratch on ACLSum with the future n-gram loss; decoding runs with the predicting streams
# off. Sourced by scripts/run_demo.sh (MODEL=prophetnet); every variable can be overridden.
CORPUS="${CORPUS:-aclsum}"
VOCAB_SIZE="${VOCAB_SIZE:-4000}"
MAX_EPOCH="${MAX_EPOCH:-40}"
TRAIN_ARGS=(
    --task abstractive_summarization --arch "${ARCH:-prophetnet_summ_small}" --ngram "${NGRAM:-2}"
    --criterion ngram_language_loss --label-smoothing 0.1 --ngram-gamma "${GAMMA:-1.0}"
    "${FROM_SCRATCH_ARGS[@]}"
    --max-tokens 8192 --max-source-positions 512 --max-target-positions 160
)
GEN_ARGS=(
    --task abstractive_summarization
    --beam "${BEAM:-4}" --lenpen "${LENPEN:-1.0}" --min-len "${MIN_LEN:-40}"
    --max-len-b "${MAX_LEN_B:-140}" --no-repeat-ngram-size "${NO_REPEAT:-3}"
    --max-source-positions 512 --max-target-positions 160 --required-batch-size-multiple 1
)
