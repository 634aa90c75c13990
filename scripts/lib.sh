# What the scripts share. Source it first:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"     # from scripts/<family>/*.sh
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"        # from scripts/*.sh
#
# It sets REPO (the repository root) and defines:
#   defaults NAME=VALUE ...            each NAME keeps its value from the environment unless that
#                                      is empty (as NAME="${NAME:-VALUE}"); values are expanded
#                                      before the call, so a default that uses another comes in a
#                                      later call
#   args_from_checkpoint INIT NAME=FLAG|NAME<=FLAG ...
#                                      when INIT's folder holds args.txt (what a converter writes
#                                      beside OUT/model.pt, or a pre-training recipe beside its
#                                      checkpoints), sets CHECKPOINT_ARGS to its flags (sizes and
#                                      positions come from the checkpoint; pass them before the
#                                      recipe's own) and NAME to the checkpoint's value of FLAG:
#                                      NAME=FLAG must agree (a NAME the user set to another value is an
#                                      error naming both), NAME:=FLAG is the checkpoint's (a name such
#                                      as --arch, whose sizes args.txt lists), NAME<=FLAG may be smaller (positions: a
#                                      default above it is lowered to it, a value set above it is an
#                                      error). Without args.txt CHECKPOINT_ARGS=() and nothing changes.
#                                      The rules are Python: fairseq_ext/cli/checkpoint_args.py
#   write_args_txt DIR FLAG...         DIR/args.txt: the model flags a later stage reads (as above)
#   if_set ARRAY FLAG VALUE            ARRAY=(FLAG VALUE) when VALUE is not empty, else ARRAY=()
#   generate_in_shards OUT SHARDS ARGS...
#                                      fairseq-generate ARGS in SHARDS processes of one torch thread
#                                      each (every SHARDS-th batch: fairseq's --distributed-world-size
#                                      and --distributed-rank, no process group), outputs joined in
#                                      OUT, their logs in OUT.log; fails naming the log if one fails
#   hypotheses GENERATED OUT [KIND]    fairseq-generate's KIND lines (D: detokenized, the default;
#                                      H: pieces; T: references; W: the H lines' WordPieces joined
#                                      into words, the D lines of WordPiece data without
#                                      --restore-surface), text only, in input order
#   rouge HYP REF SAVE_TO              files2rouge (one document a line), the report also in SAVE_TO
#   is_corpus_dir CORPUS               true when CORPUS is a directory of the user's (a path, or an
#                                      existing folder), not a built-in corpus name (aclsum, wiki, ...)
#   data_name CORPUS [SUFFIX]          prints the folder name under data/ for CORPUS: the built-in
#                                      corpus's name or the directory's base name, then SUFFIX, then
#                                      "-limitN" when LIMIT=N (a quick run's data never stand in for all)
#   prepare_data MODULE CORPUS OUT [ARGS...]
#                                      python -m MODULE --corpus CORPUS --out OUT ARGS (honours LIMIT),
#                                      unless OUT/bin exists; OUT/corpus.txt records what OUT was made
#                                      from, and OUT made from another corpus or LIMIT is an error naming it
#   prepare_with_vocabulary CORPUS OUT VOCAB_BIN
#                                      python -m preprocess.prepare --corpus CORPUS --out OUT with the
#                                      sentencepiece model and dictionary of VOCAB_BIN (pre-training's
#                                      OUT/bin), unless OUT/bin exists; honours LIMIT
#   updates_per_epoch EXAMPLES SEQUENCES_PER_UPDATE
#                                      prints the updates an epoch takes (rounded up)
#   linear_decay_args TOTAL_UPDATES    sets SCHEDULE_ARGS: Adam (ADAM_BETAS, ADAM_EPS, WEIGHT_DECAY),
#                                      clipping at CLIP_NORM, LR reached after WARMUP updates and then
#                                      decayed linearly to 0 at TOTAL_UPDATES (polynomial_decay)
#   minilm_dir                         prints the MiniLM-L6-H384 folder shipped offline
#   hf_init_args INIT                  sets INIT_ARGS for s2s-ft: minilm | none | a HF BERT/RoBERTa folder
#
# Names: a checkpoint a script reads is CHECKPOINT (a file to generate from) or INIT (weights to
# start training from); DATA is a binarized folder (OUT/bin of python -m preprocess.prepare).

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

DEFAULTED=" "  # the names defaults() set (not given by the user), space-separated

defaults() {
    local __pair __name
    for __pair in "$@"; do
        __name="${__pair%%=*}"
        if [[ -z "${!__name:-}" ]]; then
            printf -v "${__name}" '%s' "${__pair#*=}"
            DEFAULTED+="${__name} "
        fi
    done
}

args_from_checkpoint() {  # the rules: python -m fairseq_ext.cli.checkpoint_args --help
    local init="$1" pair name current=() out
    shift
    for pair in "$@"; do
        name="${pair%%[:<=]*}"
        current+=(--current "${name}=${!name:-}")
    done
    out="$(python -m fairseq_ext.cli.checkpoint_args --defaulted "${DEFAULTED}" "${current[@]}" -- "${init}" "$@")" \
        || return $?
    eval "${out}"
}

