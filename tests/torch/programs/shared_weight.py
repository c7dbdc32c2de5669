# Two streams read one weight (correct). Racy: one of them updates the
# weight in place while the other still reads it.
import sys
import torch

FIXED = "--fixed" in sys.argv
w = torch.randn(512, 512, device="cuda")
x1 = torch.randn(64, 512, device="cuda")
x2 = torch.randn(64, 512, device="cuda")
s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
for s in (s1, s2):
    s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s1):
    y1 = x1 @ w
with torch.cuda.stream(s2):
    y2 = x2 @ w
    if not FIXED:
        w.mul_(0.5)  # s1 may still be reading w
for s in (s1, s2):
    torch.cuda.current_stream().wait_stream(s)
print(float((y1 + y2).sum()) != 0.0)
