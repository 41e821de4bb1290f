OPENQASM 3;
include "stdgates.inc";
qubit[4] q;
gate g(a) x, y { rx(a) x; cx x, y; ry(2 * a) y; gphase(a / 3); }
h q;
ctrl @ x q[0], q[1];
negctrl @ x q[0], q[1];
ctrl(000000000000792300367) @ x q[0], q[1}; cuÿÿÿÿÿÿ)
