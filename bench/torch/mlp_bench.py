"""The training loop of issue #9 point 8, timed in-process:

    python3 mlp_bench.py [ITERATIONS] [WARMUP]

A 3-layer MLP (Linear 256 -> 256, ReLU between), batch 64, MSE loss, SGD;
WARMUP iterations (default 30) are run first, then ITERATIONS (default 300)
are timed between two torch.cuda.synchronize() calls. Prints one line:
`mlp_ms <milliseconds of the timed iterations>`. With MLP_REPEATS=K (default
1) the ITERATIONS are timed K times in a row, each between two
synchronizes; a line `mlp_ms_each` gives every time, and `mlp_ms` their
median: one slow stretch of a noisy machine then moves one repeat, not the
run. The same program runs
natively, under `streamsan run` and under CSAN (TORCH_CUDA_SANITIZER=1):
overhead.sh compares them side by side. With PCSAMPLE_ON_SIGNAL=1 the
process sends itself SIGUSR1 before the timed iterations and SIGUSR2 after
them, for bench/profile/pc_sampler.cpp to sample that region only.
"""
import os
import signal
import statistics
import sys
import time

import torch


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.MSELoss()
    x = torch.randn(64, 256, device="cuda")
    y = torch.randn(64, 256, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    sampled = os.environ.get("PCSAMPLE_ON_SIGNAL") == "1"
    if sampled:
        os.kill(os.getpid(), signal.SIGUSR1)
    times = []
    for _ in range(int(os.environ.get("MLP_REPEATS", "1"))):
        start = time.perf_counter()
        for _ in range(iterations):
            loss = step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1000.0)
    if sampled:
        os.kill(os.getpid(), signal.SIGUSR2)
    if len(times) > 1:
        print("mlp_ms_each " + " ".join("%.3f" % t for t in times))
    print("mlp_ms %.3f loss %.6f" % (statistics.median(times), float(loss)))


if __name__ == "__main__":
    main()
