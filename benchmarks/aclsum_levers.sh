#!/usr/bin/env bash
# One row of the ACLSum lever table (benchmarks/RESULTS.md, "Summaries that beat LEAD-3"):
# s2s-ft from MiniLM-L6-H384 trained for a FIXED number of updates (comparable however busy the
# machine is), validation ROUGE every VALID_EVERY updates (greedy), the checkpoint with the best
# validation ROUGE-L decoded on valid and test (beam search), files2rouge; the row (wall and CPU
# minutes, load, valid and test ROUGE) is appended to ${WORK}/levers.tsv.
#
#   NAME=copy COPY_HEADS=12 bash benchmarks/aclsum_levers.sh
#   NAME=abstract CORPUS=aclsum_abstract COPY_HEADS=12 bash benchmarks/aclsum_levers.sh
#   NAME=aspects12 CORPUS=aclsum_aspects COPY_HEADS=12 MAX_UPDATE=400 bash benchmarks/aclsum_levers.sh
#   NAME=copy-beam BEAM=5 LENPEN=2.0 GENERATE_ONLY=1 bash benchmarks/aclsum_levers.sh  # decode NAME's checkpoint again
#   NAME=aspects12-words CHECKPOINT_FROM=aspects12 GENERATE_ONLY=1 CORPUS=aclsum_aspects COPY_HEADS=12 NO_REPEAT=2 \
#       DECODE_WORDS=source DECODE_WORDS_FILE=data/aclsum_aspects_wp/raw/train.target bash benchmarks/aclsum_levers.sh
#   # pre-training on Wikipedia gap sentences (python -m fairseq_ext.cli.gap_sentences), then fine-tuning from it:
#   NAME=wiki-gsg CORPUS=wiki_gsg COPY_HEADS=12 MAX_UPDATE=300 VALID_EVERY=100 DECODE=0 bash benchmarks/aclsum_levers.sh
#   NAME=wiki-aspects12 CORPUS=aclsum_aspects COPY_HEADS=12 MAX_UPDATE=400 \
#       INIT_FROM=runs/levers/wiki-gsg/checkpoints/checkpoint_best.pt bash benchmarks/aclsum_levers.sh
#   # the same in-domain: gap sentences cut out of the training papers' own full text (no labels)
#   NAME=aclsum-gsg CORPUS=aclsum_gsg COPY_HEADS=12 MAX_UPDATE=300 VALID_EVERY=150 DECODE=0 bash benchmarks/aclsum_levers.sh
#   # decoding levers on a checkpoint (validation only): no word twice in a row, one sentence per aspect
#   NAME=aspects12-norepeat CHECKPOINT_FROM=aspects12 GENERATE_ONLY=1 SPLITS=valid CORPUS=aclsum_aspects \
#       COPY_HEADS=12 NO_REPEAT_WORD=1 bash benchmarks/aclsum_levers.sh
#   # minimum Bayes risk among the beam's 8 best, the three aspects chosen jointly against repeated bigrams
#   NAME=main-mbr CHECKPOINT_FROM=main GENERATE_ONLY=1 SPLITS=valid CORPUS=aclsum_aspects COPY_HEADS=12 BEAM=8 \
#       NBEST=8 MBR_ARGS="--orders 2 --repeat-penalty 0.05" bash benchmarks/aclsum_levers.sh
#   # a paper's aspects decoded in turn, none writing a word bigram an earlier one wrote
#   NAME=main-docbigrams CHECKPOINT_FROM=main GENERATE_ONLY=1 SPLITS=valid CORPUS=aclsum_aspects COPY_HEADS=12 \
#       BEAM=8 NO_REPEAT=2 NO_REPEAT_WORD=1 DECODE_WORDS=source DECODE_WORDS_FILE=data/aclsum_aspects_wp/raw/train.target \
#       BIGRAM_BONUS=0.5 DOCUMENT_BIGRAMS=1 bash benchmarks/aclsum_levers.sh
#   # checkpoint averaging: a checkpoint every 50 updates, the last 8 kept, then the mean of the last 3 decoded
#   NAME=avg CORPUS=aclsum_aspects COPY_HEADS=12 MAX_UPDATE=400 KEEP=8 DECODE=0 bash benchmarks/aclsum_levers.sh
#   NAME=avg3 CHECKPOINT_FROM=avg AVERAGE=3 GENERATE_ONLY=1 SPLITS=valid CORPUS=aclsum_aspects COPY_HEADS=12 \
#       BEAM=8 NO_REPEAT=2 bash benchmarks/aclsum_levers.sh
#   # coverage (See et al. 2017, 2.3), trained briefly on top of a checkpoint with the coverage loss
#   NAME=aspects12-coverage CORPUS=aclsum_aspects COPY_HEADS=12 COVERAGE=1 COVERAGE_LOSS=1.0 MAX_UPDATE=100 \
#       INIT_FROM=runs/levers/aspects12/checkpoints/checkpoint_best.pt bash benchmarks/aclsum_levers.sh
#
# Only validation figures choose anything (the checkpoint here; levers and decoding settings
# in RESULTS.md); test figures are reported for the checkpoint validation chose.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "${REPO}"
# shellcheck disable=SC1091
source .venv/bin/activate
NAME="${NAME:?set NAME to name the row}"
CORPUS="${CORPUS:-aclsum}"              # aclsum | aclsum_abstract | aclsum_aspects | wiki_gsg | aclsum_gsg
COPY_HEADS="${COPY_HEADS:-0}"           # copy through the last layer's first N heads (0: not so)
COPY_ATTENTION_DIM="${COPY_ATTENTION_DIM:-0}"  # copy through an attention of its own (0: not so)
METHOD="${METHOD:-pseudo}"              # causal | masked | pseudo
LR="${LR:-2e-4}"
MAX_UPDATE="${MAX_UPDATE:-300}"
TOTAL_UPDATES="${TOTAL_UPDATES:-${MAX_UPDATE}}"  # end of the linear decay (a screen: the first updates of a longer run)
WARMUP="${WARMUP:-30}"
BATCH_SIZE="${BATCH_SIZE:-8}"
TARGET_MASK_PROB="${TARGET_MASK_PROB:-0.2}"
MAX_SOURCE="${MAX_SOURCE:-256}"
case "${CORPUS}" in  # one-sentence targets: an aspect's summary, a gap sentence
    aclsum_aspects) MAX_TARGET="${MAX_TARGET:-48}" MIN_LEN="${MIN_LEN:-15}" ;;
    wiki_gsg|aclsum_gsg) MAX_TARGET="${MAX_TARGET:-48}" MIN_LEN="${MIN_LEN:-8}" ;;
