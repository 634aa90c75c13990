#!/usr/bin/env bash
# BART-LS model-based denoising: an encoder-only block-attention LM (held by the criterion)
# scores many masked candidate spans; the hardest HARD_FRACTION of them become the targets.
# Set FREEZE_SCORER=1 (with SCORER_PATH) to keep the scorer fixed instead of training it jointly.
#
#   INIT=checkpoints/bart_ls_long_denoising/bart_ls_init/model.pt DATA=data/wiki/bin bash scripts/bart_ls/model_based_denoising.sh
set -euo pipefail

DATA="${DATA:-data/wiki/bin}"
INIT="${INIT:?set INIT to a BART-LS checkpoint (python -m fairseq_ext.convert bart_ls writes OUT/model.pt)}"
SAVE="${SAVE:-checkpoints/bart_ls_model_based}"
ARCH="${ARCH:-bart_ls_large}"
SOURCE_POSITIONS="${SOURCE_POSITIONS:-16384}"
TOKENS_PER_SAMPLE="${TOKENS_PER_SAMPLE:-8190}"
BLOCK_SIZE="${BLOCK_SIZE:-1024}"
POOLING_LAYERS="${POOLING_LAYERS:-4}"
NUM_SENTINELS="${NUM_SENTINELS:-256}"
CANDIDATE_DENSITY="${CANDIDATE_DENSITY:-0.3125}"
HARD_FRACTION="${HARD_FRACTION:-0.2}"
SCORER_LAYERS="${SCORER_LAYERS:-4}"
SCORER_DIM="${SCORER_DIM:-512}"
FREEZE_SCORER="${FREEZE_SCORER:-0}"
SCORER_PATH="${SCORER_PATH:-}"
LR="${LR:-1e-4}"
MAX_UPDATE="${MAX_UPDATE:-100000}"
MAX_TOKENS="${MAX_TOKENS:-16384}"

scorer_args=(--scorer-layers "${SCORER_LAYERS}" --scorer-embed-dim "${SCORER_DIM}"
             --scorer-ffn-dim "$((4 * SCORER_DIM))" --scorer-block-size "${BLOCK_SIZE}")
if [[ "${FREEZE_SCORER}" == "1" ]]; then
    scorer_args+=(--freeze-scorer)
fi
if [[ -n "${SCORER_PATH}" ]]; then
    scorer_args+=(--scorer-path "${SCORER_PATH}")
fi

fairseq-train "${DATA}" --user-dir user_dir \
    --task bart_ls_model_based_denoising --arch "${ARCH}" \
    --criterion bart_ls_model_based_denoising --hard-span-fraction "${HARD_FRACTION}" "${scorer_args[@]}" \
    --finetune-from-model "${INIT}" \
    --tokens-per-sample "${TOKENS_PER_SAMPLE}" --candidate-density "${CANDIDATE_DENSITY}" \
    --num-sentinels "${NUM_SENTINELS}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions 1024 \
    --block-size "${BLOCK_SIZE}" --pooling-layers "${POOLING_LAYERS}" \
    --optimizer adam --adam-betas "(0.9,0.98)" --lr "${LR}" --lr-scheduler polynomial_decay \
    --warmup-updates 500 --total-num-update "${MAX_UPDATE}" --max-update "${MAX_UPDATE}" \
    --dropout 0.1 --attention-dropout 0.1 --weight-decay 0.01 --clip-norm 0.1 \
    --max-tokens "${MAX_TOKENS}" --save-dir "${SAVE}" --no-epoch-checkpoints \
    --log-format simple --log-interval 10 "$@"
