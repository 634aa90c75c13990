# Demo recipe: Z-Code++ (disentangled-attention encoder + standard decoder) at a small size
# (3 + 3 layers, 256 wide, 4 heads, 64 relative buckets up to distance 256), trained from
# scratch on ACLSum like the BART demo (no pre-training: the two CPU cores of the main job do
# not allow it; scripts/zcodepp/ holds the full pipeline). Sourced by scripts/run_demo.sh;
# every variable can be overridden from the environment.
CORPUS="${CORPUS:-aclsum}"
VOCAB_SIZE="${VOCAB_SIZE:-4000}"
MAX_EPOCH="${MAX_EPOCH:-40}"
TRAIN_ARGS=(
    --task abstractive_summarization --arch "${ARCH:-zcodepp_base}"
    --encoder-layers "${LAYERS:-3}" --decoder-layers "${LAYERS:-3}"
    --encoder-embed-dim "${DIM:-256}" --encoder-ffn-embed-dim "${FFN:-1024}"
    --encoder-attention-heads "${HEADS:-4}" --decoder-attention-heads "${HEADS:-4}"
    --rel-pos-buckets "${BUCKETS:-64}" --max-relative-positions "${MAX_DISTANCE:-256}"
    --fie-chunk-size "${FIE_CHUNK:-0}"
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1
    --optimizer adam --adam-betas "(0.9,0.98)" --lr "${LR:-1e-3}"
    --lr-scheduler inverse_sqrt --warmup-updates 50
    --dropout 0.1 --weight-decay 0.01 --clip-norm 1.0
    --max-tokens 8192 --max-source-positions 512 --max-target-positions 160
)
GEN_ARGS=(
    --beam "${BEAM:-4}" --lenpen "${LENPEN:-1.0}" --min-len "${MIN_LEN:-40}"
    --max-len-b "${MAX_LEN_B:-140}" --no-repeat-ngram-size "${NO_REPEAT:-3}"
    --max-source-positions 512 --max-target-positions 160
)
