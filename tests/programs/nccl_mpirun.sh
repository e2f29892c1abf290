#!/bin/sh
# ctest gpu.nccl_mpirun: the collective suite as two processes started by Open MPI's mpirun,
# rank and size from its environment, NCCL's id through a file (no MPI calls in kiln).
# SKIPPED (77) without mpirun or without two GPUs.
#   nccl_mpirun.sh <kiln_nccl_rank>
rank_program="$1"
command -v mpirun >/dev/null 2>&1 || { echo "SKIPPED: no mpirun here"; exit 77; }
gpus=$("$rank_program" gpus) || exit 1
[ "$gpus" -ge 2 ] || { echo "SKIPPED: these tests need two GPUs; this machine has $gpus"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
export KILN_NCCL_ID_FILE="$dir/nccl-id" NCCL_NVLS_ENABLE=0 KILN_NCCL_TIMEOUT=120
as_root=""
[ "$(id -u)" = 0 ] && as_root="--allow-run-as-root"
cache=""
[ -n "$KILN_CACHE_DIR" ] && cache="-x KILN_CACHE_DIR"
exec timeout 300 mpirun -np 2 $as_root --oversubscribe -x KILN_NCCL_ID_FILE -x NCCL_NVLS_ENABLE \
  -x KILN_NCCL_TIMEOUT $cache "$rank_program" suite --env