esac
MAX_TARGET="${MAX_TARGET:-128}"
MIN_LEN="${MIN_LEN:-40}"
VALID_EVERY="${VALID_EVERY:-50}"
KEEP="${KEEP:-1}"                       # --keep-interval-updates: checkpoints kept (one every VALID_EVERY updates)
AVERAGE="${AVERAGE:-0}"                 # > 0: decode the mean of the last AVERAGE kept checkpoints, not the best
NO_REPEAT_WORD="${NO_REPEAT_WORD:-0}"   # 1: --no-repeat-word (never a whole word twice in a row), valid and test decoding
END_AT_SENTENCE="${END_AT_SENTENCE:-0}" # 1: --end-at-sentence (only </s> after a sentence end)
COVERAGE="${COVERAGE:-0}"               # 1: --coverage on the copy attention (needs COPY_HEADS or COPY_ATTENTION_DIM)
COVERAGE_LOSS="${COVERAGE_LOSS:-1.0}"   # --coverage-loss-weight with COVERAGE=1 (See et al.: 1.0)
rules=() rule_keys=""
if [[ "${NO_REPEAT_WORD}" == 1 ]]; then rules+=(--no-repeat-word); rule_keys+=", \"no_repeat_word\": true"; fi
if [[ "${END_AT_SENTENCE}" == 1 ]]; then rules+=(--end-at-sentence); rule_keys+=", \"end_at_sentence\": true"; fi
coverage=()
if [[ "${COVERAGE}" == 1 ]]; then coverage=(--coverage --coverage-loss-weight "${COVERAGE_LOSS}"); fi
GREEDY="{\"beam\": 1, \"min_len\": ${MIN_LEN}, \"max_len_b\": $((MAX_TARGET - 1)), \"no_repeat_ngram_size\": 3${rule_keys}}"
VALID_ARGS="${VALID_ARGS:-${GREEDY}}"   # validation decoding during training
BEAM="${BEAM:-4}"
LENPEN="${LENPEN:-1.0}"
MAX_LEN_B="${MAX_LEN_B:-$((MAX_TARGET - 1))}"
NO_REPEAT="${NO_REPEAT:-3}"
DECODE_WORDS="${DECODE_WORDS:-any}"     # any | source (only words of the source, and of DECODE_WORDS_FILE)
DECODE_WORDS_FILE="${DECODE_WORDS_FILE:-}"
BIGRAM_BONUS="${BIGRAM_BONUS:-0}"       # --decode-words-bigram-bonus (with DECODE_WORDS=source)
NBEST="${NBEST:-1}"                     # > 1: choose among the n best by python -m fairseq_ext.cli.mbr MBR_ARGS
DOCUMENT_BIGRAMS="${DOCUMENT_BIGRAMS:-0}"  # 1: --no-repeat-document-bigrams (a document's lines in turn)
MBR_ARGS="${MBR_ARGS:-}"                # e.g. "--orders 2 --repeat-penalty 0.05" (--lines-per-document is the corpus's)
THREADS="${THREADS:-1}"
SHARDS="${SHARDS:-$(nproc)}"            # decoding processes of one thread each (as the main job)
SEED="${SEED:-1}"
DECODE="${DECODE:-1}"                   # 0: a screen, no beam decoding (the row gives the last greedy validation)
# SPLITS (default "valid test"): the splits decoded; "valid" alone screens a decoding setting
GENERATE_ONLY="${GENERATE_ONLY:-}"      # non-empty: decode the checkpoint of CHECKPOINT_FROM (default NAME) again
WORK="${WORK:-runs/levers}"
LIMIT="${LIMIT:-}"
INIT_FROM="${INIT_FROM:-}"              # a checkpoint to fine-tune from (--finetune-from-model): weights only

