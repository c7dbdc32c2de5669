# torch.compile (Inductor, Triton kernels launched outside ATen operators)
# on a small MLP, forward and backward. Correct: must run clean, and run at
# all under streamsan. Exits 77 when this torch cannot compile natively
# (no Triton, no C compiler).
import sys
import torch
import torch.nn as nn

try:
    from torch.utils._triton import has_triton
    if not has_triton():
        print("no triton: skipped")
        sys.exit(77)
except ImportError:
    print("no triton: skipped")
    sys.exit(77)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step_model = torch.compile(model)
x = torch.randn(64, 128, device="cuda")
try:
    for _ in range(5):
        loss = step_model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
except Exception as e:  # a toolchain problem of the machine, not a race
    if "streamsan" in str(e):
        raise
    print("compile failed (%s): skipped" % type(e).__name__)
    sys.exit(77)
print("loss %.4f" % loss.item())
