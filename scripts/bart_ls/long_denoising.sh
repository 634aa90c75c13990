#!/usr/bin/env bash
# BART-LS pre-training by T5 span corruption on long inputs made of randomly concatenated
# documents (the paper's best setting), starting from a BART checkpoint converted with
# python -m fairseq_ext.convert bart_ls. Every variable can be overridden from the environment:
#
#   BART=checkpoints/bart/checkpoint_best.pt DATA=data/wiki/bin bash scripts/bart_ls/long_denoising.sh
#
# DATA must share the dictionary of the BART checkpoint (prepare it with
# python -m preprocess.prepare --corpus wiki --spm-model M --srcdict D).
set -euo pipefail

DATA="${DATA:-data/wiki/bin}"
BART="${BART:?set BART to a fairseq BART checkpoint}"
SAVE="${SAVE:-checkpoints/bart_ls_long_denoising}"
ARCH="${ARCH:-bart_ls_large}"
DICT="${DICT:-${DATA}/dict.txt}"
SOURCE_POSITIONS="${SOURCE_POSITIONS:-16384}"
TOKENS_PER_SAMPLE="${TOKENS_PER_SAMPLE:-8190}"
BLOCK_SIZE="${BLOCK_SIZE:-1024}"
POOLING_LAYERS="${POOLING_LAYERS:-4}"
NUM_SENTINELS="${NUM_SENTINELS:-256}"
NOISE_DENSITY="${NOISE_DENSITY:-0.0625}"
MEAN_SPAN="${MEAN_SPAN:-3}"
DYNAMIC_SPANS="${DYNAMIC_SPANS:-4,8,12}"
LR="${LR:-1e-4}"
MAX_UPDATE="${MAX_UPDATE:-100000}"
MAX_TOKENS="${MAX_TOKENS:-16384}"
UPDATE_FREQ="${UPDATE_FREQ:-1}"

mkdir -p "${SAVE}"
INIT="${SAVE}/bart_ls_init/model.pt"
if [[ ! -f "${INIT}" ]]; then
    python -m fairseq_ext.convert bart_ls --bart "${BART}" --dict "${DICT}" --out "$(dirname "${INIT}")" \
        --arch "${ARCH}" --max-source-positions "${SOURCE_POSITIONS}" --num-sentinels "${NUM_SENTINELS}" \
        --block-size "${BLOCK_SIZE}" --pooling-layers "${POOLING_LAYERS}"
fi

fairseq-train "${DATA}" --user-dir user_dir \
    --task bart_ls_long_denoising --arch "${ARCH}" --criterion label_smoothed_cross_entropy \
    --finetune-from-model "${INIT}" \
    --tokens-per-sample "${TOKENS_PER_SAMPLE}" --noise-density "${NOISE_DENSITY}" \
    --mean-span-length "${MEAN_SPAN}" --dynamic-span-length "${DYNAMIC_SPANS}" \
    --num-sentinels "${NUM_SENTINELS}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions 1024 \
    --block-size "${BLOCK_SIZE}" --pooling-layers "${POOLING_LAYERS}" \
    --optimizer adam --adam-betas "(0.9,0.98)" --lr "${LR}" --lr-scheduler polynomial_decay \
    --warmup-updates 500 --total-num-update "${MAX_UPDATE}" --max-update "${MAX_UPDATE}" \
    --dropout 0.1 --attention-dropout 0.1 --weight-decay 0.01 --clip-norm 0.1 \
    --max-tokens "${MAX_TOKENS}" --update-freq "${UPDATE_FREQ}" \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 10 "$@"
