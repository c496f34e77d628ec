#!/usr/bin/python3
"""A live reader of an installed model, as a runtime holds one (issue 18): it takes the load gate's
lock — flock(LOCK_SH) on the inference DIRECTORY, exactly what mpk_mt_load_gate holds while its
report lives — opens every .bin tensor, says it is ready, and waits. When told to go on, it reads
every tensor through the descriptors it opened at the start and writes their SHA-256: what a runtime
that loaded the model before an update still sees after it; then again by name beneath the directory
it holds: what a runtime that opens its tensors after the gate gets.

usage: /usr/bin/python3 hold_gate.py INFERENCE_DIR READY_FILE GO_FILE OUT_FILE [TIMEOUT_S]
  READY_FILE  created once the lock is held and the tensors are open (it holds this pid)
  GO_FILE     polled; when it exists, the tensors are read and OUT_FILE written ("<sha256>  <name>"),
              then each is opened again by name beneath the held directory (openat), as a runtime
              opening its tensors after the gate does, into OUT_FILE.late
exit 0 done, 1 the lock could not be taken (a writer holds the directory), 3 timed out waiting.
"""
import fcntl
import hashlib
import os
import sys
import time


def main():
    inf, ready, go, out = sys.argv[1:5]
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 120
    dfd = os.open(inf, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(dfd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        print("hold_gate: %s: the lock is taken: %s" % (inf, e), file=sys.stderr)
        return 1
    files = {n: os.open(n, os.O_RDONLY, dir_fd=dfd) for n in sorted(os.listdir(dfd)) if n.endswith(".bin")}
    with open(ready, "w") as f:
        f.write("%d\n" % os.getpid())
    deadline = time.time() + timeout
    while not os.path.exists(go):
        if time.time() > deadline:
            print("hold_gate: timed out waiting for %s" % go, file=sys.stderr)
            return 3
        time.sleep(0.02)
    with open(out, "w") as f:
        for name, fd in files.items():
            f.write("%s  %s\n" % (digest(fd), name))
    # A runtime that opens its tensors only after the gate opens them by name beneath the directory
    # it holds (openat on the held descriptor): those names must still hold what was verified.
    with open(out + ".late", "w") as f:
        for name in files:
            try:
                fd = os.open(name, os.O_RDONLY, dir_fd=dfd)
            except OSError as e:
                f.write("(%s)  %s\n" % (e.strerror, name))
                continue
            f.write("%s  %s\n" % (digest(fd), name))
            os.close(fd)
    return 0


def digest(fd):
    h = hashlib.sha256()
    off = 0
    while True:
        chunk = os.pread(fd, 1 << 20, off)
        if not chunk:
            return h.hexdigest()
        h.update(chunk)
        off += len(chunk)


if __name__ == "__main__":
    sys.exit(main())
