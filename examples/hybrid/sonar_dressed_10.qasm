// The dressed Sonar classifier (WORKLOADS.md, job 3) as an OpenQASM 3 circuit for the
// `hybrid` job kind (examples/hybrid_sonar.toml), 10 wires: the encoder's sigmoid outputs `a`
// become RX angles (a - 1/2) * 2 pi; two entangling layers (ranges 1 and 3) of Rot on every
// wire then a ring of controlled Rot; Rot on wire 0. Weights w1, w2: [2, 10, 3] flattened;
// rot: 3. Rot(a, b, c) = RZ(c) RY(b) RZ(a), as in PennyLane.
OPENQASM 3.0;
include "stdgates.inc";
input array[float[64], 10] a;
input array[float[64], 60] w1;
input array[float[64], 60] w2;
input array[float[64], 3] rot;
qubit[10] q;
gate rotation(x, y, z) t { rz(x) t; ry(y) t; rz(z) t; }
gate crotation(x, y, z) c, t { ctrl @ rotation(x, y, z) c, t; }
rx((a[0] - 0.5) * 2 * pi) q[0];
rx((a[1] - 0.5) * 2 * pi) q[1];
rx((a[2] - 0.5) * 2 * pi) q[2];
rx((a[3] - 0.5) * 2 * pi) q[3];
rx((a[4] - 0.5) * 2 * pi) q[4];
rx((a[5] - 0.5) * 2 * pi) q[5];
rx((a[6] - 0.5) * 2 * pi) q[6];
rx((a[7] - 0.5) * 2 * pi) q[7];
rx((a[8] - 0.5) * 2 * pi) q[8];
rx((a[9] - 0.5) * 2 * pi) q[9];
// entangling layer w1, range 1
rotation(w1[0], w1[1], w1[2]) q[0];
rotation(w1[3], w1[4], w1[5]) q[1];
rotation(w1[6], w1[7], w1[8]) q[2];
rotation(w1[9], w1[10], w1[11]) q[3];
rotation(w1[12], w1[13], w1[14]) q[4];
rotation(w1[15], w1[16], w1[17]) q[5];
rotation(w1[18], w1[19], w1[20]) q[6];
rotation(w1[21], w1[22], w1[23]) q[7];
rotation(w1[24], w1[25], w1[26]) q[8];
rotation(w1[27], w1[28], w1[29]) q[9];
crotation(w1[30], w1[31], w1[32]) q[0], q[9];
crotation(w1[33], w1[34], w1[35]) q[9], q[8];
crotation(w1[36], w1[37], w1[38]) q[8], q[7];
crotation(w1[39], w1[40], w1[41]) q[7], q[6];
crotation(w1[42], w1[43], w1[44]) q[6], q[5];
crotation(w1[45], w1[46], w1[47]) q[5], q[4];
crotation(w1[48], w1[49], w1[50]) q[4], q[3];
crotation(w1[51], w1[52], w1[53]) q[3], q[2];
crotation(w1[54], w1[55], w1[56]) q[2], q[1];
crotation(w1[57], w1[58], w1[59]) q[1], q[0];
// entangling layer w2, range 3
rotation(w2[0], w2[1], w2[2]) q[0];
rotation(w2[3], w2[4], w2[5]) q[1];
rotation(w2[6], w2[7], w2[8]) q[2];
rotation(w2[9], w2[10], w2[11]) q[3];
rotation(w2[12], w2[13], w2[14]) q[4];
rotation(w2[15], w2[16], w2[17]) q[5];
rotation(w2[18], w2[19], w2[20]) q[6];
rotation(w2[21], w2[22], w2[23]) q[7];
rotation(w2[24], w2[25], w2[26]) q[8];
rotation(w2[27], w2[28], w2[29]) q[9];
crotation(w2[30], w2[31], w2[32]) q[0], q[7];
crotation(w2[33], w2[34], w2[35]) q[7], q[4];
crotation(w2[36], w2[37], w2[38]) q[4], q[1];
crotation(w2[39], w2[40], w2[41]) q[1], q[8];
crotation(w2[42], w2[43], w2[44]) q[8], q[5];
crotation(w2[45], w2[46], w2[47]) q[5], q[2];
crotation(w2[48], w2[49], w2[50]) q[2], q[9];
crotation(w2[51], w2[52], w2[53]) q[9], q[6];
crotation(w2[54], w2[55], w2[56]) q[6], q[3];
crotation(w2[57], w2[58], w2[59]) q[3], q[0];
rotation(rot[0], rot[1], rot[2]) q[0];
