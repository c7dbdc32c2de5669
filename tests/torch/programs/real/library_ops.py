# Scientific code on torch's CUDA libraries, written as people write it:
# cuFFT (plans cached per stream), cuSOLVER and MAGMA (linalg: workspaces,
# info arrays copied back and checked, eig's host-side part), cuSPARSE (CSR
# products), CUB (sort, unique, nonzero, cumsum: results whose size the host
# must read first) and the RNG, on the default stream and on two side
# streams joined with wait_stream and events, and results downloaded with
# non_blocking copies into pinned memory read after an event's synchronize.
# Everything the libraries do inside (their own streams, workspaces and host
# buffers) is ordered by the libraries. Correct: must run clean.
import torch

torch.manual_seed(0)
dev = "cuda"
main = torch.cuda.current_stream()
sa, sb = torch.cuda.Stream(), torch.cuda.Stream()

signal = torch.randn(8, 4096, device=dev)
a = torch.randn(96, 96, device=dev, dtype=torch.float64)
spd = a @ a.T + 96 * torch.eye(96, device=dev, dtype=torch.float64)
rhs = torch.randn(96, 4, device=dev, dtype=torch.float64)
dense = torch.randn(512, 512, device=dev)
dense[dense.abs() < 1.5] = 0  # about 13% non-zeros
vec = torch.randn(512, 64, device=dev)

results = {}
for step in range(3):
    sa.wait_stream(main)
    sb.wait_stream(main)
    # Spectral filtering on one side stream (cuFFT, a plan cached per size).
    with torch.cuda.stream(sa):
        spectrum = torch.fft.rfft(signal, dim=-1)
        spectrum[:, 512:] = 0
        smooth = torch.fft.irfft(spectrum, n=signal.shape[-1], dim=-1)
        power = torch.fft.fftshift(torch.fft.fft2(smooth[:, :1024].reshape(8, 32, 32)).abs(), dim=(-2, -1))
        done_a = torch.cuda.Event()
        done_a.record()
    # Dense linear algebra on the other (cuSOLVER; eigvals' MAGMA path on the host).
    with torch.cuda.stream(sb):
        chol = torch.linalg.cholesky(spd)
        x = torch.cholesky_solve(rhs, chol)
        q, r = torch.linalg.qr(a)
        sv = torch.linalg.svdvals(a)
        w = torch.linalg.eigvalsh(spd)
        inv = torch.linalg.inv(spd)
        lu_x = torch.linalg.solve(spd, rhs)
        lst = torch.linalg.lstsq(a, rhs).solution
        ev = torch.linalg.eigvals(a[:32, :32])
        done_b = torch.cuda.Event()
        done_b.record()
    # Sparse products and CUB-backed ops on the default stream meanwhile.
    csr = dense.to_sparse_csr()
    y = csr @ vec
    coo = dense.to_sparse()
    z = torch.sparse.mm(coo, vec)
    order = torch.sort(y.flatten(), stable=True).indices
    uniq, counts = torch.unique(torch.randint(0, 50, (10000,), device=dev), return_counts=True)
    nz = torch.nonzero(dense > 2.5)
    picked = torch.masked_select(y, y > 1.0)
    ranks = torch.argsort(torch.rand(4096, device=dev))
    draws = torch.multinomial(torch.softmax(y[0], 0), 16, replacement=True)
    hist = torch.histc(y, bins=32)
    tally = torch.bincount(torch.randint(0, 64, (5000,), device=dev), minlength=64)
    running = torch.cumsum(y, dim=0)
    acc = torch.zeros(64, device=dev)
    acc.index_put_((torch.randint(0, 64, (1000,), device=dev),), torch.ones(1000, device=dev), accumulate=True)
    # Join both side streams; their results are used on the default stream.
    main.wait_event(done_a)
    main.wait_event(done_b)
    for t in (spectrum, smooth, power):
        t.record_stream(main)
    for t in (chol, x, q, r, sv, w, inv, lu_x, lst, ev):
        t.record_stream(main)
    check = torch.stack([
        (spd @ x - rhs).abs().max(),
        (q @ r - a).abs().max(),
        (spd @ inv - torch.eye(96, device=dev, dtype=torch.float64)).abs().max(),
        (lu_x - x).abs().max(),
        (y - z).abs().max().double(),
        (smooth - signal).pow(2).mean().double(),
    ])
    # Downloaded without blocking into pinned memory, read after the event.
    host = torch.empty(check.shape, dtype=check.dtype, pin_memory=True)
    host.copy_(check, non_blocking=True)
    copied = torch.cuda.Event()
    copied.record()
    copied.synchronize()
    results[step] = host.tolist()
    assert torch.allclose(sv[0], torch.linalg.matrix_norm(a, ord=2))
    assert counts.sum().item() == 10000 and tally.sum().item() == 5000 and acc.sum().item() == 1000
    assert order.numel() == y.numel() and ranks.numel() == 4096 and draws.numel() == 16
    assert hist.sum().item() == y.numel() and picked.numel() == int((y > 1.0).sum())
    assert torch.allclose(running[-1], y.sum(0), rtol=1e-3, atol=1e-3)
    assert nz.shape[1] == 2 and uniq.numel() <= 50 and ev.numel() == 32

worst = max(max(v[:5]) for v in results.values())
print("largest residual %.2e, eigenvalues %d, spectra %s" % (worst, w.numel(), tuple(power.shape)))
assert worst < 1e-3, results
