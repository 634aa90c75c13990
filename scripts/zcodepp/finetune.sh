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
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

INIT="${INIT:?set INIT to a Z-Code++ checkpoint (phase one or two)}"
defaults CORPUS=aclsum PRETRAIN_DATA=data/wiki
defaults DATA_DIR="data/zcodepp/${CORPUS}" SAVE="checkpoints/zcodepp_${CORPUS}" ARCH=zcodepp_base FIE_CHUNK=0 \
    FIE_GLOBAL_LAYERS=1 SOURCE_POSITIONS=1024 TARGET_POSITIONS=512 BEAM=4
# Table 8
defaults WARMUP=500 LR=1e-5 BATCH_SIZE=32 WEIGHT_DECAY=0.01 MAX_EPOCH=10 ADAM_EPS=1e-6 ADAM_BETAS="(0.9,0.999)" \
    CLIP_NORM=1.0 UPDATE_FREQ=1

prepare_with_vocabulary "${CORPUS}" "${DATA_DIR}" "${PRETRAIN_DATA}/bin"
examples=$(wc -l < "${DATA_DIR}/raw/train.source")
total_updates=$(( $(updates_per_epoch "${examples}" $(( BATCH_SIZE * UPDATE_FREQ ))) * MAX_EPOCH ))
linear_decay_args "${total_updates}"

fairseq-train "${DATA_DIR}/bin" --user-dir "${REPO}/user_dir" \
    --task abstractive_summarization --arch "${ARCH}" --finetune-from-model "${INIT}" \
    --fie-chunk-size "${FIE_CHUNK}" --fie-global-layers "${FIE_GLOBAL_LAYERS}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    "${SCHEDULE_ARGS[@]}" --max-epoch "${MAX_EPOCH}" \
    --batch-size "${BATCH_SIZE}" --update-freq "${UPDATE_FREQ}" --required-batch-size-multiple 1 \
    --eval-rouge --eval-rouge-args "{\"beam\": ${BEAM}, \"max_len_b\": ${TARGET_POSITIONS}}" \
    --best-checkpoint-metric rougeL --maximize-best-checkpoint-metric \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 10 --num-workers 0 \
    "$@"
