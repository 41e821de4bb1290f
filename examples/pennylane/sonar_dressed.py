#!/usr/bin/env python3
"""Reference job 3 (the dressed quantum classifier on Sonar) as a PennyLane +
PyTorch user writes it, on any device (docs/workloads.md, section 3).

Linear(60 -> N), angles (sigmoid - 0.5) * 2 pi, RX encoding, two entangling
layers (range 1 and 3, Rot then a ring of CRot), Rot on wire 0, <Z0>, then
Linear(1 -> 1); margin-ranking loss against zero, Adam 0.1 decayed by 0.99 per
epoch. The circuit is a qml.qnn.TorchLayer with the adjoint method.

    python examples/pennylane/sonar_dressed.py --device qmlsim.qubit \
        --data examples/data/sonar.all-data [--wires 10 --rows 64 --epochs 5]
"""
import argparse
import math

import numpy as np
import pennylane as qml
import torch


def read_sonar(path):
    rows = [line.strip().split(",") for line in open(path) if line.strip()]
    x = torch.tensor([[float(v) for v in r[:60]] for r in rows], dtype=torch.float64)
    y = torch.tensor([1.0 if r[60] == "M" else -1.0 for r in rows], dtype=torch.float64)
    return x, y


def entangling_layer(p, wires, r):
    n = len(wires)
    for i in range(n):
        qml.Rot(*p[0][i], wires=wires[i])
    w = 0
    for k in range(n):
        t = (w - r) % n
        qml.CRot(*p[1][k], wires=[wires[w], wires[t]])
        w = t


def build(device_name, wires, seed=42, **device_options):
    """The model (torch.nn.Sequential) with the quantum layer on `device_name`."""
    torch.manual_seed(seed)
    dev = qml.device(device_name, wires=wires, **device_options)

    @qml.qnode(dev, diff_method="adjoint", interface="torch")
    def circuit(inputs, w1, w2, r):
        for i in range(wires):
            qml.RX(inputs[..., i], wires=i)
        entangling_layer(w1, list(range(wires)), 1)
        entangling_layer(w2, list(range(wires)), 3)
        qml.Rot(*r, wires=0)
        return qml.expval(qml.PauliZ(0))

    shapes = {"w1": (2, wires, 3), "w2": (2, wires, 3), "r": (3,)}
    init = lambda t: torch.nn.init.uniform_(t, 0, 2 * math.pi)  # noqa: E731
    quantum = qml.qnn.TorchLayer(circuit, shapes, init_method=init)

    class Angles(torch.nn.Module):
        def forward(self, h):
            return (torch.sigmoid(h) - 0.5) * 2 * math.pi

    class Column(torch.nn.Module):
        def forward(self, e):
            return e.reshape(-1, 1)

    return torch.nn.Sequential(torch.nn.Linear(60, wires), Angles(), quantum, Column(),
                               torch.nn.Linear(1, 1)).double()


def margin_loss(y, label):
    return torch.clamp(-label * y.reshape(-1) + 0.1, min=0).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="qmlsim.qubit")
    ap.add_argument("--data", required=True)
    ap.add_argument("--wires", type=int, default=10)
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=5)
    args = ap.parse_args()
    x, y = read_sonar(args.data)
    order = np.random.default_rng(42).permutation(len(y))[: args.rows]
    x, y = x[order], y[order]
    model = build(args.device, args.wires)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.99)
    for epoch in range(1, args.epochs + 1):
        perm = torch.from_numpy(np.random.default_rng(42 + epoch).permutation(len(y)))
        for i in range(0, len(y), args.batch):
            idx = perm[i:i + args.batch]
            opt.zero_grad()
            loss = margin_loss(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            print(f"Train Epoch: {epoch} [{i + len(idx)}/{len(y)}] Loss: {loss.item():.6f}")
        sched.step()


if __name__ == "__main__":
    main()
