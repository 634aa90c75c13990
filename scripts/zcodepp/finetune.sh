#!/usr/bin/env bash
# Fine-tune Z-Code++ on a summarization corpus with the foundation task abstractive_summarization
# (validation ROUGE-L picks the best checkpoint). Hyper-parameters: the paper's Table 8 (one
# value of each searched range), all overridable. FIE_CHUNK (256 in the paper for long inputs)
# turns fusion-in-encoder on, e.g. for aclsum_long:
#
#   INIT=checkpoints/zcodepp_phase2/checkpoint_best.pt bash scripts/zcodepp/finetune.sh
#   CORPUS=aclsum_long FIE_CHUNK=256 SOURCE_POSITIONS=8192 INIT=... bash scripts/zcodepp/finetune.sh
#
# INIT may be a phase-one, phase-two or exported checkpoint (a phase-one GDES delta is folded in
# on load). The corpus is prepared with the pre-training sentencepiece model and dictionary.
# Extra arguments go to fairseq-train.
set -euo pipefail

INIT="${INIT:?set INIT to a Z-Code++ checkpoint (phase one or two)}"
CORPUS="${CORPUS:-aclsum}"
PRETRAIN_DATA="${PRETRAIN_DATA:-data/wiki}"
DATA_DIR="${DATA_DIR:-data/zcodepp/${CORPUS}}"
SAVE="${SAVE:-checkpoints/zcodepp_${CORPUS}}"
ARCH="${ARCH:-zcodepp_base}"
FIE_CHUNK="${FIE_CHUNK:-0}"
FIE_GLOBAL_LAYERS="${FIE_GLOBAL_LAYERS:-1}"
SOURCE_POSITIONS="${SOURCE_POSITIONS:-1024}"
TARGET_POSITIONS="${TARGET_POSITIONS:-512}"
# Table 8
WARMUP="${WARMUP:-500}"
LR="${LR:-1e-5}"
BATCH_SIZE="${BATCH_SIZE:-32}"
WEIGHT_DECAY="${WEIGHT_DECAY:-0.01}"
MAX_EPOCH="${MAX_EPOCH:-10}"
ADAM_EPS="${ADAM_EPS:-1e-6}"
ADAM_BETAS="${ADAM_BETAS:-(0.9,0.999)}"
CLIP_NORM="${CLIP_NORM:-1.0}"
UPDATE_FREQ="${UPDATE_FREQ:-1}"
BEAM="${BEAM:-4}"

if [[ ! -f "${DATA_DIR}/bin/dict.source.txt" ]]; then
    python -m preprocess.prepare --corpus "${CORPUS}" --out "${DATA_DIR}" \
        --spm-model "${PRETRAIN_DATA}/bin/spm.model" --srcdict "${PRETRAIN_DATA}/bin/dict.txt" \
        ${LIMIT:+--limit "${LIMIT}"}
fi
examples=$(wc -l < "${DATA_DIR}/raw/train.source")
total_updates=$(( (examples + BATCH_SIZE * UPDATE_FREQ - 1) / (BATCH_SIZE * UPDATE_FREQ) * MAX_EPOCH ))

fairseq-train "${DATA_DIR}/bin" --user-dir user_dir \
    --task abstractive_summarization --arch "${ARCH}" --finetune-from-model "${INIT}" \
    --fie-chunk-size "${FIE_CHUNK}" --fie-global-layers "${FIE_GLOBAL_LAYERS}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --optimizer adam --adam-betas "${ADAM_BETAS}" --adam-eps "${ADAM_EPS}" --weight-decay "${WEIGHT_DECAY}" \
    --clip-norm "${CLIP_NORM}" --lr "${LR}" --lr-scheduler polynomial_decay \
    --warmup-updates "${WARMUP}" --total-num-update "${total_updates}" --max-epoch "${MAX_EPOCH}" \
    --batch-size "${BATCH_SIZE}" --update-freq "${UPDATE_FREQ}" --required-batch-size-multiple 1 \
    --eval-rouge --eval-rouge-args "{\"beam\": ${BEAM}, \"max_len_b\": ${TARGET_POSITIONS}}" \
    --best-checkpoint-metric rougeL --maximize-best-checkpoint-metric \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 10 --num-workers 0 \
    "$@"
