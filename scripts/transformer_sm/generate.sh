#!/usr/bin/env bash
# Summarize a split with a trained Transformer-SM through fairseq-generate: beam 3 with trigram
# blocking as in the paper, summaries of at most MAX_LEN_B tokens (110), at least MIN_LEN.
#
#   DATA=data/aclsum/bin CKPT=runs/transformer_sm/ett/checkpoint_best.pt \
#       bash scripts/transformer_sm/generate.sh            # -> ${OUT}/{generate.txt,hyp.txt}
#
# Text comes back through the data's sentencepiece model (DATA/spm.model), or, for data encoded
# with a Hugging Face tokenizer (from_gpt.sh), through HF_TOKENIZER.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DATA="${DATA:-data/aclsum/bin}"
CKPT="${CKPT:-runs/transformer_sm/ett/checkpoint_best.pt}"
OUT="${OUT:-$(dirname "${CKPT}")/gen}"
SUBSET="${SUBSET:-test}"
BEAM="${BEAM:-3}"
NO_REPEAT="${NO_REPEAT:-3}"
MIN_LEN="${MIN_LEN:-1}"
MAX_LEN_B="${MAX_LEN_B:-110}"
LENPEN="${LENPEN:-1.0}"
MAX_SOURCE="${MAX_SOURCE:-512}"
MAX_TARGET="${MAX_TARGET:-110}"
BATCH_SIZE="${BATCH_SIZE:-16}"
EXTRA_ARGS="${EXTRA_ARGS:-}"
HF_TOKENIZER="${HF_TOKENIZER:-}"

bpe_args=()
if [[ -z "${HF_TOKENIZER}" ]]; then
    bpe_args=(--bpe sentencepiece --sentencepiece-model "${DATA}/spm.model")
fi

mkdir -p "${OUT}"
# shellcheck disable=SC2086  # EXTRA_ARGS is a flag string
fairseq-generate "${DATA}" --user-dir "${REPO}/user_dir" --task transformer_sm --path "${CKPT}" \
    --gen-subset "${SUBSET}" --beam "${BEAM}" --no-repeat-ngram-size "${NO_REPEAT}" \
    --min-len "${MIN_LEN}" --max-len-b "${MAX_LEN_B}" --lenpen "${LENPEN}" \
    --max-source-positions "${MAX_SOURCE}" --max-target-positions "${MAX_TARGET}" \
    --batch-size "${BATCH_SIZE}" --required-batch-size-multiple 1 --num-workers 0 \
    "${bpe_args[@]}" ${EXTRA_ARGS} > "${OUT}/generate.txt"
if [[ -n "${HF_TOKENIZER}" ]]; then
    grep '^H-' "${OUT}/generate.txt" | sort -t- -k2 -n | cut -f3 \
        | python -m fairseq_ext.transformer_sm.hf_text decode --tokenizer "${HF_TOKENIZER}" > "${OUT}/hyp.txt"
else
    grep '^D-' "${OUT}/generate.txt" | sort -t- -k2 -n | cut -f3 > "${OUT}/hyp.txt"
fi
echo "$(wc -l < "${OUT}/hyp.txt") summaries in ${OUT}/hyp.txt"
