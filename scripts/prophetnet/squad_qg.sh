#!/usr/bin/env bash
# ProphetNet answer-aware question generation on SQuAD 1.1 (ProphetNet paper, section 3.3):
# fine-tune with the future n-gram loss keeping the checkpoint with the best validation BLEU,
# generate the test questions, score them (BLEU-4 with its sacrebleu signature, ROUGE-L, METEOR
# where available). Data: python -m preprocess.prepare --corpus squad ... (answer [SEP] passage).
#
#   DATA=data/squad_qg/bin SAVE_DIR=runs/qg/prophetnet bash scripts/prophetnet/squad_qg.sh
#
# Paper and its public recipe, as overridable variables: lr 1e-5 (inverse_sqrt, 1000 warmup
# updates from 1e-7), batch 28 (BATCH_SIZE 7 x UPDATE_FREQ 4), 10 epochs, label smoothing 0.1,
# dropout and attention dropout 0.1, weight decay 0.01, clipping 0.1, future bigram (NGRAM 2),
# the first 512 source tokens (511 + </s> positions here: released checkpoints have 512 rows,
# one for padding); decoding beam 5, length penalty 1.5, no repeated trigrams. Ours: questions
# up to 64 target positions, validation BLEU with greedy decoding. INIT: a pre-trained or
# converted checkpoint (empty: from scratch). Extra fairseq-train arguments go after the name.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

cd "${REPO}"
DATA="${DATA:?set DATA to binarized question-generation data, e.g. data/squad_qg/bin}"
SAVE_DIR="${SAVE_DIR:?set SAVE_DIR, e.g. runs/qg/prophetnet}"
# MAX_UPDATE 0: no limit; BATCH_SIZE 7 x UPDATE_FREQ 4 = the paper's batch of 28
defaults INIT= ARCH=prophetnet_summ_large NGRAM=2 LR=1e-5 WARMUP=1000 MAX_EPOCH=10 MAX_UPDATE=0 BATCH_SIZE=7 \
    UPDATE_FREQ=4 LABEL_SMOOTHING=0.1 SOURCE_POSITIONS=512 TARGET_POSITIONS=64 BEAM=5 LENPEN=1.5 NO_REPEAT=3 \
    SUBSET=test SEED=1
defaults REF="$(dirname "${DATA}")/raw/${SUBSET}.target"
if_set init_args --finetune-from-model "${INIT}"
# a converted or pre-trained INIT's args.txt: its size and positions; ARCH and NGRAM must agree,
# the positions may be fewer (a 512-token fine-tuning after a 128-token pre-training takes 128)
args_from_checkpoint "${INIT}" ARCH:=--arch NGRAM=--ngram \
    "SOURCE_POSITIONS<=--max-source-positions" "TARGET_POSITIONS<=--max-target-positions"

mkdir -p "${SAVE_DIR}"
fairseq-train "${DATA}" --user-dir "${REPO}/user_dir" --task abstractive_summarization \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --arch "${ARCH}" --ngram "${NGRAM}" \
    --criterion ngram_language_loss --label-smoothing "${LABEL_SMOOTHING}" \
    --optimizer adam --adam-betas "(0.9,0.999)" --lr "${LR}" --weight-decay 0.01 --clip-norm 0.1 \
    --lr-scheduler inverse_sqrt --warmup-updates "${WARMUP}" --warmup-init-lr 1e-07 \
    --max-epoch "${MAX_EPOCH}" --max-update "${MAX_UPDATE}" \
    --batch-size "${BATCH_SIZE}" --update-freq "${UPDATE_FREQ}" --required-batch-size-multiple 1 \
    --dropout 0.1 --attention-dropout 0.1 --seed "${SEED}" \
    --eval-bleu --eval-bleu-args "{\"beam\": 1, \"max_len_b\": $((TARGET_POSITIONS - 1))}" \
    --best-checkpoint-metric bleu --maximize-best-checkpoint-metric \
    --save-dir "${SAVE_DIR}" --no-epoch-checkpoints --num-workers 0 \
    --log-format simple --log-interval 50 "${init_args[@]}" "${CHECKPOINT_ARGS[@]}" "$@" 2>&1 | tee "${SAVE_DIR}/train.log"

fairseq-generate "${DATA}" --user-dir "${REPO}/user_dir" --task abstractive_summarization \
    --path "${SAVE_DIR}/checkpoint_best.pt" --gen-subset "${SUBSET}" --batch-size 32 \
    --required-batch-size-multiple 1 --num-workers 0 \
    --beam "${BEAM}" --lenpen "${LENPEN}" --no-repeat-ngram-size "${NO_REPEAT}" \
    --max-len-a 0 --max-len-b "$((TARGET_POSITIONS - 1))" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --bpe sentencepiece --sentencepiece-model "${DATA}/spm.model" > "${SAVE_DIR}/generate-${SUBSET}.txt"
hypotheses "${SAVE_DIR}/generate-${SUBSET}.txt" "${SAVE_DIR}/${SUBSET}.hyp"
python -m fairseq_ext.cli.qg "${SAVE_DIR}/${SUBSET}.hyp" "${REF}" --json "${SAVE_DIR}/${SUBSET}.scores.json" \
    | tee "${SAVE_DIR}/${SUBSET}.scores.txt"
