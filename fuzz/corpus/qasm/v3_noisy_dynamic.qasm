OPENQASM 3.0;
include "stdgates.inc";
qubit[2] q;
bit c;
h q[0];
#pragma braket noise bit_flip(0.1) q[0]
c = measure q[0];
if (c) { x q[1]; }
#pragma braket noise depolarizing(0.2) q[1]
reset q[0];
