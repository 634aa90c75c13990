#!/usr/bin/env bash
# The main job: prepare ACLSum, train a summarizer with fairseq-train --user-dir user_dir,
# generate the test set with fairseq-generate, score it with files2rouge and print a table
# beside the LEAD-3 baseline and a paired test of each difference (fairseq_ext.cli.rouge_paired);
# it also draws the loss and validation ROUGE curves beside that table (training.png, from
# fairseq's JSON log).
#
#   bash scripts/run_demo.sh                    # MODEL=s2s_ft_copy (the default)
#   MODEL=bart MAX_EPOCH=5 bash scripts/run_demo.sh
#   LIMIT=8 MAX_UPDATE=4 BEAM=1 bash scripts/run_demo.sh   # a quick run (minutes) on the first 8 documents of each split
#   SOURCE_CORPUS=/path/to/corpus bash scripts/run_demo.sh  # your own {train,valid,test}.{source,target}
#   THREADS=1 SHARDS=1 bash scripts/run_demo.sh  # one core (default: nproc training threads, nproc decoders)
#
# MODEL names a recipe in scripts/demo/<MODEL>.sh (which sets CORPUS, VOCAB_SIZE, MAX_EPOCH,
# TRAIN_ARGS and GEN_ARGS, and may set DATA_DIR and PREPARE (the folder the data go to and the module
# that prepares them), STOP_HOURS, EVAL_ROUGE_ARGS, LEAD_ARGS (how LEAD-3 reads the test papers)
# and LINES_PER_DOCUMENT (summaries per test document, e.g. one per aspect, joined before scoring),
# and may define a function pretrain, a first training whose checkpoint the training starts from).
# CORPUS (SOURCE_CORPUS for the s2s-ft recipes) is a built-in corpus or a directory of your own;
# data go to data/<its name>[_wp][-limitN]/ and outputs to runs/demo-<MODEL>/ (for a directory of
# your own, runs/demo-<MODEL>-<its data name>/), and LEAD-3 reads that data's own test sources.
#
# A run never reports a model it did not train: an earlier run in the same folder is moved to
# <folder>.previous first, a training that fails stops the job with fairseq-train's status, and a
# run shorter than the recipe's save interval saves at its end.
#
# Every recipe's summaries come from the same checkpoint rule, so that the figures of different
# MODELs compare: checkpoint_best.pt, the checkpoint with the best validation ROUGE-L (F1 of
# greedy summaries of the validation set, decoded with EVAL_ROUGE_ARGS at every validation).
# A recipe sets how often it validates, never which metric chooses the checkpoint. A recipe (or
# the environment) may set AVERAGE=N with KEEP >= N: the test set is then decoded by the mean of
# the last N interval checkpoints (python -m fairseq_ext.cli.average_checkpoints), which the
# results name; a run that kept fewer decodes checkpoint_best.pt and says so.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO}"
MODEL="${MODEL:-s2s_ft_copy}"
RECIPE="scripts/demo/${MODEL}.sh"
if [[ ! -f "${RECIPE}" ]]; then
    echo "unknown MODEL=${MODEL}; choose one of: $(ls scripts/demo | sed 's/\.sh$//' | tr '\n' ' ')" >&2
    exit 2
fi

# SETUP=0: use the environment as it is (a test running the job in a copy of the repository,
# whose set-up would otherwise reinstall the editable project from that copy)
if [[ "${SETUP:-1}" != 0 ]]; then
    bash scripts/setup_env.sh
fi
# shellcheck disable=SC1091
source .venv/bin/activate
# the schedule the recipes that train from scratch put in their TRAIN_ARGS ("${FROM_SCRATCH_ARGS[@]}"):
# Adam, inverse square root after 50 warm-up updates, dropout 0.1, weight decay 0.01, clipping 1.0
FROM_SCRATCH_ARGS=(--optimizer adam --adam-betas "(0.9,0.98)" --lr "${LR:-1e-3}" --lr-scheduler inverse_sqrt
                   --warmup-updates 50 --dropout 0.1 --weight-decay 0.01 --clip-norm 1.0)
