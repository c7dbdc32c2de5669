# A non_blocking host-to-device copy reads a pinned tensor that the host
# overwrites before the copy is known to be done. Fixed: synchronize first.
import sys
import torch

FIXED = "--fixed" in sys.argv
src = torch.ones(1 << 22, pin_memory=True)
dst = torch.empty(1 << 22, device="cuda")
dst.copy_(src, non_blocking=True)
if FIXED:
    torch.cuda.current_stream().synchronize()
src.fill_(2.0)  # the host writes the pinned source
torch.cuda.synchronize()
print(float(dst[0]))
