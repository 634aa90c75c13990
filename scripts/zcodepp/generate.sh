#!/usr/bin/env bash
# Summarize a test set with fairseq-generate and score it with files2rouge. Decoding: the
# paper's Table 8 ranges (beam {2,4,5,8}, length penalty 0.5-1.2, no-repeat {0,3}), overridable.
# FIE_CHUNK switches fusion-in-encoder on (or off) at generation time.
#
#   CHECKPOINT=checkpoints/zcodepp_aclsum/checkpoint_best.pt bash scripts/zcodepp/generate.sh
#   CORPUS=aclsum_long FIE_CHUNK=256 SOURCE_POSITIONS=8192 CHECKPOINT=... bash scripts/zcodepp/generate.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CHECKPOINT="${CHECKPOINT:?set CHECKPOINT to a fine-tuned Z-Code++ checkpoint}"
defaults CORPUS=aclsum
defaults DATA="data/zcodepp/${CORPUS}/bin"
defaults RAW="$(dirname "${DATA}")/raw" OUT="$(dirname "${CHECKPOINT}")/generate" SOURCE_POSITIONS=1024 \
    TARGET_POSITIONS=512 FIE_CHUNK= BEAM=4 LENPEN=1.0 NO_REPEAT=3 MIN_LEN=10 MAX_LEN_B=200 BATCH_SIZE=8

overrides="{\"max_source_positions\": ${SOURCE_POSITIONS}"
if [[ -n "${FIE_CHUNK}" ]]; then
    overrides+=", \"fie_chunk_size\": ${FIE_CHUNK}"
fi
overrides+="}"

mkdir -p "${OUT}"
fairseq-generate "${DATA}" --user-dir "${REPO}/user_dir" --task abstractive_summarization \
    --path "${CHECKPOINT}" --model-overrides "${overrides}" --gen-subset test \
    --batch-size "${BATCH_SIZE}" --required-batch-size-multiple 1 --num-workers 0 \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --beam "${BEAM}" --lenpen "${LENPEN}" --no-repeat-ngram-size "${NO_REPEAT}" \
    --min-len "${MIN_LEN}" --max-len-b "${MAX_LEN_B}" \
    --bpe sentencepiece --sentencepiece-model "${DATA}/spm.model" "$@" > "${OUT}/generate-test.txt"
hypotheses "${OUT}/generate-test.txt" "${OUT}/test.hyp"
rouge "${OUT}/test.hyp" "${RAW}/test.target" "${OUT}/rouge.txt"
cat "${OUT}/rouge.txt"