# a corpus of the user's, for every recipe (the s2s-ft ones call it SOURCE_CORPUS)
if [[ -n "${SOURCE_CORPUS:-}" && -z "${CORPUS:-}" && "${MODEL}" != s2s_ft_copy ]]; then
    CORPUS="${SOURCE_CORPUS}"
fi
# shellcheck disable=SC1090
source "${RECIPE}"

LIMIT="${LIMIT:-}"  # keep only the first LIMIT documents of each split (empty: all)
DATA_DIR="${DATA_DIR:-data/$(data_name "${CORPUS}")}"
if [[ -z "${WORK:-}" ]]; then
    WORK="runs/demo-${MODEL}"
    if is_corpus_dir "${CORPUS}"; then  # a corpus of the user's: the run is named from its data
        WORK+="-$(basename "${DATA_DIR}")"
    fi
fi
STOP_HOURS="${STOP_HOURS:-0.12}"
# the cores it has: fairseq-train with THREADS torch threads, the test set decoded by SHARDS
# processes of one thread each (THREADS=1 SHARDS=1 on a machine shared with other jobs)
CORES="$(nproc)"
export OMP_NUM_THREADS="${THREADS:-${CORES}}"
SHARDS="${SHARDS:-${CORES}}"
# a fresh run folder: nothing an earlier run left (its checkpoint_best.pt above all) can be reported
if [[ -d "${WORK}" && -n "$(ls -A "${WORK}")" ]]; then
    if [[ ! -e "${WORK}/train.log" && ! -e "${WORK}/checkpoints" ]]; then
        echo "WORK=${WORK} is not empty and holds no earlier run (no train.log, no checkpoints/): choose another WORK" >&2
        exit 2
    fi
    rm -rf "${WORK}.previous"
    mv "${WORK}" "${WORK}.previous"
    echo "== ${WORK} held an earlier run: moved to ${WORK}.previous"
fi
mkdir -p "${WORK}"
start=$(date +%s)

echo "== [1/4] preparing ${CORPUS} -> ${DATA_DIR} (at $(( $(date +%s) - start )) s)"
if [[ -z "${PREPARE+set}" ]]; then
    PREPARE=(preprocess.prepare --vocab-size "${VOCAB_SIZE}")
fi
prepare_data "${PREPARE[0]}" "${CORPUS}" "${DATA_DIR}" "${PREPARE[@]:1}"

# fairseq validates and saves every --validate-interval / --save-interval epochs (a recipe's
# choice), and at --max-update or --stop-time-hours, but not at --max-epoch itself: a run shorter
# than one interval validates and saves every epoch, so that it has a checkpoint of its own
for flag in --validate-interval --save-interval; do
    interval=1
    for i in "${!TRAIN_ARGS[@]}"; do
        if [[ "${TRAIN_ARGS[$i]}" == "${flag}" ]]; then interval="${TRAIN_ARGS[$((i + 1))]}"; fi
    done
    if (( MAX_EPOCH < interval )); then
        TRAIN_ARGS+=("${flag}" 1)
    fi
done
if [[ " ${TRAIN_ARGS[*]} " == *" --best-checkpoint-metric "* ]]; then
    echo "${RECIPE} chooses its checkpoint metric; the demo's rule is validation ROUGE-L (run_demo.sh)" >&2
    exit 2
fi
EVAL_ROUGE_ARGS="${EVAL_ROUGE_ARGS:-{\"beam\": 1, \"min_len\": 40, \"max_len_b\": 140, \"no_repeat_ngram_size\": 3\}}"
TRAIN_ARGS+=(--eval-rouge --eval-rouge-args "${EVAL_ROUGE_ARGS}"
             --best-checkpoint-metric rougeL --maximize-best-checkpoint-metric)

# a recipe may pre-train first (a function pretrain that sets PRETRAINED, the checkpoint, and
# PRETRAIN_SAYS, what the results say of it): the training below starts from its weights
PRETRAINED="" PRETRAIN_SAYS=""
if declare -F pretrain > /dev/null; then
    echo "== [1/4] pre-training (at $(( $(date +%s) - start )) s)"
    pretrain  # under set -e: a step of it that fails ends the job
    if [[ -n "${PRETRAINED}" ]]; then
        TRAIN_ARGS+=(--finetune-from-model "${PRETRAINED}")
        echo "   pre-trained: ${PRETRAINED}"
    fi
