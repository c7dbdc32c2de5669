# column_slices.py on a 1024-row matrix: a column slice is 1024 runs, more
# than the hook tells one by one, so it is told as its hull flagged as such
# (Note [A span flagged as a hull] in inject/session/torch_entry.cpp): its
# accesses are inferred, a conflict through them is a candidate, and a
# measured footprint decides (Note [Measured footprints of an operator's
# launches] in inject/model/cuda_model_ops.cpp). Correct: disjoint slices,
# no report (a candidate may be listed as a possible race); racy: the slices
# share a column, confirmed once both kernels are measured (their first
# launches, or the launches after the candidate asked for it: the loop runs
# ten times).
from column_slices import run  # the script's folder is on sys.path

run(1024, 10)
