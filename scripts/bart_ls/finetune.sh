#!/usr/bin/env bash
# Fine-tune BART-LS on long-document summarization (aclsum_long: paper body -> abstract)
# with the foundation task abstractive_summarization; the paper's settings (pooling layers 4,
# block 1024, 16K source positions) as overridable variables. QUERY adds an instruction prefix.
#
#   INIT=checkpoints/bart_ls_long_denoising/checkpoint_best.pt bash scripts/bart_ls/finetune.sh
set -euo pipefail

DATA="${DATA:-data/aclsum_long/bin}"
INIT="${INIT:?set INIT to a BART-LS checkpoint (pre-trained or converted)}"
SAVE="${SAVE:-checkpoints/bart_ls_aclsum_long}"
ARCH="${ARCH:-bart_ls_large}"
SOURCE_POSITIONS="${SOURCE_POSITIONS:-16384}"
TARGET_POSITIONS="${TARGET_POSITIONS:-1024}"
BLOCK_SIZE="${BLOCK_SIZE:-1024}"
POOLING_LAYERS="${POOLING_LAYERS:-4}"
ATTENTION="${ATTENTION:-block}"
QUERY="${QUERY:-}"
LR="${LR:-3e-5}"
MAX_UPDATE="${MAX_UPDATE:-10000}"
MAX_TOKENS="${MAX_TOKENS:-16384}"
UPDATE_FREQ="${UPDATE_FREQ:-4}"

extra=()
if [[ -n "${QUERY}" ]]; then
    extra+=(--instruction "${QUERY}")
fi

fairseq-train "${DATA}" --user-dir user_dir \
    --task abstractive_summarization --arch "${ARCH}" \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --finetune-from-model "${INIT}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --encoder-attention "${ATTENTION}" --block-size "${BLOCK_SIZE}" --pooling-layers "${POOLING_LAYERS}" \
    --optimizer adam --adam-betas "(0.9,0.98)" --lr "${LR}" --lr-scheduler polynomial_decay \
    --warmup-updates 500 --total-num-update "${MAX_UPDATE}" --max-update "${MAX_UPDATE}" \
    --dropout 0.1 --attention-dropout 0.1 --weight-decay 0.01 --clip-norm 0.1 \
    --max-tokens "${MAX_TOKENS}" --update-freq "${UPDATE_FREQ}" \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 10 \
    "${extra[@]}" "$@"
