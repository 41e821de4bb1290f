OPENQASM 3.0;
include "stdgates.inc";
input float[64] theta;
input float[64] _w_0_;
input float[64] _w_1_;
input float[64] _w_2_;
input float[64] _w_3_;
input float[64] β;
gate rzz(p0) _gate_q_0, _gate_q_1 {
  cx _gate_q_0, _gate_q_1;
  rz(p0) _gate_q_1;
  cx _gate_q_0, _gate_q_1;
}
gate sxdg _gate_q_0 {
  s _gate_q_0;
  h _gate_q_0;
  s _gate_q_0;
}
gate ryy(p0) _gate_q_0, _gate_q_1 {
  sxdg _gate_q_0;
  sxdg _gate_q_1;
  cx _gate_q_0, _gate_q_1;
  rz(p0) _gate_q_1;
  cx _gate_q_0, _gate_q_1;
  sx _gate_q_0;
  sx _gate_q_1;
}
bit[3] meas;
qubit[3] q;
h q[0];
h q[1];
h q[2];
rx(theta) q[0];
ry(0.5 + _w_0_*_w_1_) q[1];
rz(2*β) q[2];
cx q[0], q[1];
crz(_w_2_) q[1], q[2];
rzz(-_w_3_ + theta) q[0], q[2];
U(_w_0_, β, 0.3) q[1];
cp(_w_1_**2) q[2], q[0];
ryy(β) q[0], q[1];
sx q[2];
sdg q[0];
ch q[0], q[2];
swap q[1], q[2];
barrier q[0], q[1], q[2];
meas[0] = measure q[0];
meas[1] = measure q[1];
meas[2] = measure q[2];
