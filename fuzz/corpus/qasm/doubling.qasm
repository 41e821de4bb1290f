OPENQASM 2.0;
include "qelib1.inc";
gate g0 a { x a; }
gate g1 a { g0 a; g0 a; }
gate g2 a { g1 a; g1 a; }
gate g3 a { g2 a; g2 a; }
gate e0 a { }
gate e1 a { e0 a; e0 a; }
qreg q[1];
g3 q[0];
e1 q[0];
