#!/usr/bin/env bash
# The main job: prepare ACLSum, train a summarizer with fairseq-train --user-dir user_dir,
# generate the test set with fairseq-generate, score it with files2rouge and print a table
# beside the LEAD-3 baseline; it also draws the loss and validation ROUGE curves beside that
# table (training.png, from fairseq's JSON log).
#
#   bash scripts/run_demo.sh                    # MODEL=s2s_ft_copy (the default)
#   MODEL=bart MAX_EPOCH=5 bash scripts/run_demo.sh
#   LIMIT=8 MAX_EPOCH=1 bash scripts/run_demo.sh   # a quick run on the first 8 documents of each split
#
# MODEL names a recipe in scripts/demo/<MODEL>.sh (which sets CORPUS, VOCAB_SIZE, MAX_EPOCH,
# TRAIN_ARGS and GEN_ARGS, and may set STOP_HOURS, EVAL_ROUGE_ARGS, LEAD_ARGS (how LEAD-3 reads
# the test papers) and LINES_PER_DOCUMENT (summaries per test document, e.g. one per aspect,
# joined before scoring)). Outputs go to runs/demo-<MODEL>/ and data to data/<CORPUS>/.
#
# Every recipe's summaries come from the same checkpoint rule, so that the figures of different
# MODELs compare: checkpoint_best.pt, the checkpoint with the best validation ROUGE-L (F1 of
# greedy summaries of the validation set, decoded with EVAL_ROUGE_ARGS at every validation).
# A recipe sets how often it validates, never which metric chooses the checkpoint.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO}"
MODEL="${MODEL:-s2s_ft_copy}"
RECIPE="scripts/demo/${MODEL}.sh"
if [[ ! -f "${RECIPE}" ]]; then
    echo "unknown MODEL=${MODEL}; choose one of: $(ls scripts/demo | sed 's/\.sh$//' | tr '\n' ' ')" >&2
    exit 2
fi

bash scripts/setup_env.sh
# shellcheck disable=SC1091
source .venv/bin/activate
# the schedule the recipes that train from scratch put in their TRAIN_ARGS ("${FROM_SCRATCH_ARGS[@]}"):
# Adam, inverse square root after 50 warm-up updates, dropout 0.1, weight decay 0.01, clipping 1.0
FROM_SCRATCH_ARGS=(--optimizer adam --adam-betas "(0.9,0.98)" --lr "${LR:-1e-3}" --lr-scheduler inverse_sqrt
                   --warmup-updates 50 --dropout 0.1 --weight-decay 0.01 --clip-norm 1.0)
# shellcheck disable=SC1090
source "${RECIPE}"

WORK="${WORK:-runs/demo-${MODEL}}"
DATA="data/${CORPUS}"
STOP_HOURS="${STOP_HOURS:-0.12}"
LIMIT="${LIMIT:-}"  # keep only the first LIMIT documents of each split (empty: all)
# torch threads per process: 1 by default, steady on a shared machine (two threads spinning
# against other jobs ran fairseq-train several times slower here)
export OMP_NUM_THREADS="${THREADS:-1}"
mkdir -p "${WORK}"
start=$(date +%s)

echo "== [1/4] preparing ${CORPUS} (sentencepiece ${VOCAB_SIZE}) -> ${DATA}"
if [[ ! -f "${DATA}/bin/dict.source.txt" && ! -f "${DATA}/bin/dict.txt" ]]; then
    python -m preprocess.prepare --corpus "${CORPUS}" --out "${DATA}" --vocab-size "${VOCAB_SIZE}" ${LIMIT:+--limit "${LIMIT}"}
else
    echo "   ${DATA}/bin exists: reusing it (delete it to rebuild)"
fi

# fairseq validates every --validate-interval epochs (a recipe's choice) but not at --max-epoch
# itself: a run shorter than one interval validates every epoch, so that a best checkpoint exists
interval=1
for i in "${!TRAIN_ARGS[@]}"; do
    if [[ "${TRAIN_ARGS[$i]}" == --validate-interval ]]; then interval="${TRAIN_ARGS[$((i + 1))]}"; fi
done
if (( MAX_EPOCH < interval )); then
    TRAIN_ARGS+=(--validate-interval 1)
