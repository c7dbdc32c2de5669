# torch.compile with mode="reduce-overhead": Inductor's kernels recorded
# into CUDA graphs by cudagraph trees, replayed from the graphs' private
# memory pool, for inference and for training steps, with the outputs read
# (and cloned, as the documentation asks) between replays. Correct: must
# run clean.
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


@torch.compile(mode="reduce-overhead")
def forward_loss(x, y):
    return nn.functional.mse_loss(model(x), y)


@torch.compile(mode="reduce-overhead")
def predict(x):
    return model(x).softmax(-1)


x = torch.randn(64, 128, device="cuda")
y = torch.randn(64, 128, device="cuda")
for step in range(12):
    optimizer.zero_grad(set_to_none=True)
    loss = forward_loss(x, y)
    loss.backward()
    optimizer.step()
    if step % 4 == 0:
        print("step %d loss %.4f" % (step, loss.item()))
outputs = []
with torch.no_grad():
    for _ in range(8):
        torch.compiler.cudagraph_mark_step_begin()
        outputs.append(predict(x).clone())
print("mean %.4f" % torch.stack(outputs).mean().item())
