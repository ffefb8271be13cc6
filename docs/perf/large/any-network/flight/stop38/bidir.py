#!/usr/bin/env python3
# bidir.py server PORT MIB | client HOST PORT MIB: one TCP connection carrying MIB each way at once
import socket, sys, threading, time
def run(c, mib):
    buf = b"x" * (1 << 20); got = [0]
    def rx():
        while got[0] < mib << 20:
            b = c.recv(1 << 20)
            if not b: break
            got[0] += len(b)
    t0 = time.time(); th = threading.Thread(target=rx); th.start()
    for _ in range(mib): c.sendall(buf)
    th.join(); dt = time.time() - t0
    print("each way %.0f Mbit/s (%.3f s)" % (got[0] * 8 / dt / 1e6, dt))
if sys.argv[1] == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(sys.argv[2]))); s.listen(1); c, _ = s.accept(); run(c, int(sys.argv[3]))
else:
    c = socket.create_connection((sys.argv[2], int(sys.argv[3]))); run(c, int(sys.argv[4]))
