# An event hands work from one stream to another. Racy: the event is
# recorded before the producer's op, so the wait covers nothing.
import sys
import torch

FIXED = "--fixed" in sys.argv
s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
s1.wait_stream(torch.cuda.current_stream())
s2.wait_stream(torch.cuda.current_stream())
buf = torch.empty(1 << 20, device="cuda")
torch.cuda.synchronize()
e = torch.cuda.Event()
with torch.cuda.stream(s1):
    if not FIXED:
        e.record()
    buf.fill_(3.0)
    if FIXED:
        e.record()
with torch.cuda.stream(s2):
    s2.wait_event(e)
    total = buf.sum()
torch.cuda.synchronize()
print(float(total))
