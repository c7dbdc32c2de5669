# Two streams write column slices of one matrix, no order between them,
# both joined before the matrix is read (correct: no report); racy: the
# slices share a column. A column slice of this 16-row matrix is 16 runs,
# each told as an exact span (Note [Strided views are told as runs] in
# python/streamsan_torch/op_hook.cpp): the racy one is reported at once.
# column_slices_tall.py runs the same on a matrix too tall for that.
import sys
import time
import torch


def run(rows, iterations):
    fixed = "--fixed" in sys.argv
    cols, split = 128, 64
    m = torch.zeros(rows, cols, device="cuda")
    main = torch.cuda.current_stream()
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    for _ in range(iterations):
        s1.wait_stream(main)
        s2.wait_stream(main)
        with torch.cuda.stream(s1):
            m[:, :split].add_(1)
        with torch.cuda.stream(s2):
            m[:, split if fixed else split - 1:].mul_(2)
        main.wait_stream(s1)
        main.wait_stream(s2)
        # Each iteration is a race of its own (racy); the pause lets the
        # engine see a candidate and ask for measurements before the next.
        torch.cuda.synchronize()
        time.sleep(0.01)
    print(float(m.sum()))


if __name__ == "__main__":
    run(16, 3)
