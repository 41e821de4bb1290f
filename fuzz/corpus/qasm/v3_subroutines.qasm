OPENQASM 3.0;
include "stdgates.inc";
input float x;
def enc(qubit a, qubit[2] r, angle s, int k) {
  for int i in [1:k] { ry(s * i) a; cx a, r[i - 1]; }
  return;
}
qubit[3] q;
enc(q[0], q[1:2], x, 2);
bool on = true;
gate global_phase(p0) {
}
global_phase(x * on) ;
ctrl @ global_phase(0.5) q[2];
gphase(-x);
