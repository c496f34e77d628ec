#!/usr/bin/env python3
"""A misbehaving model hub for the MLC install journeys (python3 stdlib only).

Serves ROOT/<model>/<file> at  /<mode>/<target>/<model>/resolve/main/<file>  on 127.0.0.1:PORT, as a
static server does (ETag, Range "bytes=A-B" / "bytes=A-" answered 206 with Content-Range, If-Range
honoured: a stale validator gets the whole file as 200) — except the file named <target> (a file
name, "-" for none), which is served as <mode> says (a ".tag" suffix on the mode is ignored: it only
gives a case its own counters). N counts the target's requests, each path its own:

  ok            normally
  truncate-N    the first N responses: honest headers, half the body, then the connection closed
  reset-N       the first N responses: half the body, then a TCP reset (SO_LINGER 0)
  short         always the file without its last 1000 bytes (an honest, short Content-Length)
  oversize      always 200 with the file and 1 MiB more (Content-Length says so); Range ignored
  infinite      always 200 without Content-Length: the file, then zeros without end (until the
                client goes away or 4 GiB were sent)
  slow          honest headers, then the body one byte every 0.25 s (at most 400 bytes)
  404           always 404
  5xx-N         the first N responses 500 (no Retry-After)
  503ra-N       the first N responses 503 with Retry-After: 1
  corrupt       always the file with every 4096th byte flipped (same size, same ETag: a wrong MD5)
  changed       normally until a 206 was sent for the target; from then on the file's bytes differ
                (every 4096th byte flipped) under another ETag (If-Range honoured: 200, the new bytes)
  etag-changed  as changed, but only the ETag changes (the bytes stay): a conforming client that
                sent If-Range gets the whole file as 200 and must restart, then completes
  changed-noifrange  as changed, but If-Range is ignored: later ranges are 206 of the NEW bytes
                (a broken CDN): only the digest can tell

Every request is logged to LOG as "<status> <mode> <path> <Range or -> <If-Range or ->" (status 0:
cut short on purpose). Stops by itself after LIFETIME seconds.
usage: mlc_fault_http.py ROOT PORT LOG LIFETIME
"""
import hashlib
import http.server
import os
import socket
import struct
import sys
import threading
import time
import urllib.parse

root, port, log, lifetime = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
lock = threading.Lock()
seen = {}       # path -> requests of the target so far
flipped = {}    # path -> True once a 206 was sent (changed modes)
cache = {}      # file path -> bytes


def load(path):
    with lock:
        if path not in cache:
            with open(path, "rb") as f:
                cache[path] = f.read()
        return cache[path]


def mutate(data):
    b = bytearray(data)
    for i in range(0, len(b), 4096):
        b[i] ^= 0xFF
    return bytes(b)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def note(self, status, mode):
        with lock, open(log, "a") as f:
            f.write("%d %s %s %s %s\n" % (status, mode, self.path, self.headers.get("Range") or "-",
                                          self.headers.get("If-Range") or "-"))

    def plain(self, status, mode, extra=()):
        self.note(status, mode)
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self):
        self.do_GET(head=True)

    def do_GET(self, head=False):
        parts = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/").split("/")
        # <mode>/<target>/<model>/resolve/main/<file...>
        if len(parts) < 6 or parts[3] != "resolve" or parts[4] != "main" or ".." in parts:
            return self.plain(404, "-")
        mode, target, model, rel = parts[0].split(".")[0], parts[1], parts[2], "/".join(parts[5:])
        path = os.path.join(root, model, rel)
        if not os.path.isfile(path):
            return self.plain(404, mode)
        key = self.path.split("?")[0]
        is_target = rel == target
        if not is_target:
            mode = "ok"
        with lock:
            n = seen.get(key, 0)
            seen[key] = n + 1
        base, _, count = mode.partition("-")
        count = int(count) if count.isdigit() else 0
        data = load(path)
        etag = '"%s"' % hashlib.md5(data).hexdigest()[:16]
        if mode in ("changed", "etag-changed", "changed-noifrange"):
            if flipped.get(key):
                etag = '"changed-%s"' % etag.strip('"')[:8]
                if mode != "etag-changed":
                    data = mutate(data)
        if mode == "404":
            return self.plain(404, mode)
        if base in ("5xx", "503ra") and n < count:
            return self.plain(500 if base == "5xx" else 503, mode,
                              [("Retry-After", "1")] if base == "503ra" else [])
        if mode == "corrupt":
            data = mutate(data)
        if mode == "short":
            data = data[:-1000]
        if mode == "oversize":
            return self.whole(data + b"\xAB" * (1 << 20), mode, etag, head)
        if mode == "infinite":
            return self.endless(data, mode, head)
        # Range / If-Range as a static server answers them
        rng, start, end = self.headers.get("Range"), 0, len(data) - 1
        ranged = False
        if rng and rng.startswith("bytes=") and "," not in rng:
            a, _, b = rng[6:].partition("-")
            if a.isdigit() and (b == "" or b.isdigit()):
                start, end = int(a), min(int(b), len(data) - 1) if b else len(data) - 1
                ranged = True
                ifr = self.headers.get("If-Range")
                if ifr and ifr != etag and mode != "changed-noifrange":
                    ranged, start, end = False, 0, len(data) - 1
                if ranged and start >= len(data):
                    self.note(416, mode)
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % len(data))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
        body = data[start:end + 1]
        status = 206 if ranged else 200
        cut = None
        if base in ("truncate", "reset") and n < count:
            cut = len(body) // 2
        self.note(0 if cut is not None else status, mode)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        if ranged:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))
        self.end_headers()
        if head:
            return
        try:
            if cut is not None:
                self.wfile.write(body[:cut])
                self.wfile.flush()
                if base == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            if mode == "slow":
                for i in range(min(len(body), 400)):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.25)
                self.close_connection = True
                return
            if ranged and mode in ("changed", "etag-changed", "changed-noifrange"):
                with lock:
                    flipped[key] = True  # the change happens while this range is on its way
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError, socket.error):
            self.close_connection = True

    def whole(self, data, mode, etag, head):
        self.note(200, mode)
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", etag)
        self.end_headers()
        if not head:
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError, socket.error):
                pass
        self.close_connection = True

    def endless(self, data, mode, head):
        self.note(200, mode)
        self.send_response(200)
        self.send_header("Connection", "close")
        self.end_headers()
        if head:
            return
        sent = 0
        zeros = b"\0" * 65536
        try:
            self.wfile.write(data)
            while sent < (4 << 30):
                self.wfile.write(zeros)
                sent += len(zeros)
        except (BrokenPipeError, ConnectionResetError, socket.error):
            pass
        self.close_connection = True


class S(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up (the point of these tests) is not an error here


srv = S(("127.0.0.1", port), H)
t = threading.Timer(lifetime, srv.shutdown)
t.daemon = True
t.start()
srv.serve_forever()
