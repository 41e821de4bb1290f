OPENQASM 2.0;
include "qelib1.inc";
qreg q[1];
rx(1e308) q[0];
rx(-((((1.5e-3))))) q[0];
rx(.5 + 2. - 3e+2*4E-1) q[0];
rx(2^-1^2) q[0];
rx(1/0.5 - sqrt(2)*exp(-1)) q[0];
/* block
comment */ ry(pi) q[0]; // line comment
