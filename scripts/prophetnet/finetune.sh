#!/usr/bin/env bash
# Fine-tune ProphetNet on document -> summary data (the foundation task
# abstractive_summarization) with the future n-gram loss. PRESET picks the paper's settings
# (section 3.2), every one overridable:
#   cnndm     lr 1e-4, batch 512, warmup 1000, 10 epochs, label smoothing 0.1
#   gigaword  lr 1e-4, batch 128, warmup 1000, 10 epochs, label smoothing 0.1
# Batch = BATCH_SIZE x UPDATE_FREQ x GPUs. INIT is a pre-trained or converted checkpoint
# (its <mask> row and extra position rows are dropped on load); leave it empty to train from
# scratch. Sources default to 511 tokens: the released checkpoints have 512 position rows,
# one of them for padding. A converted checkpoint needs data tokenized with its WordPiece
# vocabulary (python -m preprocess.prepare_wordpiece --vocab HF_DIR/prophetnet.tokenizer).
#
#   INIT=checkpoints/prophetnet_pretrain/checkpoint_best.pt DATA=data/cnndm/bin \
#       bash scripts/prophetnet/finetune.sh
#   PRESET=gigaword DATA=data/gigaword/bin INIT=converted/checkpoint.pt bash scripts/prophetnet/finetune.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PRESET="${PRESET:-cnndm}"
case "${PRESET}" in
    cnndm) default_batch=512 default_source=511 default_target=140 ;;
    gigaword) default_batch=128 default_source=128 default_target=64 ;;
    *) echo "unknown PRESET=${PRESET} (cnndm or gigaword)" >&2; exit 2 ;;
esac
defaults DATA=data/aclsum/bin INIT= SAVE="checkpoints/prophetnet_${PRESET}" ARCH=prophetnet_summ_large NGRAM=2 \
    GAMMA=1.0 LR=1e-4 WARMUP=1000 MAX_EPOCH=10 LABEL_SMOOTHING=0.1 BATCH="${default_batch}" BATCH_SIZE=8 \
    SOURCE_POSITIONS="${default_source}" TARGET_POSITIONS="${default_target}"
defaults UPDATE_FREQ="$(( BATCH / BATCH_SIZE ))"
if_set init_args --finetune-from-model "${INIT}"
# a converted or pre-trained INIT's args.txt: its size and positions; ARCH and NGRAM must agree,
# the positions may be fewer (a 512-token fine-tuning after a 128-token pre-training takes 128)
args_from_checkpoint "${INIT}" ARCH:=--arch NGRAM=--ngram \
    "SOURCE_POSITIONS<=--max-source-positions" "TARGET_POSITIONS<=--max-target-positions"

fairseq-train "${DATA}" --user-dir "${REPO}/user_dir" \
    --task abstractive_summarization \
    --max-source-positions "${SOURCE_POSITIONS}" --max-target-positions "${TARGET_POSITIONS}" \
    --arch "${ARCH}" --ngram "${NGRAM}" \
    --criterion ngram_language_loss --ngram-gamma "${GAMMA}" --label-smoothing "${LABEL_SMOOTHING}" \
    --optimizer adam --adam-betas "(0.9,0.999)" --lr "${LR}" --weight-decay 0.01 --clip-norm 0.1 \
    --lr-scheduler inverse_sqrt --warmup-updates "${WARMUP}" --warmup-init-lr 1e-07 \
    --max-epoch "${MAX_EPOCH}" --batch-size "${BATCH_SIZE}" --update-freq "${UPDATE_FREQ}" \
    --dropout 0.1 --attention-dropout 0.1 \
    --save-dir "${SAVE}" --no-epoch-checkpoints --log-format simple --log-interval 50 \
    "${init_args[@]}" "${CHECKPOINT_ARGS[@]}" "$@"
