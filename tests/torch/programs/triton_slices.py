# A Triton kernel (launched by Triton's own launcher, outside any ATen
# operator) run on two streams, each scaling its own half of one tensor;
# racy: the second half starts one block early, so the two launches write
# 1,024 shared elements. Fixed: the halves are disjoint. Only the kernels'
# measured footprints tell the two apart: the pointer each launch gets is
# inside one caching-allocator segment.
import sys

import torch
import triton
import triton.language as tl

FIXED = "--fixed" in sys.argv


@triton.jit
def scale(x_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


BLOCK = 1024
x = torch.ones(1 << 20, device="cuda")
half = x.numel() // 2
first, second = x[:half], x[half - (0 if FIXED else BLOCK):]
streams = [torch.cuda.Stream(), torch.cuda.Stream()]
for s in streams:
    s.wait_stream(torch.cuda.current_stream())
for s, part, factor in zip(streams, (first, second), (2.0, 3.0)):
    with torch.cuda.stream(s):
        grid = (triton.cdiv(part.numel(), BLOCK),)
        scale[grid](part, part.numel(), factor, BLOCK=BLOCK)
for s in streams:
    torch.cuda.current_stream().wait_stream(s)
print("sum %.0f" % x.sum().item())
