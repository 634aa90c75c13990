#!/usr/bin/env bash
# BART-LS model-based denoising: an encoder-only block-attention LM (held by the criterion)
# scores many masked candidate spans; the hardest HARD_FRACTION of them become the targets.
# Set FREEZE_SCORER=1 (with SCORER_PATH) to keep the scorer fixed instead of training it jointly.
#
#   INIT=checkpoints/bart_ls_long_denoising/bart_ls_init/model.pt DATA=data/wiki/bin bash scripts/bart_ls/model_based_denoising.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

INIT="${INIT:?set INIT to a BART-LS checkpoint (python -m fairseq_ext.cli.convert bart_ls writes OUT/model.pt)}"
defaults DATA=data/wiki/bin SAVE=checkpoints/bart_ls_model_based ARCH=bart_ls_large SOURCE_POSITIONS=16384 \
    TOKENS_PER_SAMPLE=8190 BLOCK_SIZE=1024 POOLING_LAYERS=4 NUM_SENTINELS=256 TARGET_POSITIONS=1024 CANDIDATE_DENSITY=0.3125 \
    HARD_FRACTION=0.2 SCORER_LAYERS=4 SCORER_DIM=512 FREEZE_SCORER=0 SCORER_PATH= LR=1e-4 MAX_UPDATE=100000 \
    MAX_TOKENS=16384
# Adam (0.9, 0.98), 500 warm-up updates, then a linear decay to 0 at MAX_UPDATE
defaults ADAM_BETAS="(0.9,0.98)" ADAM_EPS=1e-8 WEIGHT_DECAY=0.01 CLIP_NORM=0.1 WARMUP=500
linear_decay_args "${MAX_UPDATE}"
# the starting model's sizes and positions (args.txt beside INIT), which these must agree with
args_from_checkpoint "${INIT}" ARCH:=--arch SOURCE_POSITIONS:=--max-source-positions TARGET_POSITIONS:=--max-target-positions \
    BLOCK_SIZE=--block-size POOLING_LAYERS=--pooling-layers
write_args_txt "${SAVE}" "${CHECKPOINT_ARGS[@]}"

scorer_args=(--scorer-layers "${SCORER_LAYERS}" --scorer-embed-dim "${SCORER_DIM}"
             --scorer-ffn-dim "$((4 * SCORER_DIM))" --scorer-block-size "${BLOCK_SIZE}")
if [[ "${FREEZE_SCORER}" == "1" ]]; then
    scorer_args+=(--freeze-scorer)
fi
if_set scorer_path_args --scorer-path "${SCORER_PATH}"

fairseq-train "${DATA}" --user-dir "${REPO}/user_dir" \
    --task bart_ls_model_based_denoising --arch "${ARCH}" \
    --criterion bart_ls_model_based_denoising --hard-span-fraction "${HARD_FRACTION}" "${scorer_args[@]}" "${scorer_path_args[@]}" \
    --finetune-from-model "${INIT}" "${CHECKPOINT_ARGS[@]}" \
    --tokens-per-sample "${TOKENS_PER_SAMPLE}" --candidate-density "${CANDIDATE_DENSITY}" \
    --num-sentinels "${NUM_SENTINELS}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --block-size "${BLOCK_SIZE}" --pooling-layers "${POOLING_LAYERS}" \
    "${SCHEDULE_ARGS[@]}" --max-update "${MAX_UPDATE}" --dropout 0.1 --attention-dropout 0.1 \
    --max-tokens "${MAX_TOKENS}" --save-dir "${SAVE}" --no-epoch-checkpoints \
    --log-format simple --log-interval 10 "$@"
