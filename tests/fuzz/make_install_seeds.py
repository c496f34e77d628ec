#!/usr/bin/env python3
"""Seed corpora of fuzz_install_records and fuzz_http_headers (stdlib only): the documents the
installer writes into its cache as it writes them, their edge cases, and HTTP response headers
(plain, partial, redirects to allowed and refused schemes, limits).

Run from the repository root: python3 tests/fuzz/make_install_seeds.py
The corpora are committed; rerun this only when the formats change."""
import hashlib
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SHA = "3f0a377ba0a4a460ecb616f6507ce0d8cfa3e704025d4fda3ed0c5ca05468728"


def write(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


def doc(v):
    return json.dumps(v, indent=2, sort_keys=True) + "\n"


# fuzz_install_records: one byte (the staged size / 8), then the document
records = [
    doc({"installId": "0123456789abcdef0123456789abcdef"}),  # commit.json
    doc({"installId": "0123456789abcdef0123456789abcdef", "repoId": "org/name", "variant": "cpu-int4",
         "features": ["inference"], "installedAt": "2026-01-01T00:00:00Z", "source": "https://example.org/pkg",
         "files": 12, "bytes": 2700, "installer": "modelpkg 0.1.0"}),  # modelpkg_install.json
    doc({"path": "variants/cpu-int4/inference/model.onnx", "size": 1000, "sha256": SHA, "validator": "\"etag-1\"",
         "source": "https://example.org/pkg", "verified": 0}),  # a staging record
    doc({"path": "x", "size": 1000, "sha256": SHA, "validator": "", "source": "http://elsewhere/", "verified": 1000}),
    doc({"path": "x", "size": 999, "sha256": SHA, "validator": "v", "source": "https://example.org/pkg", "verified": 0}),
    doc({"path": "x", "size": 1000.0, "sha256": SHA}),
    doc({"path": "x", "size": -1, "sha256": SHA}),
    doc({"installId": "a" * 64, "repoId": "r" * 100}),
    doc({"installId": "a" * 65}),
    doc({"installId": 5, "repoId": None}),
    "[]", "", "{", "{\"installId\": \"\\u0000\"}", "\ufeff{\"installId\":\"x\"}",
]
for i, r in enumerate(records):
    for pick in (0, 100, 125, 200):
        write("fuzz_install_records", bytes([pick]) + r.encode("utf-8"))

# fuzz_http_headers: response header lines as libcurl passes them
H = [
    "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"abc\"\r\nLast-Modified: Mon, 01 Jan 2026 00:00:00 GMT\r\n\r\n",
    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 100-999/1000\r\nContent-Length: 900\r\n\r\n",
    "HTTP/1.1 302 Found\r\nLocation: https://cdn.example.org/x\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 302 Found\r\nLocation: http://cdn.example.org/x\r\n\r\n",
    "HTTP/1.1 301 Moved\r\nLocation: file:///etc/passwd\r\n\r\n",
    "HTTP/1.1 307 Temporary\r\nLocation: ftp://127.0.0.1/x\r\n\r\n",
    "HTTP/1.1 308 Permanent\r\nLocation: /real/x\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
    "HTTP/2 200\r\ncontent-length: 12\r\netag: W/\"x\"\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: -5\r\nContent-Range: bytes -1-5/6\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
    "HTTP/1.1 302 Found\r\nLocation:  \t//other.example.org/x \r\n\r\n",
    "HTTP/1.1 302 Found\r\nLocation: HTTPS://x\r\n\r\n",
    "HTTP/1.1 302 Found\r\nLocation: javascript:alert(1)\r\n\r\n",
    "HTTP/1.1 200 OK\r\n" + "X-A: b\r\n" * 101 + "\r\n",
    "HTTP/1.1 200 OK\r\nX-Big: " + "b" * 70000 + "\r\n\r\n",
    "HTTP/1.1 302 Found\r\nLocation: /a\r\n\r\n" * 9,
    "HTTP/1.1 302 Found\r\nLocation: " + "l" * 3000 + "\r\n\r\n",
    "no status line: value\r\n\r\n",
    "HTTP/1.1 2x0 OK\r\n\r\n",
]
for h in H:
    write("fuzz_http_headers", h)
