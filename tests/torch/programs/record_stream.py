# A tensor used on a side stream is freed on the default stream and its
# block reused at once. Fixed: x.record_stream(s) keeps the block until s is
# done with it.
import sys
import torch

FIXED = "--fixed" in sys.argv
n = 1 << 22
s = torch.cuda.Stream()
x = torch.ones(n, device="cuda")
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x * 2
    if FIXED:
        x.record_stream(s)
del x
z = torch.empty(n, device="cuda")  # the same size: x's block if it is free
z.fill_(7.0)
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()
print(float(y[0]), float(z[0]))
