OPENQASM 2.0;
qreg q[1];
U(0,0,0) q[0]; [2J