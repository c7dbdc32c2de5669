# A correct input pipeline: DataLoader worker processes, pinned batches,
# non_blocking uploads, an SGD step per batch, the running loss summed on
# the device and read once at the end. Must run clean.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(2048, 64), torch.randn(2048, 1))
    loader = DataLoader(data, batch_size=128, shuffle=True, num_workers=2, pin_memory=True)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    total = torch.zeros((), device="cuda")
    for epoch in range(2):
        for xb, yb in loader:
            xb = xb.cuda(non_blocking=True)
            yb = yb.cuda(non_blocking=True)
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
    print("total %.3f" % total.item())


if __name__ == "__main__":
    main()
