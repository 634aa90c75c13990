# Demo recipe: fairseq's own BART at a small size (bart_summ_small: 3+3 layers, 256 wide),
# trained from scratch on ACLSum. Sourced by scripts/run_demo.sh; every variable can be
# overridden from the environment.
CORPUS="${CORPUS:-aclsum}"
VOCAB_SIZE="${VOCAB_SIZE:-4000}"
MAX_EPOCH="${MAX_EPOCH:-60}"
SOURCE_POSITIONS="${SOURCE_POSITIONS:-320}"
TRAIN_ARGS=(
    --task abstractive_summarization --arch "${ARCH:-bart_summ_small}"
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1
    "${FROM_SCRATCH_ARGS[@]}"
    --max-tokens 6144 --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions 160
    --validate-interval 5
)
GEN_ARGS=(
    --task abstractive_summarization
    --beam "${BEAM:-4}" --lenpen "${LENPEN:-1.0}" --min-len "${MIN_LEN:-40}"
    --max-len-b "${MAX_LEN_B:-140}" --no-repeat-ngram-size "${NO_REPEAT:-3}"
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions 160
)
