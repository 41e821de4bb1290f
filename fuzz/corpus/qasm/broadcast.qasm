OPENQASM 2.0;
include "qelib1.inc";
qreg r[1];
qreg q[2];
qreg s[2];
x q[0];
cx q, s;
cx r[0], s;
cx r, s;
