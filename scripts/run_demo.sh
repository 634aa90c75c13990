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
# TRAIN_ARGS and GEN_ARGS, and may set STOP_HOURS, LEAD_ARGS (how LEAD-3 reads the test papers)
# and LINES_PER_DOCUMENT (summaries per test document, e.g. one per aspect, joined before
# scoring)). Outputs go to runs/demo-<MODEL>/ and data to data/<CORPUS>/.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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
grep '^D-' "${WORK}/generate-test.txt" | sort -t- -k2 -n | cut -f3 > "${WORK}/test.hyp"
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
files2rouge "${WORK}/test.hyp" "${WORK}/test.ref" -s "${WORK}/rouge-${MODEL}.txt" > /dev/null
files2rouge "${WORK}/lead3.hyp" "${WORK}/test.ref" -s "${WORK}/rouge-lead3.txt" > /dev/null
python scripts/rouge_table.py "${MODEL}=${WORK}/rouge-${MODEL}.txt" "LEAD-3=${WORK}/rouge-lead3.txt" \
    | tee "${WORK}/results.md"
python scripts/plot_training.py "${WORK}/train.log" --out "${WORK}/training.png" --title "${MODEL}"
python scripts/plot_training.py "${WORK}/train.log" --out "${WORK}/training-minutes.png" --title "${MODEL}" --x minutes
echo "done in $(( $(date +%s) - start )) s; outputs in ${WORK}/"
