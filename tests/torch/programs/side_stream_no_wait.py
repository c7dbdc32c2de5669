# An op on a side stream reads what the default stream wrote, without
# wait_stream (CSAN's documentation example). Fixed: s.wait_stream(default).
import sys
import torch

FIXED = "--fixed" in sys.argv
a = torch.rand(1 << 20, device="cuda")
s = torch.cuda.Stream()
if FIXED:
    s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    torch.mul(a, 5, out=a)
torch.cuda.synchronize()
print("done")