write_args_txt() {
    mkdir -p "$1"
    python -c 'import shlex, sys; print(shlex.join(sys.argv[1:]))' "${@:2}" > "$1/args.txt"
}

if_set() {
    local -n __array="$1"
    __array=()
    if [[ -n "$3" ]]; then
        __array=("$2" "$3")
    fi
}

generate_in_shards() {
    local out="$1" shards="$2" shard pid status=0
    shift 2
    local pids=()
    : > "${out}.log"
    for ((shard = 0; shard < shards; shard++)); do
        OMP_NUM_THREADS=1 fairseq-generate "$@" --distributed-world-size "${shards}" --distributed-rank "${shard}" \
            > "${out}.${shard}" 2> "${out}.${shard}.log" &
        pids+=("$!")
    done
    for pid in "${pids[@]}"; do
        wait "${pid}" || status=$?
    done
    for ((shard = 0; shard < shards; shard++)); do
        cat "${out}.${shard}.log" >> "${out}.log"
        rm -f "${out}.${shard}.log"
    done
    if (( status != 0 )); then
        echo "fairseq-generate failed (exit ${status}): see ${out}.log" >&2
        return "${status}"
    fi
    for ((shard = 0; shard < shards; shard++)); do
        cat "${out}.${shard}"
        rm -f "${out}.${shard}"
    done > "${out}"
}

hypotheses() {
    local field=3 kind="${3:-D}"  # D-<id>, H-<id>: id, score, text; T-<id>: id, text
    if [[ "${kind}" == T ]]; then
        field=2
    fi
    if [[ "${kind}" == W ]]; then
        grep "^H-" "$1" | sort -t- -k2 -n | cut -f3 | python -c 'import sys
from fairseq_ext.data.wordpiece import join_pieces
sys.stdout.writelines(join_pieces(line) + "\n" for line in sys.stdin)' > "$2"
        return
    fi
    grep "^${kind}-" "$1" | sort -t- -k2 -n | cut -f"${field}" > "$2"
}

rouge() {
    files2rouge "$1" "$2" -s "$3"
}

is_corpus_dir() {
    [[ "$1" == */* || -d "$1" ]]
}

data_name() {
    local name="$1"
    if is_corpus_dir "${name}"; then
        name="$(basename "${name%/}")"
    fi
    echo "${name}${2:-}${LIMIT:+-limit${LIMIT}}"
}

prepare_data() {
    local module="$1" corpus="$2" out="$3" stamp
    shift 3
    if is_corpus_dir "${corpus}"; then
        if [[ ! -d "${corpus}" ]]; then
            echo "corpus ${corpus}: no such directory (a corpus of your own is a folder of {train,valid,test}.{source,target})" >&2
            return 2
        fi
        corpus="$(cd "${corpus}" && pwd)"
    fi
    stamp="corpus=${corpus} limit=${LIMIT:-all} prepared-by=${module}${*:+ $*}"
    if [[ -f "${out}/bin/dict.source.txt" || -f "${out}/bin/dict.txt" ]]; then
        if [[ -f "${out}/corpus.txt" && "$(cat "${out}/corpus.txt")" != "${stamp}" ]]; then
            echo "${out} holds other data ($(cat "${out}/corpus.txt")), not ${stamp}:" \
                 "delete ${out} or choose another DATA_DIR" >&2
            return 2
        fi
        echo "   ${out}/bin exists: reusing it (delete it to rebuild)"
        return 0
    fi
    python -m "${module}" --corpus "${corpus}" --out "${out}" ${LIMIT:+--limit "${LIMIT}"} "$@"
    echo "${stamp}" > "${out}/corpus.txt"
}

prepare_with_vocabulary() {
    if [[ ! -f "$2/bin/dict.source.txt" ]]; then
        python -m preprocess.prepare --corpus "$1" --out "$2" --spm-model "$3/spm.model" --srcdict "$3/dict.txt" \
            ${LIMIT:+--limit "${LIMIT}"}
    fi
}

updates_per_epoch() {
    echo $(( ($1 + $2 - 1) / $2 ))
}

linear_decay_args() {
    SCHEDULE_ARGS=(--optimizer adam --adam-betas "${ADAM_BETAS}" --adam-eps "${ADAM_EPS}" --weight-decay "${WEIGHT_DECAY}"
                   --clip-norm "${CLIP_NORM}" --lr "${LR}" --lr-scheduler polynomial_decay
                   --warmup-updates "${WARMUP}" --total-num-update "$1")
}

minilm_dir() {
    python -c 'from fairseq_ext.data.wordpiece import minilm_dir; print(minilm_dir())'
}

hf_init_args() {
    case "$1" in
        minilm) INIT_ARGS=(--init-from-hf "$(minilm_dir)") ;;
        none) INIT_ARGS=() ;;
        *) INIT_ARGS=(--init-from-hf "$1") ;;
    esac
}
