# A double-buffered upload/compute/download pipeline as people write it
# without a framework: two pinned staging buffers per direction, uploads on a
# high-priority copy stream, compute on the default stream, downloads on a
# third stream; the host reuses a staging buffer only once the event after
# its last copy says so, by polling Event.query() (and once by
# Event.synchronize()), and frees the device batches without record_stream
# after a synchronize of the stream that used them. The cache is emptied
# half-way. Correct: must run clean.
import torch

dev = "cuda"
torch.manual_seed(0)
lo, hi = torch.cuda.Stream.priority_range()
upload = torch.cuda.Stream(priority=hi)
download = torch.cuda.Stream()
compute = torch.cuda.current_stream()
weight = torch.randn(1024, 1024, device=dev) / 32

n, batches = 2, 12
stage_in = [torch.empty(256, 1024, pin_memory=True) for _ in range(n)]
stage_out = [torch.empty(256, 1024, pin_memory=True) for _ in range(n)]
in_free = [None] * n   # event after the upload that last read stage_in[i]
out_ready = [None] * n  # event after the download that last wrote stage_out[i]
out_batch = [None] * n
total = 0.0


def wait_polling(event):
    while not event.query():
        pass


def drain(i):
    global total
    if out_ready[i] is None:
        return
    if i == 0:
        out_ready[i].synchronize()
    else:
        wait_polling(out_ready[i])
    total += float(stage_out[i].sum())  # the host reads the downloaded batch
    out_ready[i] = None


for b in range(batches):
    i = b % n
    if in_free[i] is not None:
        wait_polling(in_free[i])  # the last upload from this buffer is done
    stage_in[i].copy_(torch.full((256, 1024), float(b + 1)).mul_(torch.rand(256, 1024)))
    with torch.cuda.stream(upload):
        x = stage_in[i].to(dev, non_blocking=True)
        in_free[i] = torch.cuda.Event()
        in_free[i].record()
    compute.wait_stream(upload)
    y = torch.relu(x @ weight)
    done = torch.cuda.Event()
    done.record()
    drain(i)  # stage_out[i] is about to be written again
    with torch.cuda.stream(download):
        download.wait_event(done)
        stage_out[i].copy_(y, non_blocking=True)
        out_ready[i] = torch.cuda.Event()
        out_ready[i].record()
    out_batch[i] = (x, y)
    if b == batches // 2:
        download.synchronize()
        upload.synchronize()
        compute.synchronize()
        out_batch = [None] * n  # freed without record_stream: every stream is idle
        torch.cuda.empty_cache()

for i in range(n):
    drain(i)
torch.cuda.synchronize()
print("pipeline total %.1f over %d batches" % (total, batches))
assert total > 0
