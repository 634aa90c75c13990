#!/usr/bin/env bash
# GPU check: every model family trains a few updates in fp32, fp16 and bf16 on one GPU, then
# as one job over two GPUs (torchrun, nccl, default --ddp-backend) when there are two; prints
# a words/s table and writes it to ${WORK}/results.md.
#
#   bash scripts/gpu_check.sh                  # on a GPU machine
#   DRY_RUN=1 bash scripts/gpu_check.sh        # print the commands only
#   bash scripts/gpu_check.sh                  # without CUDA: the CPU fallback (fp32 and bf16,
#                                              # and two gloo processes instead of two GPUs)
#
# Each family runs with its own task and criterion (the pre-training tasks for ProphetNet,
# BART-LS and Z-Code++), on small real corpora prepared under ${WORK}/data. NVIDIA apex is used
# when it is importable: fairseq then builds its LayerNorm as apex's FusedLayerNorm and Adam as
# apex's FusedAdam on CUDA (nothing to pass; the script reports which ones are active).
# fp16 needs CUDA (fairseq's FP16Optimizer flattens its fp32 copy on the current CUDA device),
# so the CPU fallback skips it and says so.
#
# Variables: SIZE (small: bart_summ_small, prophetnet_summ_small, bart_ls_base, zcodepp_base,
# s2s_ft_minilm_l6_h384, transformer_sm_small; tiny: the *_tiny sizes; default small on GPUs,
# tiny on CPU), UPDATES (10), WARMUP (3, left out of words/s), BATCH (8 documents or blocks per
# GPU), FAMILIES (all six), PRECISIONS (fp32 fp16 bf16), ACLSUM_LIMIT (100 papers), WIKI_LIMIT
# (24 articles), WORK (runs/gpu_check), DRY_RUN, SETUP_ENV (1; 0: no setup_env.sh and no .venv:
# the python on PATH, with fairseq, hydra-core, omegaconf, bitarray, rouge_score, nltk and aclsum
# importable, and the project root put on PYTHONPATH; for a machine without a package registry,
# the packages carried as wheels: benchmarks/RESULTS.md, "GPU check on an H200").
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO}"
if [[ "${SETUP_ENV:-1}" != 0 ]]; then
    if [[ -z "${DRY_RUN:-}" ]]; then
        bash scripts/setup_env.sh
    fi
    # shellcheck disable=SC1091
    source .venv/bin/activate
else  # SETUP_ENV=0: the environment already on PATH (no registry needed)
    if ! command -v python > /dev/null; then
        python() { python3 "$@"; }
    fi
    export PYTHONPATH="${REPO}${PYTHONPATH:+:${PYTHONPATH}}"
    echo "[gpu_check] SETUP_ENV=0: $(command -v python || command -v python3) as found, no setup_env.sh, no .venv"
fi
if command -v fairseq-train > /dev/null; then  # pip install --target puts it in TARGET/bin
    TRAIN=(fairseq-train); DDP_TRAIN=("$(command -v fairseq-train)")
else
    TRAIN=(python -m fairseq_cli.train); DDP_TRAIN=(-m fairseq_cli.train)
fi

WORK="${WORK:-runs/gpu_check}"
UPDATES="${UPDATES:-10}"
WARMUP="${WARMUP:-3}"
BATCH="${BATCH:-8}"
ACLSUM_LIMIT="${ACLSUM_LIMIT:-100}"  # papers per split
WIKI_LIMIT="${WIKI_LIMIT:-24}"       # Wikipedia articles
FAMILIES="${FAMILIES:-bart prophetnet bart_ls zcodepp s2s_ft transformer_sm}"
GPUS="$(python -c 'import torch; print(torch.cuda.device_count())')"
if (( GPUS > 0 )); then
    DEVICE="gpu"
    SIZE="${SIZE:-small}"
    PRECISIONS="${PRECISIONS:-fp32 fp16 bf16}"
    DEVICE_FLAGS=()
else
    DEVICE="cpu"
    SIZE="${SIZE:-tiny}"
    PRECISIONS="${PRECISIONS:-fp32 bf16}"
    DEVICE_FLAGS=(--cpu)
    export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"  # as torchrun sets per process: comparable rows
    echo "[gpu_check] no CUDA device: CPU fallback (fp32 and bf16; fp16 training needs CUDA in fairseq;"
    echo "            two gloo processes stand in for two GPUs)"
