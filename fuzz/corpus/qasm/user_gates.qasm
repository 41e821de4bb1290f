OPENQASM 2.0;
include "qelib1.inc";
gate layer(a, b) x, y { ry(a/2 + b^2) x; cx x, y; rz(-sin(a)*cos(b) + sqrt(4) - ln(exp(1))) y; }
gate twice(t) x, y { layer(t, -t) x, y; barrier x, y; layer(2*t, tan(t/4)) y, x; }
qreg a[1];
qreg b[2];
twice(0.3) a[0], b[1];
layer(1.1, 2) b[0], a[0];
U(0.1, 0.2, 0.3) b[1];
CX b[1], b[0];
barrier a, b;
