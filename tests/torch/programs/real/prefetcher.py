# The side-stream prefetcher many training scripts copy (NVIDIA Apex's
# data_prefetcher): the next batch is uploaded on a side stream from pinned
# memory while the current one trains; the main stream waits for the side
# stream and record_stream() keeps the uploaded tensors alive for it. The
# host refills a pinned staging buffer only after the upload that read it
# has finished (an event). Correct: must run clean.
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
side = torch.cuda.Stream()
staging = [torch.empty(64, 256).pin_memory() for _ in range(2)]
uploaded = [None, None]
done = [None, None]


def prefetch(i):
    buf = staging[i % 2]
    if done[i % 2] is not None:
        done[i % 2].synchronize()  # the upload that read this buffer has finished
    buf.copy_(torch.randn(64, 256))
    with torch.cuda.stream(side):
        uploaded[i % 2] = buf.cuda(non_blocking=True)
        e = torch.cuda.Event()
        e.record(side)
        done[i % 2] = e


prefetch(0)
for i in range(30):
    torch.cuda.current_stream().wait_stream(side)
    x = uploaded[i % 2]
    x.record_stream(torch.cuda.current_stream())
    if i + 1 < 30:
        prefetch(i + 1)
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.4f" % loss.item())