fi
mkdir -p "${WORK}"

echo "[gpu_check] torch $(python -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)')," \
     "${GPUS} GPU(s): $(python -c 'import torch; print(", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())) or "none")')"
python - <<'EOF'
import torch
from fairseq.modules.layer_norm import has_fused_layernorm
from fairseq.optim.fused_adam import get_fused_adam_class
adam = get_fused_adam_class()
try:
    import apex  # noqa: F401
    found = "apex importable"
except ImportError:
    found = "apex not importable"
cuda = torch.cuda.is_available()
print(f"[gpu_check] {found}: LayerNorm = {'apex FusedLayerNorm' if cuda and has_fused_layernorm else 'torch'}, "
      f"Adam = {adam.__name__ if cuda and adam is not None else 'torch'} (fused kernels need CUDA)")
EOF

arch_of() {  # family -> architecture at ${SIZE}
    local family="$1"
    if [[ "${SIZE}" == "tiny" ]]; then
        case "${family}" in
            bart) echo bart_summ_tiny ;; prophetnet) echo prophetnet_summ_tiny ;; *) echo "${family}_tiny" ;;
        esac
    else
        case "${family}" in
            bart) echo bart_summ_small ;; prophetnet) echo prophetnet_summ_small ;; bart_ls) echo bart_ls_base ;;
            zcodepp) echo zcodepp_base ;; s2s_ft) echo s2s_ft_minilm_l6_h384 ;; transformer_sm) echo transformer_sm_small ;;
        esac
    fi
}

family_args() {  # family -> corpus, then task, criterion and flags (as tests/training/test_distributed_e2e.py)
    case "$1" in
        bart) echo aclsum --task abstractive_summarization --criterion label_smoothed_cross_entropy \
                   --label-smoothing 0.1 --max-source-positions 512 --max-target-positions 160 ;;
        prophetnet) echo wiki --task prophetnet_span_mask --criterion ngram_language_loss \
                   --tokens-per-sample 256 --max-source-positions 256 --max-target-positions 128 ;;
        bart_ls) echo wiki --task bart_ls_model_based_denoising --criterion bart_ls_model_based_denoising \
                   --tokens-per-sample 1024 --max-source-positions 1024 --max-target-positions 256 \
                   --num-sentinels 16 --scorer-layers 1 --scorer-embed-dim 128 --scorer-heads 2 \
                   --scorer-ffn-dim 256 --scorer-block-size 256 --freeze-scorer ;;
        zcodepp) echo wiki --task zcodepp_pretraining --criterion zcodepp_joint --generator-layers 2 \
                   --tokens-per-sample 256 --max-source-positions 256 --max-target-positions 128 ;;
        s2s_ft) echo aclsum --task s2s_ft_summarization --criterion s2s_ft --label-smoothing 0.1 \
                   --max-source-positions 352 --max-target-positions 128 ;;
        transformer_sm) echo aclsum --task transformer_sm --criterion transformer_sm --mode dat \
                   --max-source-positions 384 --max-target-positions 110 ;;
    esac
}

precision_flags() {
    case "$1" in fp32) ;; fp16) echo --fp16 ;; bf16) echo --bf16 ;; esac
}

DATA="${WORK}/data"
if [[ -z "${DRY_RUN:-}" ]]; then
    for family in ${FAMILIES}; do
        corpus="$(family_args "${family}" | cut -d' ' -f1)"
        if [[ "${corpus}" == aclsum && ! -f "${DATA}/aclsum/bin/dict.source.txt" ]]; then
            python -m preprocess.prepare --corpus aclsum --out "${DATA}/aclsum" --vocab-size 4000 --limit "${ACLSUM_LIMIT}"
        elif [[ "${corpus}" == wiki && ! -f "${DATA}/wiki/bin/dict.txt" ]]; then
            python -m preprocess.prepare --corpus wiki --out "${DATA}/wiki" --vocab-size 4000 --limit "${WIKI_LIMIT}"
        fi
    done
fi

