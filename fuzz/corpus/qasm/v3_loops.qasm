include "stdgates.inc";
const int n = 3;
const array[float[64], 3] w = {0.5, -0.25, 2};
input array[angle[32], 3] t;
qubit[n] q;
for int i in [0:n - 1] { ry(w[i] * t[i]) q[i]; }
for uint i in [n - 1:-1:1] cx q[i], q[i - 1];
for float a in {0.1, 0.2} { const float b = a * 2; rz(b) q[0]; }
for i in w rx(i) q[1];
