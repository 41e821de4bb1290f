// A Bell pair: <Z0 Z1> = <X0 X1> = 1, <Z0> = 0.
OPENQASM 2.0;
include "qelib1.inc";
qreg q[2];
creg c[2];
h q[0];
cx q[0], q[1];
measure q -> c;
