# A correct training loop as people write it: a small CNN (cuDNN
# convolutions, batch norm, pooling), mixed precision (autocast + GradScaler),
# Adam, channels_last, the loss read with .item() every step. Must run clean.
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    nn.Flatten(), nn.Linear(64, 10)).cuda().to(memory_format=torch.channels_last)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda")
x = torch.randn(32, 3, 32, 32, device="cuda").to(memory_format=torch.channels_last)
y = torch.randint(0, 10, (32,), device="cuda")
for step in range(20):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    last = loss.item()
print("loss %.4f" % last)
