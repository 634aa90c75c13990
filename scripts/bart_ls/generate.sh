#!/usr/bin/env bash
# Summarize the test set with fairseq-generate (the paper's decoding: beam 4, lenpen 2,
# no-repeat 3) and score it with files2rouge. QUERY must repeat the instruction the model was
# fine-tuned with (finetune.sh QUERY), since fairseq-generate builds its task from the command line.
#
#   CHECKPOINT=checkpoints/bart_ls_aclsum_long/checkpoint_best.pt bash scripts/bart_ls/generate.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CHECKPOINT="${CHECKPOINT:?set CHECKPOINT to a fine-tuned BART-LS checkpoint}"
defaults DATA=data/aclsum_long/bin
defaults RAW="$(dirname "${DATA}")/raw" OUT="$(dirname "${CHECKPOINT}")/generate" \
    SOURCE_POSITIONS=16384 TARGET_POSITIONS=1024 BEAM=4 LENPEN=2.0 NO_REPEAT=3 MIN_LEN=50 MAX_LEN_B=400 \
    BATCH_SIZE=4 QUERY=
if_set INSTRUCTION_ARGS --instruction "${QUERY}"

mkdir -p "${OUT}"
fairseq-generate "${DATA}" --user-dir "${REPO}/user_dir" --task abstractive_summarization \
    --path "${CHECKPOINT}" --gen-subset test --batch-size "${BATCH_SIZE}" --num-workers 0 \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --beam "${BEAM}" --lenpen "${LENPEN}" --no-repeat-ngram-size "${NO_REPEAT}" \
    --min-len "${MIN_LEN}" --max-len-b "${MAX_LEN_B}" --required-batch-size-multiple 1 \
    --bpe sentencepiece --sentencepiece-model "${DATA}/spm.model" "${INSTRUCTION_ARGS[@]}" "$@" \
    > "${OUT}/generate-test.txt"
hypotheses "${OUT}/generate-test.txt" "${OUT}/test.hyp"
rouge "${OUT}/test.hyp" "${RAW}/test.target" "${OUT}/rouge.txt"