RESULTS="${WORK}/speeds.tsv"
: > "${RESULTS}"
train() {  # name, processes, family, precision
    local name="$1" procs="$2" family="$3" precision="$4"
    local args corpus log="${WORK}/${name}.log"
    read -r -a args <<< "$(family_args "${family}")"
    corpus="${args[0]}"
    local command=()
    if (( procs > 1 )); then
        command=(torchrun --nproc_per_node "${procs}" --master_port "$(( 29500 + RANDOM % 1000 ))" "${DDP_TRAIN[@]}")
    else
        command=("${TRAIN[@]}")
    fi
    # shellcheck disable=SC2046
    command+=("${DATA}/${corpus}/bin" --user-dir "${REPO}/user_dir" --arch "$(arch_of "${family}")" "${args[@]:1}"
              --optimizer adam --lr 1e-4 --batch-size "${BATCH}" --required-batch-size-multiple 1
              --max-update "${UPDATES}" --disable-validation --no-save --num-workers 0 --seed 1
              --log-format json --log-interval 1 --no-progress-bar --save-dir "${WORK}/ckpt-${name}"
              "${DEVICE_FLAGS[@]}" $(precision_flags "${precision}"))
    if [[ -n "${DRY_RUN:-}" ]]; then
        echo "${command[*]}"
        return
    fi
    echo "[gpu_check] ${name}: ${procs} x ${DEVICE}, ${family} ($(arch_of "${family}")), ${precision}"
    if "${command[@]}" > "${log}" 2>&1; then
        python - "${log}" "${WARMUP}" "${name}" "${family}" "${precision}" "${procs}" >> "${RESULTS}" <<'EOF'
import json, re, sys
log, warmup, name, family, precision, procs = sys.argv[1:]
steps = [json.loads(m.group(1)) for m in (re.search(r"\| train_inner \| (\{.*\})\s*$", l) for l in open(log)) if m]
steps = [s for s in steps if int(s["num_updates"]) > int(warmup)] or steps
words = sum(float(s["wpb"]) for s in steps)
seconds = sum(float(s["wpb"]) / float(s["wps"]) for s in steps if float(s["wps"]) > 0)
loss = steps[-1]["loss"] if steps else "nan"
print(f"{family}\t{precision}\t{procs}\t{words / seconds if seconds else 0:.0f}\t{loss}\tok")
EOF
    else
        echo "[gpu_check] ${name} FAILED: see ${log}" >&2
        printf '%s\t%s\t%s\t-\t-\tFAILED (%s)\n' "${family}" "${precision}" "${procs}" "${log}" >> "${RESULTS}"
    fi
}

for family in ${FAMILIES}; do
    for precision in ${PRECISIONS}; do
        train "${family}-${precision}-1" 1 "${family}" "${precision}"
    done
done
if (( GPUS >= 2 )) || [[ "${DEVICE}" == "cpu" ]]; then
    ddp_precision="$([[ "${DEVICE}" == "gpu" ]] && echo fp16 || echo fp32)"
    for family in ${FAMILIES}; do
        train "${family}-${ddp_precision}-2" 2 "${family}" "${ddp_precision}"
    done
else
    echo "[gpu_check] one GPU: no 2-GPU DDP run"
fi
[[ -n "${DRY_RUN:-}" ]] && exit 0

python - "${RESULTS}" "${DEVICE}" "${SIZE}" "${BATCH}" "${UPDATES}" "${WARMUP}" <<'EOF' | tee "${WORK}/results.md"
import sys
path, device, size, batch, updates, warmup = sys.argv[1:]
rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
base = {(r[0], r[2]): float(r[3]) for r in rows if r[1] == "fp32" and r[3] != "-"}
single = {(r[0], r[1]): float(r[3]) for r in rows if r[2] == "1" and r[3] != "-"}
print(f"\n{device}, size {size}, batch {batch} per process, {updates} updates (words/s after update {warmup})\n")
print("| family | precision | processes | words/s | x fp32 (1 process) | x same precision, 1 process | last loss | status |")
print("|---|---|---|---|---|---|---|---|")
for family, precision, procs, wps, loss, status in rows:
    if wps == "-":
        print(f"| {family} | {precision} | {procs} | - | - | - | - | {status} |")
        continue
    ref = base.get((family, "1"))
    same = single.get((family, precision))
    vs_fp32 = f"{float(wps) / ref:.2f}" if ref else "-"
    vs_same = f"{float(wps) / same:.2f}" if same and procs != "1" else "-"
    print(f"| {family} | {precision} | {procs} | {wps} | {vs_fp32} | {vs_same} | {loss} | {status} |")
EOF
if grep -q FAILED "${RESULTS}"; then
    echo "[gpu_check] some runs failed (see the table)" >&2
    exit 1
fi
