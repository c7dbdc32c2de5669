# A non_blocking device-to-host copy fills a pinned tensor that the host
# reads (tolist) before synchronizing. Fixed: an event synchronizes first.
import sys
import torch

FIXED = "--fixed" in sys.argv
dev = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
host = torch.empty(1 << 20, pin_memory=True)
host.copy_(dev, non_blocking=True)
if FIXED:
    done = torch.cuda.Event()
    done.record()
    done.synchronize()
values = host[:4].tolist()
print(values)
