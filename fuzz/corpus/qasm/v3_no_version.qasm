include "stdgates.inc";
qubit[2] q;
h q[0];
cx q[0], q[1];
