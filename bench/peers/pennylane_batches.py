#!/usr/bin/env python3
"""A batch of data rows through one QNode call, as QML code writes it:
AngleEmbedding of each row + three StronglyEntanglingLayers, expval(Z0), on
default.qubit, lightning.qubit and qmlsim.qubit, same run.

Rows: parameter broadcasting (`circuit(X, w)`, X of --rows rows), forward and
the gradient of a mean loss by the weights; `jax.jit(jax.vmap(circuit))`
forward and `jax.grad` (--vmap-rows rows); a torch `TorchLayer` batch
(forward and backward) and a quantum kernel's square matrix written with
broadcasting (a row per call: the overlap of one row with every row, from
`probs`). Results are checked to agree (1e-8) before anything is timed;
each figure is the best of --rounds calls. For qmlsim.qubit, the share of
wall time spent inside the engine's C++ calls is printed beside each row.

    python bench/peers/pennylane_batches.py [--qubits 6] [--rows 500] [--vmap-rows 200]
"""
import argparse
import functools
import time

import numpy as np
import pennylane as qml

import qmlsim

DEVICES = ("default.qubit", "lightning.qubit", "qmlsim.qubit")


class EngineClock:
    """Wall time inside qmlsim's C++ entry points (wrapped while timing)."""

    def __init__(self):
        self.seconds = 0.0
        ext = qmlsim._qmlsim
        for name in ("expvals_batch", "probabilities_batch", "jacobian_batch", "vjp_batch", "vjp",
                     "state"):
            setattr(ext, name, self._timed(getattr(ext, name)))

    def _timed(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
        return wrapper


def qnode(device, n, interface="auto"):
    """The row's circuit: backprop on default.qubit, else the adjoint through
    the device's VJP (PennyLane's default JVP boundary under jax.jit runs a
    vmapped callback row by row)."""
    kwargs = ({"diff_method": "backprop"} if device == "default.qubit" else
              {"diff_method": "adjoint", "device_vjp": True})

    @qml.qnode(qml.device(device, wires=n), interface=interface, **kwargs)
    def circuit(inputs, w):  # TorchLayer's name for the data
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(w, wires=range(n))
        return qml.expval(qml.Z(0))
    return circuit


def best(fn, rounds, clock=None):
    """(the best wall time of `rounds` calls, the engine's share in that call)."""
    out, share = float("inf"), None
    for _ in range(rounds):
        before = clock.seconds if clock else 0.0
        start = time.perf_counter()
        fn()
        took = time.perf_counter() - start
        if took < out:
            out = took
            share = (clock.seconds - before) / took if clock else None
    return out, share


def broadcast_rows(n, rows, rounds, clock):
    from pennylane import numpy as pnp
    rng = np.random.default_rng(1)
    x = pnp.array(rng.uniform(0, np.pi, (rows, n)), requires_grad=False)
    w = pnp.array(rng.uniform(0, np.pi, (3, n, 3)), requires_grad=True)

    def measure(device, ref):
        c = qnode(device, n)
        grad = qml.grad(lambda w: pnp.mean(c(x, w)))
        results = (c(x, w), grad(w))
        agree(results, ref, device)
        clk = clock if device == "qmlsim.qubit" else None
        return (best(lambda: c(x, w), rounds, clk), best(lambda: grad(w), rounds, clk)), results
    return each_device(measure)


def vmap_rows(n, rows, rounds, clock):
    import jax
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(2)
    x = jax.numpy.array(rng.uniform(0, np.pi, (rows, n)))
    w = jax.numpy.array(rng.uniform(0, np.pi, (3, n, 3)))

    def measure(device, ref):
        c = qnode(device, n, "jax")
        f = jax.jit(jax.vmap(c, in_axes=(0, None)))
        g = jax.jit(jax.grad(lambda w: jax.numpy.mean(jax.vmap(c, in_axes=(0, None))(x, w))))
        results = (np.asarray(f(x, w)), np.asarray(g(w)))
        agree(results, ref, device)
        clk = clock if device == "qmlsim.qubit" else None
        return (best(lambda: np.asarray(f(x, w)), rounds, clk),
                best(lambda: np.asarray(g(w)), rounds, clk)), results
    return each_device(measure)


def torch_rows(n, rows, rounds, clock):
    import torch
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.uniform(0, np.pi, (rows, n)))
    w0 = torch.tensor(rng.uniform(0, np.pi, (3, n, 3)))

    def measure(device, ref):
        c = qnode(device, n, "torch")
        layer = qml.qnn.TorchLayer(c, {"w": (3, n, 3)})
        layer.w.data = w0.clone()

        def step():
            layer.zero_grad()
            loss = layer(x).mean()
            loss.backward()
            return loss.item(), layer.w.grad.numpy().copy()
        results = step()
        agree(results, ref, device)
        return (best(step, rounds, clock if device == "qmlsim.qubit" else None),), results
    return each_device(measure)


