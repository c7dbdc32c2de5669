# Naive model parallelism as the PyTorch tutorial writes it: the first
# half of a model on cuda:0, the second on cuda:1, activations moved with
# .to("cuda:1") and gradients flowing back across the devices, a few SGD
# steps. torch orders each cross-device copy with both devices' current
# streams. Correct: must run clean. Needs two GPUs (exits 77 otherwise).
import sys

import torch
import torch.nn as nn

if torch.cuda.device_count() < 2:
    print("needs two GPUs")
    sys.exit(77)


class TwoDeviceModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Sequential(nn.Linear(256, 512), nn.ReLU()).to("cuda:0")
        self.second = nn.Sequential(nn.Linear(512, 10)).to("cuda:1")

    def forward(self, x):
        return self.second(self.first(x.to("cuda:0")).to("cuda:1"))


torch.manual_seed(0)
model = TwoDeviceModel()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
loss_fn = nn.CrossEntropyLoss()
for step in range(20):
    x = torch.randn(64, 256).pin_memory().to("cuda:0", non_blocking=True)
    labels = torch.randint(0, 10, (64,)).to("cuda:1", non_blocking=True)
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), labels)
    loss.backward()
    optimizer.step()
print("loss %.4f" % loss.item())
