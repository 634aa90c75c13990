#!/usr/bin/env bash
# The ACLSum comparison of benchmarks/results/s2s_ft.md: s2s-ft (pseudo-masked) from the real
# MiniLM-L6-H384 weights against the same architecture from random initialization, on the same
# budget (MAX_UPDATE updates of BATCH_SIZE documents), and LEAD-3; test ROUGE by files2rouge.
#
#   bash scripts/s2s_ft/aclsum_compare.sh                 # the reported CPU budget (~20 min a system)
#   MAX_UPDATE=600 UPDATE_FREQ=8 bash scripts/s2s_ft/aclsum_compare.sh   # a real budget
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

cd "${REPO}"
WORK="${WORK:-runs/s2s_ft_aclsum}"
DATA_DIR="${DATA_DIR:-data/aclsum_wp}"
export MAX_UPDATE="${MAX_UPDATE:-50}"
export TOTAL_UPDATES="${TOTAL_UPDATES:-${MAX_UPDATE}}"
export WARMUP="${WARMUP:-5}"
export LR="${LR:-2e-4}"
export BATCH_SIZE="${BATCH_SIZE:-8}"
export UPDATE_FREQ="${UPDATE_FREQ:-1}"
export MAX_EPOCH="${MAX_EPOCH:-100}"
export METHOD="${METHOD:-pseudo}"
export TARGET_MASK_PROB="${TARGET_MASK_PROB:-0.2}"
export BEAM="${BEAM:-2}"
export SOURCE_POSITIONS="${SOURCE_POSITIONS:-256}"  # the abstract and the start of the introduction
SYSTEMS="${SYSTEMS:-minilm none}"   # INIT values to train
PARALLEL="${PARALLEL:-1}"           # 1: train (and decode) the systems at the same time, one thread each

if [[ ! -f "${DATA_DIR}/bin/dict.source.txt" ]]; then
    python -m preprocess.prepare_wordpiece --corpus aclsum --out "${DATA_DIR}" ${LIMIT:+--limit "${LIMIT}"}
fi
mkdir -p "${WORK}"
start=$(date +%s)
run_one() {
    local init="$1"
    INIT="${init}" DATA="${DATA_DIR}/bin" SAVE_DIR="${WORK}/${init}" OMP_NUM_THREADS="${THREADS:-1}" \
        bash scripts/s2s_ft/finetune.sh --disable-validation > "${WORK}/${init}.stdout" 2>&1
    echo "trained ${init} in $(( $(date +%s) - start )) s"
}
for init in ${SYSTEMS}; do
    if [[ "${PARALLEL}" == 1 ]]; then run_one "${init}" & else run_one "${init}"; fi
done
wait
decode_one() {
    DATA="${DATA_DIR}/bin" CHECKPOINT="${WORK}/$1/checkpoint_last.pt" OUT="${WORK}/$1" PRESET=aclsum \
        OMP_NUM_THREADS="${THREADS:-1}" bash scripts/s2s_ft/decode.sh
}
for init in ${SYSTEMS}; do
    if [[ "${PARALLEL}" == 1 ]]; then decode_one "${init}" & else decode_one "${init}"; fi
done
wait
for init in ${SYSTEMS}; do
    rouge "${WORK}/${init}/test.hyp" "${DATA_DIR}/raw/test.target" "${WORK}/rouge-${init}.txt" > /dev/null
done
python -m fairseq_ext.cli.lead --source "${DATA_DIR}/raw/test.source" --n 3 --out "${WORK}/lead3.hyp"
rouge "${WORK}/lead3.hyp" "${DATA_DIR}/raw/test.target" "${WORK}/rouge-lead3.txt" > /dev/null
tables=()
for init in ${SYSTEMS}; do tables+=("s2s-ft ${METHOD} (init ${init})=${WORK}/rouge-${init}.txt"); done
python scripts/rouge_table.py "${tables[@]}" "LEAD-3=${WORK}/rouge-lead3.txt" | tee "${WORK}/results.md"
echo "done in $(( $(date +%s) - start )) s; outputs in ${WORK}/"
