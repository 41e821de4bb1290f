OPENQASM 3.0;
include "stdgates.inc";
input float[64] theta;
input angle[32] phi;
input array[float[64], 3] w;
const float[64] half = π / 2;
const int n = 3;
qubit[n] q;
bit[3] c;
gate layer(a, b) x, y { ry(a / 2 + b ** 2) x; cx x, y; rz(-sin(a) * cos(b) + arctan(b)) y; }
h q;
rx(theta) q[0];
ry(w[0] * w[1] + sin(phi)) q[1];
crz(theta ** 2) q[0], q[1];
layer(theta / 2, w[2]) q[1], q[2];
U(half, tau / 8, euler) q[2];
c = measure q;
