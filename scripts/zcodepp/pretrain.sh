#!/usr/bin/env bash
# Z-Code++ phase one (Section 2.1): RTD + MLM + CSP on plain text with gradient-disentangled
# embedding sharing, through fairseq-train --user-dir user_dir. Prepares the wiki corpus
# (its sentencepiece model and dictionary are then reused by phase two and fine-tuning).
#
#   bash scripts/zcodepp/pretrain.sh
#   ARCH=zcodepp_large MAX_UPDATE=1000000 UPDATE_FREQ=16 bash scripts/zcodepp/pretrain.sh
#
# The paper: 6-layer generator, lambda 1/30/1, AdamW, 1M steps of 2048 x 512 tokens (Large).
# Learning rate and warm-up are not given in the paper (LR/WARMUP below are our defaults).
# Extra arguments go to fairseq-train.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

defaults CORPUS=wiki VOCAB_SIZE=8000
defaults DATA_DIR="data/${CORPUS}" SAVE=checkpoints/zcodepp_phase1 ARCH=zcodepp_base GENERATOR_LAYERS=6 \
    TOKENS_PER_SAMPLE=512 MLM_WEIGHT=1 RTD_WEIGHT=30 CSP_WEIGHT=1 MASK_PROB=0.15 NOISE_DENSITY=0.15 MEAN_SPAN=3 \
    LR=3e-4 WARMUP=10000 MAX_UPDATE=1000000 MAX_TOKENS=16384 UPDATE_FREQ=1

if [[ ! -f "${DATA_DIR}/bin/dict.txt" ]]; then
    python -m preprocess.prepare --corpus "${CORPUS}" --out "${DATA_DIR}" --vocab-size "${VOCAB_SIZE}" \
        ${LIMIT:+--limit "${LIMIT}"}
fi

fairseq-train "${DATA_DIR}/bin" --user-dir "${REPO}/user_dir" \
    --task zcodepp_pretraining --tokens-per-sample "${TOKENS_PER_SAMPLE}" \
    --mask-prob "${MASK_PROB}" --noise-density "${NOISE_DENSITY}" --mean-span-length "${MEAN_SPAN}" \
    --arch "${ARCH}" --generator-layers "${GENERATOR_LAYERS}" \
    --criterion zcodepp_joint --mlm-weight "${MLM_WEIGHT}" --rtd-weight "${RTD_WEIGHT}" --csp-weight "${CSP_WEIGHT}" \
    --optimizer adam --adam-betas "(0.9,0.999)" --adam-eps 1e-6 --weight-decay 0.01 --clip-norm 1.0 \
    --lr "${LR}" --lr-scheduler polynomial_decay --warmup-updates "${WARMUP}" \
    --total-num-update "${MAX_UPDATE}" --max-update "${MAX_UPDATE}" \
    --max-tokens "${MAX_TOKENS}" --update-freq "${UPDATE_FREQ}" \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 10 --num-workers 0 \
    "$@"
