#!/usr/bin/env bash
# Fine-tune BART-LS on long-document summarization (aclsum_long: paper body -> abstract)
# with the foundation task abstractive_summarization; the paper's settings (pooling layers 4,
# block 1024, 16K source positions) as overridable variables. QUERY adds an instruction prefix.
#
#   INIT=checkpoints/bart_ls_long_denoising/checkpoint_best.pt bash scripts/bart_ls/finetune.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

INIT="${INIT:?set INIT to a BART-LS checkpoint (pre-trained or converted)}"
defaults DATA=data/aclsum_long/bin SAVE=checkpoints/bart_ls_aclsum_long ARCH=bart_ls_large \
    SOURCE_POSITIONS=16384 TARGET_POSITIONS=1024 BLOCK_SIZE=1024 POOLING_LAYERS=4 ATTENTION=block \
    QUERY= LR=3e-5 MAX_UPDATE=10000 MAX_TOKENS=16384 UPDATE_FREQ=4
if_set INSTRUCTION_ARGS --instruction "${QUERY}"
# Adam (0.9, 0.98), 500 warm-up updates, then a linear decay to 0 at MAX_UPDATE
defaults ADAM_BETAS="(0.9,0.98)" ADAM_EPS=1e-8 WEIGHT_DECAY=0.01 CLIP_NORM=0.1 WARMUP=500
linear_decay_args "${MAX_UPDATE}"
# the starting model's sizes and positions (args.txt beside INIT: the converter's, or the one
# long_denoising.sh / model_based_denoising.sh wrote), which these must agree with
args_from_checkpoint "${INIT}" ARCH:=--arch SOURCE_POSITIONS:=--max-source-positions TARGET_POSITIONS:=--max-target-positions \
    ATTENTION=--encoder-attention BLOCK_SIZE=--block-size POOLING_LAYERS=--pooling-layers

fairseq-train "${DATA}" --user-dir "${REPO}/user_dir" \
    --task abstractive_summarization --arch "${ARCH}" \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --finetune-from-model "${INIT}" "${CHECKPOINT_ARGS[@]}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --encoder-attention "${ATTENTION}" --block-size "${BLOCK_SIZE}" --pooling-layers "${POOLING_LAYERS}" \
    "${SCHEDULE_ARGS[@]}" --max-update "${MAX_UPDATE}" --dropout 0.1 --attention-dropout 0.1 \
    --max-tokens "${MAX_TOKENS}" --update-freq "${UPDATE_FREQ}" \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 10 \
    "${INSTRUCTION_ARGS[@]}" "$@"
