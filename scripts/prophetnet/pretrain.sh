#!/usr/bin/env bash
# ProphetNet pre-training (paper section 3.1): MASS-style span masking on plain text with the
# future n-gram loss. Paper settings as overridable variables: input 512, one span in every
# 64 tokens, 15% masked (80/10/10), n = 2, gamma = 1.0, Adam lr 3e-4, batch 1024 sequences
# (BATCH_SIZE x UPDATE_FREQ x GPUs), 500K steps. WARMUP is not given in the paper.
#
#   python -m preprocess.prepare --corpus wiki --out data/wiki --vocab-size 32000
#   bash scripts/prophetnet/pretrain.sh                      # ARCH=prophetnet_summ_large
#   ARCH=prophetnet_summ_base MAX_UPDATE=125000 bash scripts/prophetnet/pretrain.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

defaults DATA=data/wiki/bin SAVE=checkpoints/prophetnet_pretrain ARCH=prophetnet_summ_large NGRAM=2 GAMMA=1.0 \
    TOKENS_PER_SAMPLE=512 SPAN_CHUNK=64 MASK_PROB=0.15 LR=3e-4 WARMUP=10000 MAX_UPDATE=500000 BATCH_SIZE=16 \
    UPDATE_FREQ=64

# the model flags finetune.sh reads back (INIT=SAVE/checkpoint_best.pt): positions, size, streams
write_args_txt "${SAVE}" --arch "${ARCH}" --ngram "${NGRAM}" \
    --max-source-positions "${TOKENS_PER_SAMPLE}" --max-target-positions "${TOKENS_PER_SAMPLE}"
fairseq-train "${DATA}" --user-dir "${REPO}/user_dir" \
    --task prophetnet_span_mask --tokens-per-sample "${TOKENS_PER_SAMPLE}" \
    --span-chunk "${SPAN_CHUNK}" --mask-prob "${MASK_PROB}" \
    --max-source-positions "${TOKENS_PER_SAMPLE}" --max-target-positions "${TOKENS_PER_SAMPLE}" \
    --arch "${ARCH}" --ngram "${NGRAM}" \
    --criterion ngram_language_loss --ngram-gamma "${GAMMA}" --label-smoothing 0.1 \
    --optimizer adam --adam-betas "(0.9,0.999)" --lr "${LR}" --weight-decay 0.01 --clip-norm 0.1 \
    --lr-scheduler inverse_sqrt --warmup-updates "${WARMUP}" --warmup-init-lr 1e-07 \
    --max-update "${MAX_UPDATE}" --batch-size "${BATCH_SIZE}" --update-freq "${UPDATE_FREQ}" \
    --dropout 0.1 --attention-dropout 0.1 \
    --save-dir "${SAVE}" --save-interval-updates 5000 --keep-interval-updates 3 --no-epoch-checkpoints \
    --log-format simple --log-interval 50 "$@"
