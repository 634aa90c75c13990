#!/usr/bin/env bash
# Transformer-SM, the paper's schedule: domain-adaptive training (loss on article and summary
# tokens) for DAT_EPOCHS, then end-task training (loss on summary tokens) for ETT_EPOCHS,
# starting from the DAT weights. Paper values: lr 6.25e-5, batch 64, 10 + 10 epochs,
# articles <= 512 tokens, summaries <= 110 tokens, GPT-1 size (transformer_sm_gpt).
#
#   DATA=data/aclsum/bin SAVE=runs/tsm bash scripts/transformer_sm/train.sh
#   DAT_EPOCHS=0 ETT_EPOCHS=20 ...                         # the paper's "without DAT" runs
#   INIT=conv/model.pt ARCH_ARGS="$(cat conv/args.txt)" ... # start from converted GPT weights
#   MODEL_ARGS="--no-source-embeddings" ...                 # the Transformer-LM ablation
#
# BATCH sentences per update = BATCH_PER_STEP x UPDATE_FREQ (lower BATCH_PER_STEP to fit memory).
# Extra fairseq-train flags go in EXTRA_ARGS (e.g. "--fp16 --stop-time-hours 1").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

defaults DATA=data/aclsum/bin SAVE=runs/transformer_sm ARCH_ARGS="--arch transformer_sm_gpt" MODEL_ARGS= INIT= \
    DAT_EPOCHS=10 ETT_EPOCHS=10 LR=6.25e-5 BATCH=64 SOURCE_POSITIONS=512 TARGET_POSITIONS=110 WEIGHT_DECAY=0.01 CLIP_NORM=1.0 \
    SEED=1 EXTRA_ARGS=
defaults BATCH_PER_STEP="${BATCH}"

if (( BATCH % BATCH_PER_STEP != 0 )); then
    echo "BATCH=${BATCH} must be a multiple of BATCH_PER_STEP=${BATCH_PER_STEP}" >&2
    exit 2
fi
UPDATE_FREQ=$(( BATCH / BATCH_PER_STEP ))

# shellcheck disable=SC2206  # word splitting of the flag strings is intended
COMMON=(
    --user-dir "${REPO}/user_dir" --task transformer_sm --criterion transformer_sm
    ${ARCH_ARGS} ${MODEL_ARGS}
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}"
    --optimizer adam --adam-betas "(0.9,0.999)" --lr "${LR}" --lr-scheduler fixed
    --weight-decay "${WEIGHT_DECAY}" --clip-norm "${CLIP_NORM}"
    --batch-size "${BATCH_PER_STEP}" --update-freq "${UPDATE_FREQ}" --required-batch-size-multiple 1
    --best-checkpoint-metric summary_nll_loss --no-epoch-checkpoints
    --log-format simple --log-interval 10 --num-workers 0 --seed "${SEED}"
    ${EXTRA_ARGS}
)

if_set init_args --finetune-from-model "${INIT}"

if (( DAT_EPOCHS > 0 )); then
    echo "== DAT: ${DAT_EPOCHS} epochs -> ${SAVE}/dat"
    fairseq-train "${DATA}" "${COMMON[@]}" "${init_args[@]}" --mode dat \
        --max-epoch "${DAT_EPOCHS}" --save-dir "${SAVE}/dat"
    init_args=(--finetune-from-model "${SAVE}/dat/checkpoint_last.pt")
fi

echo "== ETT: ${ETT_EPOCHS} epochs -> ${SAVE}/ett"
fairseq-train "${DATA}" "${COMMON[@]}" "${init_args[@]}" --mode ett \
    --max-epoch "${ETT_EPOCHS}" --save-dir "${SAVE}/ett"
echo "done: ${SAVE}/ett/checkpoint_best.pt"
