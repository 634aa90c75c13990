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
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

INIT="${INIT:?set INIT to a phase-one checkpoint (scripts/zcodepp/pretrain.sh)}"
defaults PRETRAIN_DATA=data/wiki CORPORA="aclsum aclsum_long" DATA_ROOT=data/zcodepp TEMPLATES= \
    SAVE=checkpoints/zcodepp_phase2 ARCH=zcodepp_base SOURCE_POSITIONS=1024 TARGET_POSITIONS=512
# Table 9
defaults WARMUP=1500 LR=5e-6 BATCH_SIZE=64 WEIGHT_DECAY=0.01 MAX_EPOCH=10 ADAM_EPS=1e-6 ADAM_BETAS="(0.9,0.999)" \
    CLIP_NORM=1.0 UPDATE_FREQ=1

pairs=()
first=""
examples=0
for corpus in ${CORPORA}; do
    out="${DATA_ROOT}/${corpus}"
    prepare_with_vocabulary "${corpus}" "${out}" "${PRETRAIN_DATA}/bin"
    pairs+=("$(basename "${corpus}"):${out}/bin")
    first="${first:-${out}/bin}"
    examples=$(( examples + $(wc -l < "${out}/raw/train.source") ))
done
corpora_arg="$(IFS=,; echo "${pairs[*]}")"
total_updates=$(( $(updates_per_epoch "${examples}" $(( BATCH_SIZE * UPDATE_FREQ ))) * MAX_EPOCH ))
linear_decay_args "${total_updates}"

if_set template_args --instruction-templates "${TEMPLATES}"

fairseq-train "${first}" --user-dir "${REPO}/user_dir" \
    --task zcodepp_grounded --grounded-corpora "${corpora_arg}" "${template_args[@]}" \
    --arch "${ARCH}" --finetune-from-model "${INIT}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    "${SCHEDULE_ARGS[@]}" --max-epoch "${MAX_EPOCH}" \
    --batch-size "${BATCH_SIZE}" --update-freq "${UPDATE_FREQ}" --required-batch-size-multiple 1 \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 10 --num-workers 0 \
    "$@"
