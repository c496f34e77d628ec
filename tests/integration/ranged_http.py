#!/usr/bin/env python3
"""A python3-stdlib HTTP/1.1 server for what nginx cannot do to ranged transfers
(tests/integration/test_fetch_ranged.sh). usage: ranged_http.py ROOT PORTFILE LOG

Serves ROOT/<file> under /<mode>/<file>, honouring "Range: bytes=a-b" and If-Range, with an ETag.
Every request is logged to LOG as "<monotonic secs> <mode> <file> <range or -> <if-range or ->".
Modes:
  ok        ranges as any server
  delay0    a range starting at byte 0 waits 1.5 s before its answer (pieces complete out of order)
  drop      the first request for a range starting at ROOT/<file>.drop's offset sends half and closes
  norange   Range ignored: 200 and the whole file
  change    the first request is answered from <file>.a (ETag "a"), every later one from <file>
            (ETag "b"); If-Range "a" later gets a 200 with <file>
  flip      requests alternate between <file>.a (ETag "a") and <file> (ETag "b")
  bigtotal  206 whose Content-Range total is 1000 bytes more than the file
  retry     the first request gets 503 with "Retry-After: 1" (no body), later ones are served
  hub       every request is a 302 to /ok/<file>?sig=<n> (another URL each time: a CDN's signed one)
  nosplit   ranges served, but with "Accept-Ranges: none" (each piece answered after 0.2 s)
"""
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT, PORTFILE, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
lock = threading.Lock()
counts = {}
dropped = set()


def log(line):
    with lock, open(LOG, "a") as f:
        f.write(line + "\n")


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        parts = self.path.split("?", 1)[0].lstrip("/").split("/", 1)
        if len(parts) != 2:
            self.send_error(404)
            return
        mode, name = parts
        rng = self.headers.get("Range")
        ifr = self.headers.get("If-Range")
        with lock:
            k = counts[(mode, name)] = counts.get((mode, name), 0) + 1
        log("%.3f %s %s %s %s" % (time.monotonic(), mode, name, rng or "-", ifr or "-"))
        path = os.path.join(ROOT, name)
        etag = '"b"'
        if mode == "change" and k == 1 or mode == "flip" and k % 2 == 1:
            path, etag = path + ".a", '"a"'
        if not os.path.isfile(path):
            self.send_error(404)
            return
        with open(path, "rb") as f:
            data = f.read()
        if mode == "hub":
            self.send_response(302)
            self.send_header("Location", "/ok/%s?sig=%d" % (name, k))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "retry" and k == 1:
            self.send_response(503)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = len(data)
        start, end = 0, size - 1
        partial = False
        if rng and rng.startswith("bytes=") and mode != "norange" and (ifr is None or ifr == etag):
            a, _, b = rng[6:].partition("-")
            start = int(a)
            end = min(int(b), size - 1) if b else size - 1
            partial = True
        if partial and mode == "delay0" and start == 0:
            time.sleep(1.5)
        if mode == "nosplit":
            time.sleep(0.2)
        body = data[start : end + 1]
        self.send_response(206 if partial else 200)
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "none" if mode == "nosplit" else "bytes")
        if partial:
            total = size + 1000 if mode == "bigtotal" else size
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, total))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "drop":
            try:
                with open(path + ".drop") as f:
                    at = int(f.read())
            except OSError:
                at = -1
            with lock:
                first = start == at and (name, at) not in dropped
                if first:
                    dropped.add((name, at))
            if first:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
