#!/usr/bin/env python3
"""A misbehaving static server for the install tests (what nginx cannot do): serves ROOT on
127.0.0.1:PORT; the first DROPS requests of each path send the headers and half the body, then
close the connection; later requests are served whole, or from a "Range: bytes=K-" as a 206 —
unless IGNORE_RANGE is 1: then every response is a 200 with the whole file.
usage: flaky_http.py ROOT PORT DROPS LOG LIFETIME [IGNORE_RANGE]
Every request is logged to LOG as "<status> <path> <range or ->". Stops after LIFETIME seconds."""
import http.server, os, sys, threading, urllib.parse

root, port, drops, log, lifetime = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
ignore_range = len(sys.argv) > 6 and sys.argv[6] == "1"
seen = {}
lock = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def note(self, status, rng):
        with lock, open(log, "a") as f:
            f.write("%d %s %s\n" % (status, self.path, rng or "-"))

    def do_GET(self):
        rel = urllib.parse.unquote(self.path.lstrip("/"))
        path = os.path.realpath(os.path.join(root, rel))
        if not path.startswith(os.path.realpath(root) + os.sep) or not os.path.isfile(path):
            self.note(404, None)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = open(path, "rb").read()
        with lock:
            n = seen.get(rel, 0)
            seen[rel] = n + 1
        rng = self.headers.get("Range")
        start = 0
        if rng and rng.startswith("bytes=") and rng.endswith("-") and not ignore_range:
            start = int(rng[6:-1])
        body = data[start:]
        status = 206 if start else 200
        self.note(status if n >= drops else 0, rng)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.end_headers()
        if n < drops:  # cut the transfer: half the body, then the connection goes away
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
threading.Timer(lifetime, srv.shutdown).start()
srv.serve_forever()
