# The default stream reads a tensor; a side stream overwrites it without
# waiting (write after read). Fixed: s.wait_stream(default).
import sys
import torch

FIXED = "--fixed" in sys.argv
x = torch.randn(2048, 2048, device="cuda")
torch.cuda.synchronize()
norm = x.norm()          # read on the default stream
s = torch.cuda.Stream()
if FIXED:
    s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    x.zero_()            # write on the side stream
torch.cuda.synchronize()
print(float(norm) > 0)
