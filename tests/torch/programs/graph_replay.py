# A CUDA graph captured with torch.cuda.graph and replayed on a side stream;
# the default stream reads the graph's output. Fixed: wait_stream.
import sys
import torch

FIXED = "--fixed" in sys.argv
static_in = torch.randn(1 << 16, device="cuda")
static_out = torch.empty_like(static_in)
g = torch.cuda.CUDAGraph()
warm = torch.cuda.Stream()
warm.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(warm):
    static_out.copy_(static_in * 2)
torch.cuda.current_stream().wait_stream(warm)
with torch.cuda.graph(g):
    static_out.copy_(static_in * 2)
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    g.replay()
if FIXED:
    torch.cuda.current_stream().wait_stream(s)
total = static_out.sum()
torch.cuda.synchronize()
print(float(total) != 0.0)
