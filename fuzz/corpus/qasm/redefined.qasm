OPENQASM 2.0;
include "qelib1.inc";
gate cphase(a) c, t { u1(a/2) c; cx c, t; u1(-a/2) t; cx c, t; u1(a/2) t; }
gate cu c, t { cphase(3*pi/8) c, t; }
gate p(l) a { rx(l) a; }
opaque magic(a) q;
qreg q[3];
creg c[3];
x q[2];
h q[0]; h q[1];
cu q[0], q[2];
cu q[1], q[2]; cu q[1], q[2];
p(0.3) q[0];
measure q[0] -> c[0];