fi

echo "== [2/4] fairseq-train ${MODEL} (at most ${MAX_EPOCH} epochs or ${STOP_HOURS} h) (at $(( $(date +%s) - start )) s)"
BEST="${WORK}/checkpoints/checkpoint_best.pt"
status=0
fairseq-train "${DATA_DIR}/bin" --user-dir "${REPO}/user_dir" "${TRAIN_ARGS[@]}" \
    --max-epoch "${MAX_EPOCH}" --stop-time-hours "${STOP_HOURS}" \
    --save-dir "${WORK}/checkpoints" --no-epoch-checkpoints \
    --log-format json --log-interval 10 --num-workers 0 --seed 1 \
    2>&1 | tee "${WORK}/train.log" \
    | { grep --line-buffered -E "\| (train|valid) \||done training|truncated|longer than" || true; } \
    || status=$?
if (( status != 0 )); then
    echo "training failed (fairseq-train exited with ${status}); the end of ${WORK}/train.log:" >&2
    tail -n 15 "${WORK}/train.log" >&2
    exit 1
fi
if [[ ! -f "${BEST}" ]]; then
    echo "training saved no ${BEST} (no validation ran?): see ${WORK}/train.log" >&2
    exit 1
fi
# shellcheck disable=SC2016
updates="$(python -c 'import sys; import user_dir; from fairseq_ext.compat.checkpoint import safe_load
print(safe_load(sys.argv[1])["optimizer_history"][-1]["num_updates"])' "${BEST}")"
echo "   model: ${BEST}, saved by this run at update ${updates}"
# a time budget that ended training changes the model: said in the results, not only in the log
CUT=""
if grep -q "Stopping training due to cumulative_training_time" "${WORK}/train.log"; then
    CUT="; training stopped by STOP_HOURS=${STOP_HOURS} before its last update"
    echo "   note: training stopped by the time budget (STOP_HOURS=${STOP_HOURS}), not by its update count" >&2
fi

# AVERAGE=N: the test set is decoded by the mean of the last N interval checkpoints (KEEP of them
# are kept) rather than by the best one; a run that kept fewer (a quick run) decodes the best
MODEL_PATH="${BEST}" MODEL_SAYS="${BEST}, update ${updates}"
if (( ${AVERAGE:-0} > 0 )); then
    averaged="${WORK}/checkpoints/checkpoint_avg${AVERAGE}.pt"
    kept=$(find "${WORK}/checkpoints" -maxdepth 1 -name 'checkpoint_*_*.pt' | grep -cE '/checkpoint_[0-9]+_[0-9]+\.pt$' || true)
    if (( kept >= AVERAGE )); then
        python -m fairseq_ext.cli.average_checkpoints --inputs "${WORK}/checkpoints" \
            --num-update-checkpoints "${AVERAGE}" --output "${averaged}"
        averaged_updates=$(find "${WORK}/checkpoints" -maxdepth 1 -name 'checkpoint_*_*.pt' -printf '%f\n' \
            | sed -nE 's/^checkpoint_[0-9]+_([0-9]+)\.pt$/\1/p' | sort -n | tail -n "${AVERAGE}" | paste -sd+)
        MODEL_PATH="${averaged}" MODEL_SAYS="${averaged}, the mean of updates ${averaged_updates} (the best: update ${updates})"
        echo "   decoding the mean of the checkpoints of updates ${averaged_updates}: ${averaged}"
    else
        echo "   note: AVERAGE=${AVERAGE} asks for ${AVERAGE} checkpoints and the run kept ${kept}: the best is decoded" >&2
        MODEL_SAYS="${MODEL_SAYS}; not averaged (AVERAGE=${AVERAGE}, ${kept} checkpoint(s) kept)"
    fi
fi

# at most one process a batch of 8 test pairs (fairseq-generate fails on a shard with no batch)
batches=$(( ($(wc -l < "${DATA_DIR}/raw/test.source") + 7) / 8 ))
SHARDS=$(( SHARDS < batches ? SHARDS : batches ))
echo "== [3/4] fairseq-generate on the test set (${SHARDS} processes) (at $(( $(date +%s) - start )) s)"
generate_in_shards "${WORK}/generate-test.txt" "${SHARDS}" \
    "${DATA_DIR}/bin" --user-dir "${REPO}/user_dir" --path "${MODEL_PATH}" \
    --gen-subset test --batch-size 8 --num-workers 0 "${GEN_ARGS[@]}" \
    --bpe sentencepiece --sentencepiece-model "${DATA_DIR}/bin/spm.model"
