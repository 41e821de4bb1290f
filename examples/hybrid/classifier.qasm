// A 4-qubit variational classifier for the `hybrid` job kind
// (examples/hybrid_breast_cancer.toml): the encoder's 4 outputs (tanh, in
// (-1, 1)) are angle-encoded, then two layers of trainable RY/RZ rotations
// with a CX ring. `x` is fed per example, `w` is trained.
OPENQASM 3.0;
include "stdgates.inc";
input array[float[64], 4] x;
input array[float[64], 16] w;
qubit[4] q;
gate layer(a, b, c, d, e, f, g, h) q0, q1, q2, q3 {
  ry(a) q0; ry(b) q1; ry(c) q2; ry(d) q3;
  rz(e) q0; rz(f) q1; rz(g) q2; rz(h) q3;
  cx q0, q1; cx q1, q2; cx q2, q3; cx q3, q0;
}
h q;
ry(pi * x[0]) q[0];
ry(pi * x[1]) q[1];
ry(pi * x[2]) q[2];
ry(pi * x[3]) q[3];
layer(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]) q[0], q[1], q[2], q[3];
layer(w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]) q[0], q[1], q[2], q[3];
