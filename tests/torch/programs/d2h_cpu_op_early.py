# The same early read through a CPU operator (sum) on the pinned tensor.
# Fixed: torch.cuda.synchronize() first.
import sys
import torch

FIXED = "--fixed" in sys.argv
dev = torch.full((1 << 20,), 2.0, device="cuda")
host = torch.empty(1 << 20, pin_memory=True)
host.copy_(dev, non_blocking=True)
if FIXED:
    torch.cuda.synchronize()
print(float(host.sum()))
