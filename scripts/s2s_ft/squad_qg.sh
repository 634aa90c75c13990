#!/usr/bin/env bash
# s2s-ft answer-aware question generation on SQuAD 1.1 (s2s-ft paper, Tables 7 and 8):
# scripts/s2s_ft/finetune.sh keeping the checkpoint with the best validation BLEU, then
# scripts/s2s_ft/decode.sh PRESET=squad_qg, then the question-generation scores (BLEU-4 with
# its sacrebleu signature, ROUGE-L, METEOR where available).
#
#   DATA=data/squad_qg_wp/bin SAVE_DIR=runs/qg/s2s_ft bash scripts/s2s_ft/squad_qg.sh
#
# DATA: WordPiece data of the checkpoint's vocabulary (python -m preprocess.prepare --corpus
# squad, then python -m preprocess.prepare_wordpiece --corpus OUT/raw). Table 8 for
# SQuAD QG: 384 input tokens, 32 output tokens, beam 8, length penalty 1.3, at least 5 tokens;
# Table 7: batch 64, label smoothing 0.1, linear schedule with 1000 warmup updates, and the
# grid lr {5e-5, 7e-5, 1e-4} (base) x epochs {10, 15, 20, 30} x target mask {0.4 .. 0.7}, of
# which LR 7e-5, MAX_EPOCH 10, TARGET_MASK_PROB 0.5 are the defaults here. References default
# to the test targets as the data's WordPiece decodes them (fairseq-generate's T- lines:
# lower-cased, accents stripped), the text validation BLEU scores. Every variable of
# finetune.sh (INIT, ARCH, METHOD, BATCH_SIZE, UPDATE_FREQ, ...) applies.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

cd "${REPO}"
DATA="${DATA:?set DATA to binarized WordPiece question-generation data, e.g. data/squad_qg_wp/bin}"
SAVE_DIR="${SAVE_DIR:?set SAVE_DIR, e.g. runs/qg/s2s_ft}"
defaults SUBSET=test
export DATA SAVE_DIR
export LR="${LR:-7e-5}" MAX_EPOCH="${MAX_EPOCH:-10}"
export SOURCE_POSITIONS="${SOURCE_POSITIONS:-384}" TARGET_POSITIONS="${TARGET_POSITIONS:-32}"

bash "${REPO}/scripts/s2s_ft/finetune.sh" \
    --eval-bleu --eval-bleu-args "{\"beam\": 1, \"max_len_b\": $((TARGET_POSITIONS - 1))}" \
    --best-checkpoint-metric bleu --maximize-best-checkpoint-metric "$@"
# the questions and references as the WordPiece data decode them (--no-restore-surface), the
# lower-cased text the published figures score
CHECKPOINT="${SAVE_DIR}/checkpoint_best.pt" OUT="${SAVE_DIR}" PRESET=squad_qg SUBSET="${SUBSET}" \
    bash "${REPO}/scripts/s2s_ft/decode.sh" --no-restore-surface
hypotheses "${SAVE_DIR}/generate-${SUBSET}.txt" "${SAVE_DIR}/${SUBSET}.ref" T
REF="${REF:-${SAVE_DIR}/${SUBSET}.ref}"
python -m fairseq_ext.cli.qg "${SAVE_DIR}/${SUBSET}.hyp" "${REF}" --json "${SAVE_DIR}/${SUBSET}.scores.json" \
    | tee "${SAVE_DIR}/${SUBSET}.scores.txt"