def kernel_rows(n, rows, rounds, clock):
    rng = np.random.default_rng(4)
    x = rng.uniform(0, np.pi, (rows, n))

    def measure(device, ref):
        @qml.qnode(qml.device(device, wires=n))
        def overlap(a, b):
            qml.AngleEmbedding(a, wires=range(n))
            qml.adjoint(qml.AngleEmbedding)(b, wires=range(n))
            return qml.probs(wires=range(n))

        def matrix():  # a row of the matrix per call: overlap(x_i, X) broadcasts over X
            return np.array([overlap(a, x)[..., 0] for a in x])
        results = (matrix(),)
        agree(results, ref, device)
        return (best(matrix, rounds, clock if device == "qmlsim.qubit" else None),), results
    return each_device(measure)


def each_device(measure):
    """{device: measure(device, reference)} where measure returns (timings,
    results); the first results are the reference the others must match; a
    device that fails gets its error's first line."""
    out, ref = {}, [None]
    for device in DEVICES:
        try:
            timings, results = measure(device, ref[0])
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001 - a peer that fails is reported, not fatal
            out[device] = f"fails: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
            continue
        if ref[0] is None:
            ref[0] = results
        out[device] = timings
    return out


def agree(results, ref, device):
    if ref is not None:
        for a, b in zip(results, ref):
            assert np.allclose(a, b, atol=1e-8), device


def report(title, table):
    print(f"\n{title}")
    for device, timings in table.items():
        if isinstance(timings, str):
            print(f"  {device:16s} {timings}")
            continue
        cells = []
        for took, share in timings:
            cell = f"{took:8.3f} s"
            if share is not None:
                cell += f" (engine {100 * share:4.1f}%)"
            cells.append(cell)
        print(f"  {device:16s} " + "  /  ".join(cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qubits", type=int, default=6)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--vmap-rows", type=int, default=200)
    ap.add_argument("--kernel-rows", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="broadcast,vmap,torch,kernel")
    args = ap.parse_args()
    clock = EngineClock()
    only = args.only.split(",")
    n = args.qubits
    print(f"{n} qubits, {args.rows} broadcast rows, {args.vmap_rows} vmapped rows; "
          f"best of {args.rounds}; forward / gradient")
    if "broadcast" in only:
        report("broadcast circuit(X, w)", broadcast_rows(n, args.rows, args.rounds, clock))
    if "vmap" in only:
        report("jax.jit(jax.vmap(circuit))", vmap_rows(n, args.vmap_rows, args.rounds, clock))
    if "torch" in only:
        report("TorchLayer batch, forward + backward",
               torch_rows(n, args.rows, args.rounds, clock))
    if "kernel" in only:
        report(f"kernel matrix of {args.kernel_rows} rows, a broadcast call per row",
               kernel_rows(n, args.kernel_rows, args.rounds, clock))


if __name__ == "__main__":
    main()
