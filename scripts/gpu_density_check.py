"""gpu-check's density-matrix step: a 12-qubit noisy circuit (4 layers of RY,
a CNOT chain and depolarizing noise on every qubit) through `qmlsim run
--gradient` on the GPU and on the CPU; exits 1 unless values and gradients
agree to 1e-10 (c128).

    python3 scripts/gpu_density_check.py BUILD/qmlsim OUT_DIR
"""
import json
import subprocess
import sys


def main():
    qmlsim, out = sys.argv[1], sys.argv[2]
    n, lines = 12, ["OPENQASM 3.0;", "include \"stdgates.inc\";", "qubit[12] q;"]
    for layer in range(4):
        lines += [f"ry({0.1 + 0.07 * (layer * n + k)}) q[{k}];" for k in range(n)]
        lines += [f"cx q[{k}], q[{k + 1}];" for k in range(n - 1)]
        lines += [f"#pragma braket noise depolarizing(0.01) q[{k}]" for k in range(n)]
    path = f"{out}/noisy12.qasm"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")

    def run(backend):
        r = subprocess.run([qmlsim, "run", path, "--observable", "Z0 Z1", "--observable", "X5",
                            "--gradient", "--backend", backend, "--json"],
                           capture_output=True, text=True, check=True)
        return json.loads(r.stdout)

    cpu, gpu = run("cpu"), run("cuda")
    value = max(abs(a - b) for a, b in zip(cpu["expval"], gpu["expval"]))
    grad = max(abs(a - b) for ra, rb in zip(cpu["gradient"], gpu["gradient"])
               for a, b in zip(ra, rb))
    met = max(value, grad) <= 1e-10
    print(f"12-qubit density matrix, 48 RY + 44 CNOT + 48 channels, c128: largest difference "
          f"GPU - CPU {value:.1e} (values), {grad:.1e} (gradients) -> "
          f"{'MET' if met else 'NOT MET'} (target 1e-10)")
    print(f"time (forward pass + Jacobian of 2 observables): "
          f"cpu {cpu['time_s']['simulate']:.3f} s, cuda {gpu['time_s']['simulate']:.3f} s")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
