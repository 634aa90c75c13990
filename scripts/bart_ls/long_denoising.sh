#!/usr/bin/env bash
# BART-LS pre-training by T5 span corruption on long inputs made of randomly concatenated
# documents (the paper's best setting), starting from a BART checkpoint converted with
# python -m fairseq_ext.cli.convert bart_ls. Every variable can be overridden from the environment:
#
#   BART=checkpoints/bart/checkpoint_best.pt DATA=data/wiki/bin bash scripts/bart_ls/long_denoising.sh
#
# DATA must share the dictionary of the BART checkpoint (prepare it with
# python -m preprocess.prepare --corpus wiki --spm-model M --srcdict D). The model's sizes come
# from the converter's args.txt, which is copied to SAVE/args.txt for finetune.sh to read.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

BART="${BART:?set BART to a fairseq BART checkpoint}"
defaults DATA=data/wiki/bin SAVE=checkpoints/bart_ls_long_denoising ARCH=bart_ls_large
defaults DICT="${DATA}/dict.txt" SOURCE_POSITIONS=16384 TOKENS_PER_SAMPLE=8190 BLOCK_SIZE=1024 POOLING_LAYERS=4 \
    NUM_SENTINELS=256 TARGET_POSITIONS=1024 NOISE_DENSITY=0.0625 MEAN_SPAN=3 DYNAMIC_SPANS=4,8,12 LR=1e-4 MAX_UPDATE=100000 \
    MAX_TOKENS=16384 UPDATE_FREQ=1
# Adam (0.9, 0.98), 500 warm-up updates, then a linear decay to 0 at MAX_UPDATE
defaults ADAM_BETAS="(0.9,0.98)" ADAM_EPS=1e-8 WEIGHT_DECAY=0.01 CLIP_NORM=0.1 WARMUP=500
linear_decay_args "${MAX_UPDATE}"

mkdir -p "${SAVE}"
INIT="${SAVE}/bart_ls_init/model.pt"
if [[ ! -f "${INIT}" ]]; then
    python -m fairseq_ext.cli.convert bart_ls --bart "${BART}" --dict "${DICT}" --out "$(dirname "${INIT}")" \
        --arch "${ARCH}" --max-source-positions "${SOURCE_POSITIONS}" --num-sentinels "${NUM_SENTINELS}" \
        --block-size "${BLOCK_SIZE}" --pooling-layers "${POOLING_LAYERS}"
fi
# the converted model's sizes and positions (its args.txt); ARCH, SOURCE_POSITIONS, BLOCK_SIZE and
# POOLING_LAYERS must agree with it, and the fine-tuning reads them from SAVE/args.txt in turn
args_from_checkpoint "${INIT}" ARCH:=--arch SOURCE_POSITIONS:=--max-source-positions TARGET_POSITIONS:=--max-target-positions \
    BLOCK_SIZE=--block-size POOLING_LAYERS=--pooling-layers
write_args_txt "${SAVE}" "${CHECKPOINT_ARGS[@]}"

fairseq-train "${DATA}" --user-dir "${REPO}/user_dir" \
    --task bart_ls_long_denoising --arch "${ARCH}" --criterion label_smoothed_cross_entropy \
    --finetune-from-model "${INIT}" "${CHECKPOINT_ARGS[@]}" \
    --tokens-per-sample "${TOKENS_PER_SAMPLE}" --noise-density "${NOISE_DENSITY}" \
    --mean-span-length "${MEAN_SPAN}" --dynamic-span-length "${DYNAMIC_SPANS}" \
    --num-sentinels "${NUM_SENTINELS}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --block-size "${BLOCK_SIZE}" --pooling-layers "${POOLING_LAYERS}" \
    "${SCHEDULE_ARGS[@]}" --max-update "${MAX_UPDATE}" --dropout 0.1 --attention-dropout 0.1 \
    --max-tokens "${MAX_TOKENS}" --update-freq "${UPDATE_FREQ}" \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 10 "$@"
