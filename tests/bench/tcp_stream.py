#!/usr/bin/env python3
"""tcp_stream.py -- one TCP stream, for link_duplex.sh (no MPI in the way).

  tcp_stream.py server PORT            receive until the peer closes; print the rate
  tcp_stream.py client HOST PORT MIB   send MIB mebibytes, close, wait for the server
"""
import socket
import sys
import time


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "server":
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", int(sys.argv[2])))
        s.listen(1)
        c, _ = s.accept()
        n, t0 = 0, None
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            if t0 is None:
                t0 = time.time()
            n += len(b)
        dt = time.time() - t0
        print("received %.1f MB in %.3f s = %.0f Mbit/s" % (n / 1e6, dt, n * 8 / dt / 1e6))
        c.close()
    elif len(sys.argv) == 5 and sys.argv[1] == "client":
        c = socket.create_connection((sys.argv[2], int(sys.argv[3])))
        buf = b"x" * (1 << 20)
        for _ in range(int(sys.argv[4])):
            c.sendall(buf)
        c.shutdown(socket.SHUT_WR)
        c.recv(1)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
