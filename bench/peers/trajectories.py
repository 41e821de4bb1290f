#!/usr/bin/env python3
"""Noisy circuits by trajectories: qmlsim against qsimcirq (qsim's noisy
trajectories, its only noise method), trajectories per second on the same
circuit, in one process.

    python bench/peers/trajectories.py [--qubits 16,20,24] [--layers 6]
        [--trajectories 40] [--reps 3] [--threads 2] [--door engine|cirq]

The circuit: `layers` layers of RX and RY on every qubit (random angles) and
a brick of CZs, with Cirq's depolarize(0.01) on every qubit after every
moment (`circuit.with_noise`, as Cirq and qsimcirq apply a constant noise
model); <Z0 Z1> + 0.5 <X_{n-1}>. qsimcirq runs it with
QSimOptions(ev_noisy_repetitions=R, cpu_threads); qmlsim runs the same
circuit built through qmlsim.Circuit (every channel a depolarizing row of the
channel table) with method="trajectories", R trajectories; with --door cirq,
qmlsim.cirq.Simulator(method="trajectories", trajectories=R) takes the very
Cirq circuit and observable qsimcirq takes (the translation cached after the
first call). The two means
agree within their statistical error first (checked against each side's
spread over the repetitions); then alternating timed runs, medians, and
trajectories per second, with the ratio qmlsim / qsimcirq.
"""
import argparse
import statistics
import time

import cirq
import numpy as np
import qsimcirq

import qmlsim
import qmlsim.cirq as qmlsim_cirq

P = 0.01


def layers_of(n, layers, seed=5):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-np.pi, np.pi, n), rng.uniform(-np.pi, np.pi, n), layer % 2)
            for layer in range(layers)]


def cirq_circuit(n, spec):
    q = cirq.LineQubit.range(n)
    c = cirq.Circuit()
    for rx, ry, offset in spec:
        c.append(cirq.Moment(cirq.rx(a).on(q[i]) for i, a in enumerate(rx)))
        c.append(cirq.Moment(cirq.ry(a).on(q[i]) for i, a in enumerate(ry)))
        c.append(cirq.Moment(cirq.CZ(q[i], q[i + 1]) for i in range(offset, n - 1, 2)))
    return c.with_noise(cirq.depolarize(P)), q


def qmlsim_circuit(n, spec):
    """The same noisy circuit: qubit i of Cirq is engine qubit n-1-i (Cirq's
    first qubit the most significant), a channel after every moment."""
    c = qmlsim.Circuit(n)
    e = lambda i: n - 1 - i  # noqa: E731

    def noise():
        for i in range(n):
            c.channel("depolarizing", [e(i)], [P])

    for rx, ry, offset in spec:
        for i, a in enumerate(rx):
            c.add("RX", [e(i)], [float(a)])
        noise()
        for i, a in enumerate(ry):
            c.add("RY", [e(i)], [float(a)])
        noise()
        for i in range(offset, n - 1, 2):
            c.add("CZ", [e(i), e(i + 1)])
        noise()
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qubits", default="16,20,24")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--trajectories", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--door", choices=("engine", "cirq"), default="engine",
                    help="qmlsim's side: the engine's Python API (qmlsim.Circuit), or "
                    "qmlsim.cirq.Simulator on the same Cirq circuit as qsimcirq")
    args = ap.parse_args()
    r = args.trajectories
    print(f"{'qubits':>6} {'qmlsim traj/s':>14} {'qsimcirq traj/s':>16} {'ratio':>6}")
    for n in (int(x) for x in args.qubits.split(",")):
        spec = layers_of(n, args.layers)
        noisy, q = cirq_circuit(n, spec)
        obs = cirq.Z(q[0]) * cirq.Z(q[1]) + 0.5 * cirq.X(q[n - 1])
        ours_c = qmlsim_circuit(n, spec)
        ours_obs = f"Z{n - 1} Z{n - 2} + 0.5*X0"
        qsim = qsimcirq.QSimSimulator(qsimcirq.QSimOptions(cpu_threads=args.threads,
                                                           ev_noisy_repetitions=r))
        seeds = iter(range(1, 10 ** 6))
        door = qmlsim_cirq.Simulator(method="trajectories", trajectories=r, precision="c64",
                                     threads=args.threads, seed=1)

        def run_ours():
            if args.door == "cirq":
                return float(np.real(door.simulate_expectation_values(noisy, obs)[0]))
            return float(qmlsim.expval(ours_c, ours_obs, method="trajectories", trajectories=r,
                                       seed=next(seeds), threads=args.threads,
                                       precision="c64")[0])

        def run_qsim():
            return float(np.real(qsim.simulate_expectation_values(noisy, obs)[0]))

        t_ours, t_qsim, v_ours, v_qsim = [], [], [], []
        for _ in range(args.reps):  # alternating
            t = time.perf_counter()
            v_ours.append(run_ours())
            t_ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            v_qsim.append(run_qsim())
            t_qsim.append(time.perf_counter() - t)
        spread = max(np.std(v_ours), np.std(v_qsim), 1.5 / np.sqrt(r))
        assert abs(np.mean(v_ours) - np.mean(v_qsim)) < 5 * spread, (v_ours, v_qsim)
        a, b = r / statistics.median(t_ours), r / statistics.median(t_qsim)
        print(f"{n:>6} {a:>14.1f} {b:>16.1f} {a / b:>5.2f}x   (means {np.mean(v_ours):+.4f}, "
              f"{np.mean(v_qsim):+.4f})")


if __name__ == "__main__":
    main()