DATA="data/${CORPUS}_wp${LIMIT:+_limit${LIMIT}}"
RUN="${WORK}/${NAME}"
CKPT_DIR="${WORK}/${CHECKPOINT_FROM:-${NAME}}/checkpoints"
mkdir -p "${RUN}"
export OMP_NUM_THREADS="${THREADS}"
if [[ "${CORPUS}" == *_gsg && ! -f "${DATA}/bin/dict.source.txt" ]]; then
    # wiki_gsg keeps the gap sentence in its source (a copy task); aclsum_gsg, in-domain, cuts it
    # out of the training papers' full text (PEGASUS's form)
    gsg_form=()
    if [[ "${CORPUS}" == aclsum_gsg ]]; then gsg_form=(--remove); fi
    python -m fairseq_ext.cli.gap_sentences --corpus "${CORPUS%_gsg}" "${gsg_form[@]}" --out "data/${CORPUS}" \
        ${LIMIT:+--limit "${LIMIT}"}
    python -m preprocess.prepare_wordpiece --corpus "data/${CORPUS}" --out "${DATA}"
elif [[ ! -f "${DATA}/bin/dict.source.txt" ]]; then
    python -m preprocess.prepare_wordpiece --corpus "${CORPUS}" --out "${DATA}" ${LIMIT:+--limit "${LIMIT}"}
fi
per_document=1
if [[ "${CORPUS}" == aclsum_aspects ]]; then per_document=3; fi
documents=()
if [[ "${DOCUMENT_BIGRAMS}" == 1 ]]; then documents=(--lines-per-document "${per_document}" --no-repeat-document-bigrams); fi

load_sampler() {  # the 1-minute load average every 15 s, to describe how busy the machine was
    while true; do cut -d' ' -f1 /proc/loadavg >> "${RUN}/load.txt"; sleep 15; done
}
: > "${RUN}/load.txt"
load_sampler &
sampler=$!
trap 'kill "${sampler}" 2>/dev/null || true' EXIT

