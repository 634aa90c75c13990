#!/usr/bin/env bash
# Z-Code++ phase two, grounded pre-training (Section 2.1, Table 1): continued training of a
# phase-one checkpoint on document -> summary pairs of several corpora, each prefixed by an
# instruction drawn from its corpus's templates. Hyper-parameters: the paper's Table 9 (the
# first value of each range), all overridable.
#
#   INIT=checkpoints/zcodepp_phase1/checkpoint_best.pt bash scripts/zcodepp/grounded.sh
#   CORPORA="aclsum aclsum_long" TEMPLATES=my_templates.tsv ... bash scripts/zcodepp/grounded.sh
#
# Every corpus is prepared with the phase-one sentencepiece model and dictionary (PRETRAIN_DATA).
# Extra arguments go to fairseq-train.
set -euo pipefail

INIT="${INIT:?set INIT to a phase-one checkpoint (scripts/zcodepp/pretrain.sh)}"
PRETRAIN_DATA="${PRETRAIN_DATA:-data/wiki}"
CORPORA="${CORPORA:-aclsum aclsum_long}"
DATA_ROOT="${DATA_ROOT:-data/zcodepp}"
TEMPLATES="${TEMPLATES:-}"
SAVE="${SAVE:-checkpoints/zcodepp_phase2}"
ARCH="${ARCH:-zcodepp_base}"
SOURCE_POSITIONS="${SOURCE_POSITIONS:-1024}"
TARGET_POSITIONS="${TARGET_POSITIONS:-512}"
# Table 9
WARMUP="${WARMUP:-1500}"
LR="${LR:-5e-6}"
BATCH_SIZE="${BATCH_SIZE:-64}"
WEIGHT_DECAY="${WEIGHT_DECAY:-0.01}"
MAX_EPOCH="${MAX_EPOCH:-10}"
ADAM_EPS="${ADAM_EPS:-1e-6}"
ADAM_BETAS="${ADAM_BETAS:-(0.9,0.999)}"
CLIP_NORM="${CLIP_NORM:-1.0}"
UPDATE_FREQ="${UPDATE_FREQ:-1}"

pairs=()
first=""
examples=0
for corpus in ${CORPORA}; do
    out="${DATA_ROOT}/${corpus}"
    if [[ ! -f "${out}/bin/dict.source.txt" ]]; then
        python -m preprocess.prepare --corpus "${corpus}" --out "${out}" \
            --spm-model "${PRETRAIN_DATA}/bin/spm.model" --srcdict "${PRETRAIN_DATA}/bin/dict.txt" \
            ${LIMIT:+--limit "${LIMIT}"}
    fi
    pairs+=("$(basename "${corpus}"):${out}/bin")
    first="${first:-${out}/bin}"
    examples=$(( examples + $(wc -l < "${out}/raw/train.source") ))
done
corpora_arg="$(IFS=,; echo "${pairs[*]}")"
total_updates=$(( (examples + BATCH_SIZE * UPDATE_FREQ - 1) / (BATCH_SIZE * UPDATE_FREQ) * MAX_EPOCH ))

extra=()
if [[ -n "${TEMPLATES}" ]]; then
    extra+=(--instruction-templates "${TEMPLATES}")
fi

fairseq-train "${first}" --user-dir user_dir \
    --task zcodepp_grounded --grounded-corpora "${corpora_arg}" "${extra[@]}" \
    --arch "${ARCH}" --finetune-from-model "${INIT}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --optimizer adam --adam-betas "${ADAM_BETAS}" --adam-eps "${ADAM_EPS}" --weight-decay "${WEIGHT_DECAY}" \
    --clip-norm "${CLIP_NORM}" --lr "${LR}" --lr-scheduler polynomial_decay \
    --warmup-updates "${WARMUP}" --total-num-update "${total_updates}" --max-epoch "${MAX_EPOCH}" \
    --batch-size "${BATCH_SIZE}" --update-freq "${UPDATE_FREQ}" --required-batch-size-multiple 1 \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 10 --num-workers 0 \
    "$@"
