# A side stream computes y; the default stream uses it without waiting.
# Fixed: torch.cuda.current_stream().wait_stream(s).
import sys
import torch

FIXED = "--fixed" in sys.argv
x = torch.randn(1024, 1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x @ x
if FIXED:
    torch.cuda.current_stream().wait_stream(s)
z = y.sum()
print(float(z) != 0.0)