train_wall=0 train_cpu=0
if [[ -z "${GENERATE_ONLY}" ]]; then
    rm -rf "${CKPT_DIR}"
    minilm="$(python -c 'from fairseq_ext.data.wordpiece import minilm_dir; print(minilm_dir())')"
    /usr/bin/time -f "%e %U %S" -o "${RUN}/train.time" fairseq-train "${DATA}/bin" --user-dir "${REPO}/user_dir" \
        --task s2s_ft_summarization --arch s2s_ft_minilm_l6_h384 --init-from-hf "${minilm}" \
        ${INIT_FROM:+--finetune-from-model "${INIT_FROM}"} \
        --copy-heads "${COPY_HEADS}" --copy-attention-dim "${COPY_ATTENTION_DIM}" --s2s-method "${METHOD}" --target-mask-prob "${TARGET_MASK_PROB}" \
        "${coverage[@]}" --criterion s2s_ft --label-smoothing 0.1 \
        --optimizer adam --adam-betas "(0.9,0.999)" --adam-eps 1e-6 --weight-decay 0.01 \
        --lr "${LR}" --lr-scheduler polynomial_decay --warmup-updates "${WARMUP}" --total-num-update "${TOTAL_UPDATES}" \
        --clip-norm 1.0 --dropout 0.1 --attention-dropout 0.1 \
        --batch-size "${BATCH_SIZE}" --batch-size-valid 25 --required-batch-size-multiple 1 \
        --max-source-positions "${MAX_SOURCE}" --max-target-positions "${MAX_TARGET}" \
        --max-update "${MAX_UPDATE}" --max-epoch 100000 \
        --validate-interval 100000 --save-interval 100000 \
        --validate-interval-updates "${VALID_EVERY}" --save-interval-updates "${VALID_EVERY}" --keep-interval-updates "${KEEP}" \
        --eval-rouge --eval-rouge-args "${VALID_ARGS}" \
        --best-checkpoint-metric rougeL --maximize-best-checkpoint-metric \
        --save-dir "${CKPT_DIR}" --no-epoch-checkpoints --no-last-checkpoints \
        --log-format json --log-interval 10 --num-workers 0 --seed "${SEED}" > "${RUN}/train.log" 2>&1 \
        || { tail -20 "${RUN}/train.log" >&2; exit 1; }
    read -r wall user sys < "${RUN}/train.time"
    train_wall=$(python -c "print(round(${wall} / 60, 1))")
    train_cpu=$(python -c "print(round((${user} + ${sys}) / 60, 1))")
fi

gen_start=$(date +%s)
checkpoint="${CKPT_DIR}/checkpoint_best.pt"
if (( AVERAGE > 0 )); then
    checkpoint="${CKPT_DIR}/checkpoint_avg${AVERAGE}.pt"
    python -m fairseq_ext.cli.average_checkpoints --inputs "${CKPT_DIR}" --num-update-checkpoints "${AVERAGE}" \
        --output "${checkpoint}"
fi
read -r -a splits <<< "${SPLITS:-valid test}"  # SPLITS=valid: a decoding screen, chosen on validation
if [[ "${DECODE}" == 0 ]]; then splits=(); fi
for split in "${splits[@]}"; do
    generate_in_shards "${RUN}/generate-${split}.txt" "${SHARDS}" "${DATA}/bin" --user-dir "${REPO}/user_dir" --task s2s_ft_summarization \
        --path "${checkpoint}" --gen-subset "${split}" \
        --batch-size 8 --required-batch-size-multiple 1 --num-workers 0 \
        --beam "${BEAM}" --lenpen "${LENPEN}" --min-len "${MIN_LEN}" --max-len-a 0 --max-len-b "${MAX_LEN_B}" \
        --no-repeat-ngram-size "${NO_REPEAT}" "${rules[@]}" "${documents[@]}" --nbest "${NBEST}" \
        --decode-words "${DECODE_WORDS}" ${DECODE_WORDS_FILE:+--decode-words-file "${DECODE_WORDS_FILE}"} \
        --decode-words-bigram-bonus "${BIGRAM_BONUS}" \
        --max-source-positions "${MAX_SOURCE}" --max-target-positions "${MAX_TARGET}"
    # the words ROUGE scores, as the main job scores them (WordPieces joined, not the restored surface)
    if (( NBEST > 1 )); then
        # shellcheck disable=SC2086
        python -m fairseq_ext.cli.mbr "${RUN}/generate-${split}.txt" --lines-per-document "${per_document}" ${MBR_ARGS} \
            --out "${RUN}/${split}.text.hyp" --out-words "${RUN}/${split}.pieces.hyp"
    else
        hypotheses "${RUN}/generate-${split}.txt" "${RUN}/${split}.pieces.hyp" W
    fi
    python -m fairseq_ext.cli.join_lines --every "${per_document}" "${RUN}/${split}.pieces.hyp" "${RUN}/${split}.hyp"
    python -m fairseq_ext.cli.join_lines --every "${per_document}" "${DATA}/raw/${split}.target" "${RUN}/${split}.ref"
    rouge "${RUN}/${split}.hyp" "${RUN}/${split}.ref" "${RUN}/rouge-${split}.txt" > /dev/null
