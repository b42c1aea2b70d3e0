#!/usr/bin/env python3
"""A loopback HTTPS server for tests/windows.sh and benches/bench.py --https: 127.0.0.1 on a
free port, printed on the first line of stdout; answers every GET with `{"status":"done","n":1}`,
in one write and without Nagle (else a delayed ACK, 40 ms, is what a benchmark measures).

    python3 tests/tls_server.py CERT KEY
"""
import http.server
import socket
import ssl
import sys

BODY = b'{"status":"done","n":1}'


class Ok(http.server.BaseHTTPRequestHandler):
    def setup(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def do_GET(self):
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        self.wfile.write(head + b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
