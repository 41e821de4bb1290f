// The QCNN of job 2 (WORKLOADS.md; TensorFlow Quantum's cluster-state tutorial)
// as an OpenQASM 3 circuit for the `hybrid` job kind (examples/hybrid_qcnn.toml),
// 8 qubits: the cluster state, the example's excitation (x[q] = theta on the
// excited qubit, 0 elsewhere), one convolution (15 shared weights) over Cirq's
// pairs and one pooling (6 shared weights) from qubits 0-3 into 4-7. Angles are
// pi * weight, as in the tutorial's Cirq symbols. Ising gates are decomposed,
// since stdgates.inc has none.
OPENQASM 3.0;
include "stdgates.inc";
input array[float[64], 8] x;
input array[float[64], 15] conv;
input array[float[64], 6] pool;
qubit[8] q;

gate zz(t) a, b { cx a, b; rz(t) b; cx a, b; }
gate xx(t) a, b { h a; h b; zz(t) a, b; h a; h b; }
gate yy(t) a, b { rx(pi / 2) a; rx(pi / 2) b; zz(t) a, b; rx(-pi / 2) a; rx(-pi / 2) b; }
gate one(s0, s1, s2) t { rx(pi * s0) t; ry(pi * s1) t; rz(pi * s2) t; }
gate two(s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14) a, b {
  one(s0, s1, s2) a;
  one(s3, s4, s5) b;
  zz(pi * s6) a, b;
  yy(pi * s7) a, b;
  xx(pi * s8) a, b;
  one(s9, s10, s11) a;
  one(s12, s13, s14) b;
}
// Pooling: the sink's basis selector, CX from the source, the selector undone.
gate pool2(p0, p1, p2, p3, p4, p5) source, sink {
  one(p0, p1, p2) sink;
  one(p3, p4, p5) source;
  cx source, sink;
  rz(-pi * p2) sink;
  ry(-pi * p1) sink;
  rx(-pi * p0) sink;
}

// The cluster state, then the excitation.
h q;
cz q[0], q[1]; cz q[1], q[2]; cz q[2], q[3]; cz q[3], q[4];
cz q[4], q[5]; cz q[5], q[6]; cz q[6], q[7]; cz q[7], q[0];
rx(x[0]) q[0];
rx(x[1]) q[1];
rx(x[2]) q[2];
rx(x[3]) q[3];
rx(x[4]) q[4];
rx(x[5]) q[5];
rx(x[6]) q[6];
rx(x[7]) q[7];

// Convolution: Cirq's pairs (0,1), (2,3), ..., then (1,2), (3,4), ..., (7,0).
two(conv[0], conv[1], conv[2], conv[3], conv[4], conv[5], conv[6], conv[7], conv[8], conv[9], conv[10], conv[11], conv[12], conv[13], conv[14]) q[0], q[1];
two(conv[0], conv[1], conv[2], conv[3], conv[4], conv[5], conv[6], conv[7], conv[8], conv[9], conv[10], conv[11], conv[12], conv[13], conv[14]) q[2], q[3];
two(conv[0], conv[1], conv[2], conv[3], conv[4], conv[5], conv[6], conv[7], conv[8], conv[9], conv[10], conv[11], conv[12], conv[13], conv[14]) q[4], q[5];
two(conv[0], conv[1], conv[2], conv[3], conv[4], conv[5], conv[6], conv[7], conv[8], conv[9], conv[10], conv[11], conv[12], conv[13], conv[14]) q[6], q[7];
two(conv[0], conv[1], conv[2], conv[3], conv[4], conv[5], conv[6], conv[7], conv[8], conv[9], conv[10], conv[11], conv[12], conv[13], conv[14]) q[1], q[2];
two(conv[0], conv[1], conv[2], conv[3], conv[4], conv[5], conv[6], conv[7], conv[8], conv[9], conv[10], conv[11], conv[12], conv[13], conv[14]) q[3], q[4];
two(conv[0], conv[1], conv[2], conv[3], conv[4], conv[5], conv[6], conv[7], conv[8], conv[9], conv[10], conv[11], conv[12], conv[13], conv[14]) q[5], q[6];
two(conv[0], conv[1], conv[2], conv[3], conv[4], conv[5], conv[6], conv[7], conv[8], conv[9], conv[10], conv[11], conv[12], conv[13], conv[14]) q[7], q[0];

// Pooling: sources 0-3 into sinks 4-7; the readouts are Z on 4-7.
pool2(pool[0], pool[1], pool[2], pool[3], pool[4], pool[5]) q[0], q[4];
pool2(pool[0], pool[1], pool[2], pool[3], pool[4], pool[5]) q[1], q[5];
pool2(pool[0], pool[1], pool[2], pool[3], pool[4], pool[5]) q[2], q[6];
pool2(pool[0], pool[1], pool[2], pool[3], pool[4], pool[5]) q[3], q[7];