done
gen_minutes=$(python -c "print(round(($(date +%s) - ${gen_start}) / 60, 1))")

python - "${RUN}" "${NAME}" "${MAX_UPDATE}" "${train_wall}" "${train_cpu}" "${gen_minutes}" "${WORK}/levers.tsv" <<'EOF'
import json, re, sys
from pathlib import Path

sys.path.insert(0, "scripts")
from rouge_table import read_scores
from fairseq_ext.scoring.fluency import fluency_of_file

run, name, updates, wall, cpu, gen, table = sys.argv[1:]
run = Path(run)

def rouge(path):
    scores = read_scores(path)
    return [round(scores[k][0], 2) for k in ("1", "2", "L")]

loads = [float(x) for x in (run / "load.txt").read_text().split()]
load = f"{min(loads):.1f}-{max(loads):.1f} (mean {sum(loads) / len(loads):.1f})" if loads else "?"
best = ""
log = run / "train.log"
if log.exists():
    valid = [json.loads(m.group(1)) for m in re.finditer(r"\| valid \| (\{.*\})", log.read_text())]
    if valid:
        # the checkpoint fairseq kept: the last of the best (a tie replaces checkpoint_best.pt)
        top = max(reversed(valid), key=lambda v: float(v["valid_rougeL"]))
        best = f'{top["valid_num_updates"]} ({top["valid_rougeL"]})'
if any((run / f"rouge-{split}.txt").exists() for split in ("valid", "test")):  # SPLITS=test: the test alone
    scores = ["/".join(map(str, rouge(run / f"rouge-{split}.txt"))) if (run / f"rouge-{split}.txt").exists() else "-"
              for split in ("valid", "test")]
else:  # a screen: the last greedy validation of the log (per-document rouge-score F), no test
    last = valid[-1]
    scores = [f'greedy {last["valid_rouge1"]}/{last["valid_rouge2"]}/{last["valid_rougeL"]}, loss {last["valid_loss"]}', "-"]
def fluent(split):  # % of summaries with a word repeated back to back / % of repeated word bigrams
    hyp = run / f"{split}.hyp"
    if not hyp.exists():
        return "-"
    f = fluency_of_file(hyp)
    return f"{f.repeat_share:.0f}/{f.bigram_share:.1f}"

row = [name, updates, wall, cpu, gen, load, best, *scores, fluent("valid"), fluent("test")]
header = ["name", "updates", "train_wall_min", "train_cpu_min", "decode_min", "load_1min", "best_valid_update (greedy rougeL)",
          "valid R1/R2/RL", "test R1/R2/RL", "valid repeat%/bigram%", "test repeat%/bigram%"]
path = Path(table)
if not path.exists():
    path.write_text("\t".join(header) + "\n")
else:  # a table from before the fluency columns: same header, "-" in the old rows
    old = path.read_text().splitlines()
    if old and old[0] != "\t".join(header):
        pad = lambda line: line + "\t-" * (len(header) - len(line.split("\t")))
        path.write_text("\n".join(["\t".join(header)] + [pad(line) for line in old[1:]]) + "\n")
with path.open("a") as f:
    f.write("\t".join(map(str, row)) + "\n")
print("\t".join(header)); print("\t".join(map(str, row)))
EOF
