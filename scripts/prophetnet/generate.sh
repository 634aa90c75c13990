#!/usr/bin/env bash
# Generate summaries with fairseq-generate (predicting streams off: two decoder rows a step)
# and score them with files2rouge. PRESET picks the paper's decoding settings (section 3.2):
#   cnndm     beam 5, lenpen 1.2, min 45, max 110 tokens, no repeated trigrams
#   gigaword  beam 4, lenpen 1.0
#
#   CHECKPOINT=checkpoints/prophetnet_cnndm/checkpoint_best.pt DATA=data/cnndm/bin \
#       REF=data/cnndm/raw/test.target bash scripts/prophetnet/generate.sh
# Data binarized with the BERT dictionary of converted checkpoints decodes with
# BPE_ARGS="--bpe bert --bpe-vocab-file vocab.txt" instead of the sentencepiece default.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PRESET="${PRESET:-cnndm}"
case "${PRESET}" in
    cnndm) beam=5 lenpen=1.2 min_len=45 max_len=110 no_repeat=3 ;;
    gigaword) beam=4 lenpen=1.0 min_len=1 max_len=64 no_repeat=0 ;;
    *) echo "unknown PRESET=${PRESET} (cnndm or gigaword)" >&2; exit 2 ;;
esac
CHECKPOINT="${CHECKPOINT:?set CHECKPOINT to a ProphetNet checkpoint}"
defaults DATA=data/aclsum/bin SUBSET=test
defaults REF="$(dirname "${DATA}")/raw/test.target" OUT="$(dirname "${CHECKPOINT}")/generate-${PRESET}" \
    BEAM="${beam}" LENPEN="${lenpen}" MIN_LEN="${min_len}" MAX_LEN_B="${max_len}" NO_REPEAT="${no_repeat}" \
    BATCH_SIZE=32 SOURCE_POSITIONS=512 TARGET_POSITIONS=140
read -r -a bpe_args <<< "${BPE_ARGS:---bpe sentencepiece --sentencepiece-model ${DATA}/spm.model}"

mkdir -p "${OUT}"
fairseq-generate "${DATA}" --user-dir "${REPO}/user_dir" --task abstractive_summarization \
    --path "${CHECKPOINT}" --gen-subset "${SUBSET}" --batch-size "${BATCH_SIZE}" \
    --required-batch-size-multiple 1 --num-workers 0 \
    --beam "${BEAM}" --lenpen "${LENPEN}" --min-len "${MIN_LEN}" --max-len-b "${MAX_LEN_B}" \
    --no-repeat-ngram-size "${NO_REPEAT}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    "${bpe_args[@]}" "$@" > "${OUT}/generate-${SUBSET}.txt"
hypotheses "${OUT}/generate-${SUBSET}.txt" "${OUT}/${SUBSET}.hyp"
echo "hypotheses: ${OUT}/${SUBSET}.hyp"
rouge "${OUT}/${SUBSET}.hyp" "${REF}" "${OUT}/rouge.txt"
