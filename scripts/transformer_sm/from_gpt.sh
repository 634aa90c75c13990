#!/usr/bin/env bash
# Transformer-SM from pretrained GPT / GPT-2 weights, as in the paper: convert a local Hugging
# Face model, encode the corpus with its tokenizer, binarize with its dictionary, then run the
# DAT -> ETT schedule (train.sh) from the converted weights and decode the test set.
#
#   HF_MODEL=/path/to/local/gpt2 RAW=data/aclsum/raw WORK=runs/tsm_gpt2 \
#       bash scripts/transformer_sm/from_gpt.sh
#
# HF_MODEL: a local folder with config.json, model.safetensors (or pytorch_model.bin) and the
# tokenizer files (HF_TOKENIZER, default HF_MODEL). RAW: {train,valid,test}.{source,target}
# text, one document per line (what python -m preprocess.prepare writes to OUT/raw).
# Every variable of train.sh and generate.sh (DAT_EPOCHS, LR, BATCH, MAX_LEN_B, ...) applies.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

: "${HF_MODEL:?set HF_MODEL to a local Hugging Face GPT or GPT-2 folder}"
defaults HF_TOKENIZER="${HF_MODEL}" RAW=data/aclsum/raw WORK=runs/transformer_sm_gpt MODEL_ARGS= WORKERS=2

echo "== [1/4] converting ${HF_MODEL} -> ${WORK}/conv"
convert_flags=()
if [[ "${MODEL_ARGS}" == *--no-source-embeddings* ]]; then
    convert_flags+=(--no-source-embeddings)
fi
python -m fairseq_ext.cli.convert transformer_sm --hf-dir "${HF_MODEL}" --out "${WORK}/conv" "${convert_flags[@]}"

echo "== [2/4] encoding ${RAW} with the model's tokenizer -> ${WORK}/ids"
mkdir -p "${WORK}/ids"
inputs=() outputs=()
for split in train valid test; do
    for side in source target; do
        inputs+=("${RAW}/${split}.${side}")
        outputs+=("${WORK}/ids/${split}.${side}")
    done
done
python -m fairseq_ext.cli.hf_text encode --tokenizer "${HF_TOKENIZER}" \
    --inputs "${inputs[@]}" --outputs "${outputs[@]}"

echo "== [3/4] fairseq-preprocess with the converted dictionary -> ${WORK}/bin"
fairseq-preprocess --source-lang source --target-lang target \
    --trainpref "${WORK}/ids/train" --validpref "${WORK}/ids/valid" --testpref "${WORK}/ids/test" \
    --srcdict "${WORK}/conv/dict.txt" --tgtdict "${WORK}/conv/dict.txt" \
    --destdir "${WORK}/bin" --workers "${WORKERS}"

echo "== [4/4] DAT -> ETT from the converted weights, then the test set"
DATA="${WORK}/bin" SAVE="${WORK}" INIT="${WORK}/conv/model.pt" \
    ARCH_ARGS="$(cat "${WORK}/conv/args.txt")" MODEL_ARGS="${MODEL_ARGS}" \
    bash "${REPO}/scripts/transformer_sm/train.sh"
DATA="${WORK}/bin" CHECKPOINT="${WORK}/ett/checkpoint_best.pt" HF_TOKENIZER="${HF_TOKENIZER}" \
    bash "${REPO}/scripts/transformer_sm/generate.sh"
