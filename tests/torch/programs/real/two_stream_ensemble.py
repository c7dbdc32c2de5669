# Two models evaluated concurrently on two side streams, each consuming the
# input after wait_stream and handing its output back through an event;
# timing with CUDA events (elapsed_time). Correct: must run clean.
import torch
import torch.nn as nn

torch.manual_seed(0)
a = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).cuda().eval()
b = nn.Sequential(nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 10)).cuda().eval()
sa, sb = torch.cuda.Stream(), torch.cuda.Stream()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
with torch.no_grad():
    start.record()
    for _ in range(20):
        x = torch.randn(128, 256, device="cuda")
        sa.wait_stream(torch.cuda.current_stream())
        sb.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(sa):
            ya = a(x)
            ea = torch.cuda.Event()
            ea.record()
        with torch.cuda.stream(sb):
            yb = b(x)
            eb = torch.cuda.Event()
            eb.record()
        torch.cuda.current_stream().wait_event(ea)
        torch.cuda.current_stream().wait_event(eb)
        x.record_stream(sa)
        x.record_stream(sb)
        ya.record_stream(torch.cuda.current_stream())
        yb.record_stream(torch.cuda.current_stream())
        avg = (ya.softmax(-1) + yb.softmax(-1)) / 2
    end.record()
    end.synchronize()
print("agree %.3f, %.1f ms" % (avg.argmax(-1).float().mean().item(), start.elapsed_time(end)))
