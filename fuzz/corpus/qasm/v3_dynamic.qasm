OPENQASM 3.0;
include "stdgates.inc";
qubit[3] q;
bit[2] c;
h q[0];
c[0] = measure q[0];
if (c[0]) x q[1];
reset q[0];
ry(0.3) q[2];
c[1] = measure q[2];
if (c == 2) { h q[0]; cx q[0], q[1]; } else { z q[1]; }
for int i in [0:2] {
  c[0] = measure q[1];
  if (!c[0]) h q[1];
}
