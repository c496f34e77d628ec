#!/usr/bin/env python3
"""A hostile server for the installer's HTTP bounds (python3 stdlib only): serves ROOT on
127.0.0.1:PORT, the package manifest normally and every other file as MODE says:

  body            the headers at once, then the body one byte per second
  headers         the status line, then the header bytes one per second
  manifest-headers  the same for the manifest (every other file normally)
  redirect-file   302 to file:///etc/passwd
  redirect-ftp    302 to ftp://127.0.0.1:PORT/x
  redirect-ok     302 to the same path under /real/ (relative Location), served normally there
  many-headers    200 with 150 header lines
  big-headers     200 with one 70 KiB header

usage: hostile_http.py ROOT PORT MODE LOG LIFETIME
Every request is logged to LOG as "<path> <mode or ok>". Each slow loop sends at most 120 bytes and
stops when the client goes away; the server stops by itself after LIFETIME seconds."""
import http.server, os, socket, sys, threading, time, urllib.parse

root, port, mode, log, lifetime = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
MANIFEST = "mobiletransformers_manifest.json"
lock = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def note(self, what):
        with lock, open(log, "a") as f:
            f.write("%s %s\n" % (self.path, what))

    def trickle(self, data):
        """One byte a second, at most 120 of them; stops when the client is gone."""
        for b in data[:120]:
            try:
                self.wfile.write(bytes([b]))
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, socket.error):
                return
            time.sleep(1)
        self.close_connection = True

    def serve_file(self, rel):
        path = os.path.realpath(os.path.join(root, rel))
        if not path.startswith(os.path.realpath(root) + os.sep) or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return open(path, "rb").read()

    def do_GET(self):
        rel = urllib.parse.unquote(self.path.lstrip("/"))
        if rel.startswith("real/"):
            rel = rel[5:]
            m = "ok"
        elif rel == MANIFEST:
            m = "headers" if mode == "manifest-headers" else "ok"
        else:
            m = "ok" if mode == "manifest-headers" else mode
        self.note(m)
        if m == "headers":
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            self.wfile.flush()
            self.trickle(b"X-Slow: " + b"a" * 200 + b"\r\n\r\n")
            return
        if m.startswith("redirect-"):
            to = {"redirect-file": "file:///etc/passwd", "redirect-ftp": "ftp://127.0.0.1:%d/x" % port,
                  "redirect-ok": "/real/" + urllib.parse.quote(rel)}[m]
            self.send_response(302)
            self.send_header("Location", to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = self.serve_file(rel)
        if data is None:
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        if m == "many-headers":
            for i in range(150):
                self.send_header("X-Filler-%d" % i, "x")
        if m == "big-headers":
            self.send_header("X-Big", "b" * (70 * 1024))
        self.end_headers()
        if m == "body":
            self.trickle(data)
            return
        self.wfile.write(data)


class S(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up (the point of these tests) is not an error here


srv = S(("127.0.0.1", port), H)
t = threading.Timer(lifetime, srv.shutdown)
t.daemon = True
t.start()
srv.serve_forever()
