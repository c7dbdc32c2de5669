"""A jitted JAX training loop: an MLP, SGD, data put on the device each
step, metrics read back every few steps. XLA picks its own streams, its
BFC allocator and (by default) command buffers; nothing here orders them
by hand, so any report is streamsan's mistake.

    python3 jax_training.py

Exits 77 without JAX with a GPU backend.
"""
import sys

try:
    import jax
    import jax.numpy as jnp
    import numpy as np
except ImportError as e:
    print("jax_training: %s" % e)
    sys.exit(77)
try:
    if not jax.devices("gpu"):
        raise RuntimeError("no GPU device")
except Exception as e:
    print("jax_training: no GPU (%s)" % e)
    sys.exit(77)


def init(key, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (fan_in, fan_out)) / np.sqrt(fan_in),
                       jnp.zeros(fan_out)))
    return params


def forward(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def step(params, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)], value


params = init(jax.random.PRNGKey(0), [256, 256, 256, 10])
rng = np.random.default_rng(0)
for i in range(60):
    x = jax.device_put(rng.standard_normal((64, 256), dtype=np.float32))
    y = jax.device_put(rng.standard_normal((64, 10), dtype=np.float32))
    params, value = step(params, x, y)
    if i % 10 == 0:
        print("step %d loss %.4f" % (i, float(value)))
print("jax_training: done")
