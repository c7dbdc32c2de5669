# Four streams write disjoint row blocks of one tensor (correct: no report);
# racy: the blocks overlap by one row.
import sys
import torch

FIXED = "--fixed" in sys.argv
rows, cols, parts = 1024, 1024, 4
t = torch.zeros(rows, cols, device="cuda")
streams = [torch.cuda.Stream() for _ in range(parts)]
step = rows // parts
for i, s in enumerate(streams):
    s.wait_stream(torch.cuda.current_stream())
    lo = i * step
    hi = lo + step if FIXED or i == parts - 1 else lo + step + 1
    with torch.cuda.stream(s):
        t[lo:hi].add_(float(i + 1))
for s in streams:
    torch.cuda.current_stream().wait_stream(s)
print(float(t.sum()))