fi
if [[ " ${TRAIN_ARGS[*]} " == *" --best-checkpoint-metric "* ]]; then
    echo "${RECIPE} chooses its checkpoint metric; the demo's rule is validation ROUGE-L (run_demo.sh)" >&2
    exit 2
fi
EVAL_ROUGE_ARGS="${EVAL_ROUGE_ARGS:-{\"beam\": 1, \"min_len\": 40, \"max_len_b\": 140, \"no_repeat_ngram_size\": 3\}}"
TRAIN_ARGS+=(--eval-rouge --eval-rouge-args "${EVAL_ROUGE_ARGS}"
             --best-checkpoint-metric rougeL --maximize-best-checkpoint-metric)

echo "== [2/4] fairseq-train ${MODEL} (at most ${MAX_EPOCH} epochs or ${STOP_HOURS} h)"
fairseq-train "${DATA}/bin" --user-dir user_dir "${TRAIN_ARGS[@]}" \
    --max-epoch "${MAX_EPOCH}" --stop-time-hours "${STOP_HOURS}" \
    --save-dir "${WORK}/checkpoints" --no-epoch-checkpoints \
    --log-format json --log-interval 10 --num-workers 0 --seed 1 \
    2>&1 | tee "${WORK}/train.log" | grep --line-buffered -E "\| (train|valid) \||done training|truncated|longer than" || true
[[ -f "${WORK}/checkpoints/checkpoint_best.pt" ]] || { echo "training failed: see ${WORK}/train.log" >&2; exit 1; }

echo "== [3/4] fairseq-generate on the test set"
fairseq-generate "${DATA}/bin" --user-dir user_dir --path "${WORK}/checkpoints/checkpoint_best.pt" \
    --gen-subset test --batch-size 16 --num-workers 0 "${GEN_ARGS[@]}" \
    --bpe sentencepiece --sentencepiece-model "${DATA}/bin/spm.model" \
    > "${WORK}/generate-test.txt"
hypotheses "${WORK}/generate-test.txt" "${WORK}/test.hyp"
# the references: one document a line (per-aspect targets joined, as the summaries are)
python -m fairseq_ext.data.join_lines --every "${LINES_PER_DOCUMENT:-1}" "${DATA}/raw/test.target" "${WORK}/test.ref"
if [[ "${LINES_PER_DOCUMENT:-1}" != 1 ]]; then
    mv "${WORK}/test.hyp" "${WORK}/test.pieces.hyp"
    python -m fairseq_ext.data.join_lines --every "${LINES_PER_DOCUMENT}" "${WORK}/test.pieces.hyp" "${WORK}/test.hyp"
fi
if [[ -z "${LEAD_ARGS+set}" ]]; then
    if [[ "${CORPUS}" == "aclsum" ]]; then  # ACLSum's own sentence segmentation, as published
        LEAD_ARGS=(--aclsum test)
    else
        LEAD_ARGS=(--source "${DATA}/raw/test.source")
    fi
fi
python -m fairseq_ext.rouge.lead "${LEAD_ARGS[@]}" --n 3 --out "${WORK}/lead3.hyp" ${LIMIT:+--limit "${LIMIT}"}

echo "== [4/4] files2rouge"
rouge "${WORK}/test.hyp" "${WORK}/test.ref" "${WORK}/rouge-${MODEL}.txt" > /dev/null
rouge "${WORK}/lead3.hyp" "${WORK}/test.ref" "${WORK}/rouge-lead3.txt" > /dev/null
python scripts/rouge_table.py "${MODEL}=${WORK}/rouge-${MODEL}.txt" "LEAD-3=${WORK}/rouge-lead3.txt" \
    --summaries "${MODEL}=${WORK}/test.hyp" --summaries "LEAD-3=${WORK}/lead3.hyp" --references "${WORK}/test.ref" \
    | tee "${WORK}/results.md"
python scripts/plot_training.py "${WORK}/train.log" --out "${WORK}/training.png" --title "${MODEL}"
python scripts/plot_training.py "${WORK}/train.log" --out "${WORK}/training-minutes.png" --title "${MODEL}" --x minutes
echo "done in $(( $(date +%s) - start )) s; outputs in ${WORK}/"