hypotheses "${WORK}/generate-test.txt" "${WORK}/test.hyp"
# what ROUGE and the fluency figures read: the words tokenized, files2rouge's input (it splits
# sentences at " . "): for WordPiece data the words of the pieces, not the summaries restored to
# their papers' casing and spacing (--restore-surface), which would score another ROUGE-L
if [[ -f "${DATA_DIR}/bin/vocab.txt" ]]; then
    hypotheses "${WORK}/generate-test.txt" "${WORK}/test.tokens.hyp" W
else
    cp "${WORK}/test.hyp" "${WORK}/test.tokens.hyp"
fi
# the references: one document a line (per-aspect targets joined, as the summaries are)
python -m fairseq_ext.cli.join_lines --every "${LINES_PER_DOCUMENT:-1}" "${DATA_DIR}/raw/test.target" "${WORK}/test.ref"
if [[ "${LINES_PER_DOCUMENT:-1}" != 1 ]]; then
    mv "${WORK}/test.hyp" "${WORK}/test.pieces.hyp"
    python -m fairseq_ext.cli.join_lines --every "${LINES_PER_DOCUMENT}" "${WORK}/test.pieces.hyp" "${WORK}/test.hyp"
    python -m fairseq_ext.cli.join_lines --every "${LINES_PER_DOCUMENT}" "${WORK}/test.tokens.hyp" "${WORK}/test.tokens.hyp"
fi
if [[ -z "${LEAD_ARGS+set}" ]]; then
    if [[ "${CORPUS}" == "aclsum" ]]; then  # ACLSum's own sentence segmentation, as published
        LEAD_ARGS=(--aclsum test)
    else  # the data's own test sources (a corpus of the user's, aclsum_long, ...)
        LEAD_ARGS=(--source "${DATA_DIR}/raw/test.source")
    fi
fi
python -m fairseq_ext.cli.lead "${LEAD_ARGS[@]}" --n 3 --out "${WORK}/lead3.hyp" ${LIMIT:+--limit "${LIMIT}"}

echo "== [4/4] files2rouge (at $(( $(date +%s) - start )) s)"
rouge "${WORK}/test.tokens.hyp" "${WORK}/test.ref" "${WORK}/rouge-${MODEL}.txt" > /dev/null
rouge "${WORK}/lead3.hyp" "${WORK}/test.ref" "${WORK}/rouge-lead3.txt" > /dev/null
python scripts/rouge_table.py "${MODEL}=${WORK}/rouge-${MODEL}.txt" "LEAD-3=${WORK}/rouge-lead3.txt" \
    --summaries "${MODEL}=${WORK}/test.tokens.hyp" --summaries "LEAD-3=${WORK}/lead3.hyp" --references "${WORK}/test.ref" \
    | tee "${WORK}/results.md"
echo "the model against LEAD-3 on the same documents, paired (python -m fairseq_ext.cli.rouge_paired):" \
    | tee -a "${WORK}/results.md"
python -m fairseq_ext.cli.rouge_paired "${WORK}/test.tokens.hyp" "${WORK}/lead3.hyp" "${WORK}/test.ref" \
    --names "${MODEL}" LEAD-3 | tee -a "${WORK}/results.md"
echo "${MODEL}: ${MODEL_SAYS}${CUT}${PRETRAIN_SAYS}; ${DATA_DIR}/raw/test.target${LIMIT:+ (first ${LIMIT} documents)}" \
    | tee -a "${WORK}/results.md"
python scripts/plot_training.py "${WORK}/train.log" --out "${WORK}/training.png" --title "${MODEL}"
python scripts/plot_training.py "${WORK}/train.log" --out "${WORK}/training-minutes.png" --title "${MODEL}" --x minutes
echo "done in $(( $(date +%s) - start )) s (${OMP_NUM_THREADS} training threads, ${SHARDS} decoding processes); outputs in ${WORK}/"
