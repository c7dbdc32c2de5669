# Race-free tour of what must keep working: events with timing, an
# interprocess event, ExternalStream, graph capture and replay, a small
# training step on a side stream, several devices when present. No report
# is allowed.
import sys
import torch

s = torch.cuda.Stream()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
x = torch.randn(256, 256, device="cuda")
start.record()
y = x @ x
end.record()
end.synchronize()
assert start.elapsed_time(end) >= 0
ipc = torch.cuda.Event(interprocess=True)
ipc.record()
ipc.synchronize()
ext = torch.cuda.ExternalStream(s.cuda_stream)
ext.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(ext):
    z = y.relu()
torch.cuda.current_stream().wait_stream(ext)
model = torch.nn.Linear(256, 256).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
static_in = torch.randn(64, 256, device="cuda")
warm = torch.cuda.Stream()
warm.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(warm):
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        model(static_in).sum().backward()
        opt.step()
torch.cuda.current_stream().wait_stream(warm)
g = torch.cuda.CUDAGraph()
with torch.no_grad():
    with torch.cuda.graph(g):
        static_out = model(static_in)
for _ in range(3):
    g.replay()
print(float(static_out.sum() + z.sum()) == float(static_out.sum() + z.sum()))
if torch.cuda.device_count() > 1:
    a = torch.ones(1024, device="cuda:0")
    b = a.to("cuda:1")
    torch.cuda.synchronize(1)
    print(float(b.sum()))
