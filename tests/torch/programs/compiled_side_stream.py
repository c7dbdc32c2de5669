# A torch.compile'd function (Inductor's Triton kernels, launched outside
# any ATen operator) run on a side stream over a tensor the default stream
# has just filled, without wait_stream; fixed: the side stream waits. The
# report must name this file's line that calls the compiled function,
# which only Triton's launch hooks can tell (the launcher releases the GIL).
import sys

import torch

FIXED = "--fixed" in sys.argv


@torch.compile
def gelu_scale(x):
    return torch.nn.functional.gelu(x) * 2.0 + 1.0


x = torch.randn(1 << 20, device="cuda")
gelu_scale(x)  # compiled and warmed on the default stream
torch.cuda.synchronize()
x.uniform_()
side = torch.cuda.Stream()
if FIXED:
    side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    y = gelu_scale(x)
torch.cuda.current_stream().wait_stream(side)
print("mean %.4f" % y.mean().item())
