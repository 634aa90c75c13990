#!/usr/bin/env bash
# s2s-ft decoding through fairseq-generate (cached, beam search), with the paper's Table 8
# settings per benchmark as overridable variables, then the hypotheses one per line.
#
#   DATA=data/aclsum_wp/bin CHECKPOINT=runs/s2s_ft/minilm/checkpoint_last.pt OUT=runs/s2s_ft/minilm \
#       PRESET=aclsum bash scripts/s2s_ft/decode.sh
#
# PRESET   max input  max output  beam  length penalty  min output   (Table 8)
# cnndm       608        160        5        0.9            48
# xsum        720         48        8        0.7             1
# squad_qg    384         32        8        1.3             5
# gigaword_fr  96         48        5        0.9             1
# aclsum      380        128        4        1.0            40       (ours: fits 512 positions)
# Inputs + outputs beyond the model's positions (512 for BERT/MiniLM) are refused at load time:
# lower SOURCE_POSITIONS for cnndm/xsum with a 512-position model.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

cd "${REPO}"
DATA="${DATA:?set DATA to the binarized data}"
CHECKPOINT="${CHECKPOINT:?set CHECKPOINT to a checkpoint}"
OUT="${OUT:?set OUT to an output directory}"
defaults PRESET=aclsum
case "${PRESET}" in
    cnndm) P=(608 160 5 0.9 48) ;;
    xsum) P=(720 48 8 0.7 1) ;;
    squad_qg) P=(384 32 8 1.3 5) ;;
    gigaword_fr) P=(96 48 5 0.9 1) ;;
    aclsum) P=(380 128 4 1.0 40) ;;
    *) echo "unknown PRESET=${PRESET} (cnndm xsum squad_qg gigaword_fr aclsum)" >&2; exit 2 ;;
esac
defaults SOURCE_POSITIONS="${P[0]}" TARGET_POSITIONS="${P[1]}" BEAM="${P[2]}" LENPEN="${P[3]}" MIN_LEN="${P[4]}" NO_REPEAT=3 \
    SUBSET=test BATCH_SIZE=16

mkdir -p "${OUT}"
fairseq-generate "${DATA}" --user-dir "${REPO}/user_dir" --task s2s_ft_summarization --path "${CHECKPOINT}" \
    --gen-subset "${SUBSET}" --batch-size "${BATCH_SIZE}" --required-batch-size-multiple 1 --num-workers 0 \
    --beam "${BEAM}" --lenpen "${LENPEN}" --min-len "${MIN_LEN}" --no-repeat-ngram-size "${NO_REPEAT}" \
    --max-len-a 0 --max-len-b "$((TARGET_POSITIONS - 1))" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" "$@" \
    > "${OUT}/generate-${SUBSET}.txt"
hypotheses "${OUT}/generate-${SUBSET}.txt" "${OUT}/${SUBSET}.hyp"
echo "wrote ${OUT}/${SUBSET}.hyp ($(wc -l < "${OUT}/${SUBSET}.hyp") summaries)"
