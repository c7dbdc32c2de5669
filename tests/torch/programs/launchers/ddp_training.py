# Data-parallel training as torchrun starts it: one process per GPU, the
# NCCL backend, DistributedDataParallel's gradient buckets all-reduced on
# NCCL's own stream while backward runs, a metric all-reduced at the end
# of each epoch, a barrier and a checkpoint saved by rank 0. Correct: must
# run clean. Started by `torchrun --nproc-per-node N`, or alone (one
# process, its own rendezvous), the way people test such scripts.
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

if "RANK" not in os.environ:
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + os.getpid() % 1000))
rank = int(os.environ["RANK"])
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
world = dist.get_world_size()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                      nn.Linear(256, 10)).cuda()
# Small buckets, so that several all-reduces overlap the backward pass.
ddp = DistributedDataParallel(model, device_ids=[local_rank], bucket_cap_mb=0.05)
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
generator = torch.Generator().manual_seed(rank)
for epoch in range(3):
    total = torch.zeros((), device="cuda")
    for step in range(20):
        x = torch.randn(64, 128, generator=generator).pin_memory().cuda(non_blocking=True)
        y = torch.randint(0, 10, (64,), generator=generator).cuda(non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    dist.all_reduce(total)
    if rank == 0:
        print("epoch %d mean loss %.4f" % (epoch, total.item() / (20 * world)))
dist.barrier()
if rank == 0:
    with tempfile.TemporaryDirectory() as d:
        torch.save(ddp.module.state_dict(), os.path.join(d, "checkpoint.pt"))
# Every rank ends with the same weights.
check = torch.cat([p.detach().flatten() for p in model.parameters()])
reference = check.clone()
dist.broadcast(reference, 0)
assert torch.equal(check, reference), "ranks disagree"
dist.destroy_process_group()
