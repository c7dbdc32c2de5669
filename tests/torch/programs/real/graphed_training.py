# Whole-step CUDA graph capture as the PyTorch documentation shows it:
# warm-up on a side stream, capture of forward, backward and optimizer step
# into a graph, then replays fed through static input tensors (copy_ on the
# default stream before each replay), plus make_graphed_callables on a
# second module. Correct: must run clean.
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
static_x = torch.randn(32, 64, device="cuda")
static_y = torch.randn(32, 1, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(static_x), static_y).backward()
        opt.step()
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
with torch.cuda.graph(g):
    static_loss = nn.functional.mse_loss(model(static_x), static_y)
    static_loss.backward()
    opt.step()

for _ in range(10):
    static_x.copy_(torch.randn(32, 64, device="cuda"))
    static_y.copy_(torch.randn(32, 1, device="cuda"))
    g.replay()
print("graphed loss %.4f" % static_loss.item())

head = nn.Linear(64, 8).cuda()
graphed_head = torch.cuda.make_graphed_callables(head, (torch.randn(16, 64, device="cuda"),))
head_opt = torch.optim.SGD(head.parameters(), lr=0.1)
for _ in range(5):
    out = graphed_head(torch.randn(16, 64, device="cuda"))
    out.sum().backward()
    head_opt.step()
    head_opt.zero_grad(set_to_none=True)
print("head %.4f" % out.detach().float().sum().item())
