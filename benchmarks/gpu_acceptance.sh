#!/usr/bin/env bash
# GPU acceptance for envguard, on a host with 2 or more NVIDIA GPUs: python3 with torch
# (NCCL), nvidia-ml-py and envguard's dependencies. From the repository root:
#
#     bash benchmarks/gpu_acceptance.sh [OUT_DIR]
#
# 1. envguard's GPU facts (NVML) against nvidia-smi -q, key line by key line.
# 2. `envguard launch` starts a 2-rank torchrun all-reduce with the seed's six NCCL variables
#    (and NCCL_DEBUG=INFO); once it has run, `envguard check --nccl-log` holds NCCL's own log
#    against the profile and against envguard's reading of the same processes: exit 0.
# 3. The same log against a profile that wants another NCCL_BUFFSIZE: exit 1 (nccl-log).
# 4. What [gpu] costs a check (target: at most 30 ms more).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0): on shared hosts it can take GPUs down.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export ENVGUARD_CACHE_DIR="$out/cache"
py=${PYTHON:-python3}
envguard() { "$py" -m envguard "$@"; }

echo "== 1. GPU facts: envguard against nvidia-smi -q"
nvidia-smi -q > "$out/nvidia-smi-q.txt"
"$py" benchmarks/gpu_facts_vs_smi.py | tee "$out/facts.txt"

echo "== 2. envguard launch of a 2-rank all-reduce, then check --nccl-log"
profile() {  # name, extra TOML
  cat <<TOML
schema_version = 2
name = "$1"
version = 1
description = "The seed's six NCCL variables on two GPUs, with NCCL's log on"
extends = ["$PWD/profiles/base/rtx-pro-6000-pcie5-8gpu.toml"]

[env.optional]
NCCL_DEBUG = "INFO"
NCCL_NVLS_ENABLE = "0"
$2
TOML
}
profile gpu-acceptance '
[gpu]
count = 2
mig = false
forbidden_clock_events = ["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"]' \
  > "$out/acceptance.toml"
profile gpu-acceptance-nogpu "" > "$out/acceptance-nogpu.toml"
profile gpu-acceptance-8m '
[env.required]
NCCL_BUFFSIZE = "8388608"' > "$out/other-buffsize.toml"
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV
envguard launch -p "$out/acceptance.toml" --detach --log "$out/run.log" \
  --pid-file "$out/run.pid" -- \
  "$py" -m torch.distributed.run --nproc-per-node 2 benchmarks/gpu_allreduce.py --hold \
  2>&1 | tee "$out/launch.txt"
pid=$(head -1 "$out/run.pid")
for _ in $(seq 180); do
  grep -q "all-reduce ok" "$out/run.log" && break
  grep -q "FAILED" "$out/run.log" && { tail -40 "$out/run.log"; exit 1; }
  sleep 1
done
grep "all-reduce ok" "$out/run.log"
set +e
envguard check -p "$out/acceptance.toml" --pid "$pid" --nccl-log "$out/run.log" \
  | tee "$out/check.txt"
verdict=${PIPESTATUS[0]}
echo "check --nccl-log exit code: $verdict (expected 0)"

echo "== 3. the same log against a profile that wants NCCL_BUFFSIZE=8388608"
envguard check -p "$out/other-buffsize.toml" --pid "$pid" --nccl-log "$out/run.log" \
  > "$out/check-8m.txt"
drift=$?
grep -E "nccl-log +NCCL_BUFFSIZE" "$out/check-8m.txt" | head -2
echo "check against NCCL_BUFFSIZE=8388608 exit code: $drift (expected 1)"

echo "== 4. what [gpu] costs a check"
# Timed as an installed envguard runs: from bytecode (pip compiles at install; some images
# set PYTHONDONTWRITEBYTECODE, which would make every run compile pynvml's 200 KB again).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$out/pycache"
"$py" benchmarks/gpu_check_speed.py --pid "$pid" "$out/acceptance.toml" \
  "$out/acceptance-nogpu.toml" | tee "$out/speed.txt"
# And on an 11-process stand-in of an SGLang TP8 tree (launcher, 8 schedulers, ...).
NCCL_PROTO=LL NCCL_ALGO=Ring NCCL_P2P_LEVEL=SYS NCCL_MAX_NCHANNELS=16 \
  NCCL_BUFFSIZE=16777216 NCCL_NTHREADS=512 SPT_NOENV=1 \
  "$py" -m envguard.testing.standin --schedulers 8 > "$out/standin.txt" &
standin=$!
for _ in $(seq 100); do grep -q "^ready" "$out/standin.txt" && break; sleep 0.1; done
"$py" benchmarks/gpu_check_speed.py --pid "$standin" "$out/acceptance.toml" \
  "$out/acceptance-nogpu.toml" | tee -a "$out/speed.txt"
kill "$standin"
set -e
envguard stop --pid-file "$out/run.pid"
[ "$verdict" -eq 0 ] && [ "$drift" -eq 1 ]
