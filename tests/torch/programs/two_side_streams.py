# Two side streams: s1 produces, s2 consumes. Fixed: an event recorded on s1
# after the producer and waited on by s2.
import sys
import torch

FIXED = "--fixed" in sys.argv
s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
data = torch.empty(1 << 20, device="cuda")
for s in (s1, s2):
    s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s1):
    data.normal_()
    ready = s1.record_event()
with torch.cuda.stream(s2):
    if FIXED:
        s2.wait_event(ready)
    out = data.relu()
torch.cuda.synchronize()
print(out.shape)
