#!/usr/bin/env bash
# fairseq-train as one job over every process of every node: torchrun on each node, meeting at
# a c10d rendezvous on the first node. Under SLURM (sbatch) it starts one torchrun per node with
# srun; anywhere else it runs one node here. All arguments go to fairseq-train.
#
#   bash scripts/train_distributed.sh DATA --user-dir user_dir --task ... --cpu   # this machine
#   sbatch --nodes 2 --ntasks-per-node 1 --gpus-per-node 8 scripts/train_distributed.sh DATA ...
#
# Variables: NPROC_PER_NODE (default: the GPUs of a node, or 2 without CUDA), RDZV_PORT (29400).
# SLURM: the first host of SLURM_JOB_NODELIST is the rendezvous; SLURM_JOB_ID names the job.
#SBATCH --job-name=fairseq-summarization
#SBATCH --ntasks-per-node=1
set -euo pipefail

if [[ -n "${SLURM_SUBMIT_DIR:-}" ]]; then
    cd "${SLURM_SUBMIT_DIR}"  # sbatch runs a copy of this script: use the repository it came from
else
    cd "$(dirname "${BASH_SOURCE[0]}")/.."
fi
# shellcheck disable=SC1091
[[ -f .venv/bin/activate ]] && source .venv/bin/activate

if [[ -z "${NPROC_PER_NODE:-}" ]]; then
    NPROC_PER_NODE="$(python -c 'import torch; print(torch.cuda.device_count() or 2)')"
fi
RDZV_PORT="${RDZV_PORT:-29400}"
TRAIN="$(command -v fairseq-train)"

if [[ -n "${SLURM_JOB_NODELIST:-}" ]]; then
    head_node="$(scontrol show hostnames "${SLURM_JOB_NODELIST}" | head -n 1)"
    echo "[train_distributed] ${SLURM_NNODES} node(s) x ${NPROC_PER_NODE} process(es), rendezvous ${head_node}:${RDZV_PORT}"
    srun --ntasks-per-node 1 torchrun --nnodes "${SLURM_NNODES}" --nproc_per_node "${NPROC_PER_NODE}" \
        --rdzv_backend c10d --rdzv_endpoint "${head_node}:${RDZV_PORT}" --rdzv_id "${SLURM_JOB_ID}" \
        "${TRAIN}" "$@"
else
    echo "[train_distributed] 1 node x ${NPROC_PER_NODE} process(es), rendezvous 127.0.0.1:${RDZV_PORT}"
    torchrun --nnodes 1 --nproc_per_node "${NPROC_PER_NODE}" \
        --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:${RDZV_PORT}" --rdzv_id local \
        "${TRAIN}" "$@"
fi
