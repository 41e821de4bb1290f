OPENQASM 3.0;
include "stdgates.inc";
input float[64] theta;
qubit[3] q;
h q[0];
cx q[0], q[1];
#pragma braket noise depolarizing(0.1) q[0]
rx(theta) q[2];
#pragma braket noise amplitude_damping(pi / 16) q
#pragma braket noise generalized_amplitude_damping(0.2, 0.3) q[1]
#pragma braket noise two_qubit_dephasing(0.05) q[1], q[0]
#pragma braket noise pauli_channel(0.1, 0.05, 0.02) q[2]
#pragma braket noise phase_damping(0.3) q[0]
#pragma braket noise thermal_relaxation(0.5, 0.4, 0.01, 0.1) q[1]
#pragma braket noise kraus([[0.8, 0], [0, 0.8]], [[0, 0.6im], [-0.6im, 0]]) q[1]
#pragma braket noise kraus([[1, 0], [0, 0.6+0.8im]]) q[0]
