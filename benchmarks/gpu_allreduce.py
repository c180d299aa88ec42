"""An all-reduce over every rank through torch.distributed and NCCL: the workload that
benchmarks/gpu_acceptance.sh starts with `envguard launch` on a GPU host.

    torchrun --nproc-per-node 2 benchmarks/gpu_allreduce.py [--hold]

Each rank sums a 64 MiB tensor five times, then checks one sum exactly; rank 0 prints
`all-reduce ok: N ranks, X GB/s`. With --hold the ranks then wait (the process tree stays up
for `envguard check`) until they are signalled.
"""

from __future__ import annotations

import argparse
import os
import signal
import time

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hold", action="store_true", help="stay up after the check")
    args = parser.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    elements = 1 << 24  # 64 MiB of float32
    tensor = torch.full((elements,), float(rank + 1), device="cuda")
    expected = float(world * (world + 1) // 2)
    dist.all_reduce(tensor)  # warm-up: communicator set-up happens here
    torch.cuda.synchronize()
    tensor.fill_(float(rank + 1))
    start = time.perf_counter()
    rounds = 5
    for _ in range(rounds):
        dist.all_reduce(tensor)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    tensor.fill_(float(rank + 1))
    dist.all_reduce(tensor)
    value = tensor[0].item()
    if value != expected or not torch.all(tensor == expected).item():
        raise SystemExit(f"rank {rank}: all-reduce gave {value}, expected {expected}")
    if rank == 0:
        # Bus bandwidth as nccl-tests reports it for all-reduce: 2 (n-1)/n of the bytes.
        busbw = rounds * elements * 4 * 2 * (world - 1) / world / elapsed / 1e9
        print(f"all-reduce ok: {world} ranks, {busbw:.1f} GB/s bus bandwidth", flush=True)
    if args.hold:
        signal.pause()  # SIGTERM (torchrun forwards it) ends the rank
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
