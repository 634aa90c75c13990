#!/usr/bin/env bash
# Summarize a split with a trained Transformer-SM through fairseq-generate: beam 3 with trigram
# blocking as in the paper, summaries of at most MAX_LEN_B tokens (110), at least MIN_LEN.
#
#   DATA=data/aclsum/bin CHECKPOINT=runs/transformer_sm/ett/checkpoint_best.pt \
#       bash scripts/transformer_sm/generate.sh            # -> ${OUT}/{generate.txt,hyp.txt}
#
# Text comes back through the data's sentencepiece model (DATA/spm.model), or, for data encoded
# with a Hugging Face tokenizer (from_gpt.sh), through HF_TOKENIZER.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

defaults DATA=data/aclsum/bin CHECKPOINT=runs/transformer_sm/ett/checkpoint_best.pt
defaults OUT="$(dirname "${CHECKPOINT}")/gen" SUBSET=test BEAM=3 NO_REPEAT=3 MIN_LEN=1 MAX_LEN_B=110 LENPEN=1.0 \
    SOURCE_POSITIONS=512 TARGET_POSITIONS=110 BATCH_SIZE=16 EXTRA_ARGS= HF_TOKENIZER=

bpe_args=()
if [[ -z "${HF_TOKENIZER}" ]]; then
    bpe_args=(--bpe sentencepiece --sentencepiece-model "${DATA}/spm.model")
fi

mkdir -p "${OUT}"
# shellcheck disable=SC2086  # EXTRA_ARGS is a flag string
fairseq-generate "${DATA}" --user-dir "${REPO}/user_dir" --task transformer_sm --path "${CHECKPOINT}" \
    --gen-subset "${SUBSET}" --beam "${BEAM}" --no-repeat-ngram-size "${NO_REPEAT}" \
    --min-len "${MIN_LEN}" --max-len-b "${MAX_LEN_B}" --lenpen "${LENPEN}" \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --batch-size "${BATCH_SIZE}" --required-batch-size-multiple 1 --num-workers 0 \
    "${bpe_args[@]}" ${EXTRA_ARGS} > "${OUT}/generate.txt"
if [[ -n "${HF_TOKENIZER}" ]]; then
    hypotheses "${OUT}/generate.txt" "${OUT}/hyp.ids.txt" H
    python -m fairseq_ext.cli.hf_text decode --tokenizer "${HF_TOKENIZER}" < "${OUT}/hyp.ids.txt" > "${OUT}/hyp.txt"
else
    hypotheses "${OUT}/generate.txt" "${OUT}/hyp.txt"
fi
echo "$(wc -l < "${OUT}/hyp.txt") summaries in ${OUT}/hyp.txt"
