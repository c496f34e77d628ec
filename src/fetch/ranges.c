/* The download of a plan over HTTP (docs/fetch.md, "Ranged transfers"): `connections` workers on
   core's pool, each with ONE libcurl handle kept alive for all its transfers, take work units —
   a whole file (at most range_bytes: engine.c's mpk_fx_fetch_whole), or a piece of a larger file,
   whose pieces its owner takes in order (take(), below). A split file's first piece is its discovery ("Range: bytes=0-(k-1)"): a 206 whose
   total is the declared size releases the other pieces, a 200 means no ranges (that connection
   takes the whole file). Pieces are written where they belong in the staged file; the file's digest
   is computed over its contiguous prefix as it grows: the bytes that extend it in order are hashed
   from the receive buffer by their worker, the others by HASHERS more tasks (bytes read back from
   the staged file — the page cache; one hasher per file at a time; the transfer workers never
   stop reading to hash), so hashing overlaps the transfer and memory stays about connections x
   (1 MiB transfer buffer + 1 MiB scratch + libcurl's 256 KiB) + 1 MiB whatever the sizes. A failed piece is retried alone (mpk_src_fetch_range);
   a file that changes between pieces is started over once. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/hash.h"
#include "fetch/engine.h"
#include "fetch/source.h"

#define HASH_BUF ((size_t)1 << 20)
/* Hasher tasks: each takes the first file whose prefix can grow and nobody hashes, so two files'
   read-back hashing runs on two cores (one hasher was the bottleneck on loopback: MD5 of 2 GiB is
   about 3.6 s of one core, docs/PERFORMANCE.md section 11). */
#define HASHERS 2u

enum { P_PENDING, P_ACTIVE, P_DONE };
typedef struct piece {
  uint64_t start, end, got; /* [start, start + got) written */
  int state;
} piece;

enum { F_NEW, F_DISCOVER, F_RELEASED, F_FINAL, F_DONE };
typedef struct rfile {
  mpk_fx_item *it;
  bool ranged; /* split into pieces; else one whole-file unit */
  int phase;
  bool opened, md_ok;
  mpk_fx_staged sf;
  mpk_hasher md;
  uint64_t prefix; /* [0, prefix) hashed */
  uint64_t kept;   /* resumed from an earlier run, re-hashed */
  uint64_t present; /* bytes written (progress) */
  piece *pieces;
  size_t np, hp; /* hp: the piece holding `prefix` */
  unsigned active; /* pieces in transfer */
  bool hashing, serial, changed;
  unsigned owner; /* 1 + the worker taking its pieces in order; 0 none */
  unsigned restarts, downloads;
  char validator[256], old_validator[256];
  double t_end;
} rfile;

typedef struct sched {
  mpk_fx_run *r;
  mpk_pool *pool;
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* a unit may be free, a file done */
  pthread_cond_t hcv; /* bytes arrived: the hasher may extend a prefix */
  rfile *files;
  size_t n, first; /* files[first..] may still yield work */
  uint64_t range_bytes;
} sched;

static void fail_locked(sched *S, int rc, const mpk_error *e) {
  mpk_pool_lock(S->pool);
  if (!S->r->rc) {
    S->r->rc = rc;
    S->r->err = *e;
  }
  S->r->stop = true;
  mpk_pool_unlock(S->pool);
  pthread_cond_broadcast(&S->cv);
}

static bool stopping(sched *S) {
  mpk_pool_lock(S->pool);
  bool stop = S->r->stop;
  mpk_pool_unlock(S->pool);
  return stop;
}

/* Lay the pieces out over [from, size). */
static int layout(sched *S, rfile *f, uint64_t from) {
  uint64_t size = f->it->f->size, k = S->range_bytes;
  size_t np = (size_t)((size - from + k - 1) / k);
  piece *p = calloc(np ? np : 1, sizeof *p);
  if (!p) return -1;
  for (size_t i = 0; i < np; i++) {
    p[i].start = from + i * k;
    p[i].end = size - p[i].start < k ? size : p[i].start + k;
  }
  free(f->pieces);
  f->pieces = p;
  f->np = np;
  f->hp = 0;
  return 0;
}

/* Extend the hashed prefix over what the pieces have written (S->mu held; released while hashing).
   One hasher per file: a worker that finds another hashing leaves it to that one, which loops. */
static int advance_prefix(sched *S, rfile *f, uint8_t *buf, mpk_error *err) {
  if (f->hashing || f->changed || !f->md_ok) return 0;
  f->hashing = true;
  int rc = 0;
  bool record = false;
  while (f->hp < f->np) {
    piece *p = &f->pieces[f->hp];
    uint64_t avail = p->start + p->got;
    if (avail <= f->prefix) break;
    uint64_t from = f->prefix, n = avail - from;
    pthread_mutex_unlock(&S->mu);
    int hrc = mpk_hasher_update_fd(&f->md, f->sf.fd, from, n, buf, HASH_BUF, NULL, NULL, NULL);
    pthread_mutex_lock(&S->mu);
    if (hrc) {
      rc = mpk_fail(err, hrc == MPK_ENOMEM ? MPK_ENOMEM : MPK_EIO, f->sf.path, NULL,
                    "cannot read the staged bytes back to hash them: %s", errno ? strerror(errno) : "short");
      break;
    }
    if (f->changed) break;
    f->prefix = avail;
    if (f->prefix == p->end) {
      f->hp++;
      record = true;
    }
  }
  if (!rc && record && !f->changed) {
    /* The record says how far a resume may keep (best effort: without it, a resume starts over). */
    char val[256];
    snprintf(val, sizeof val, "%s", f->validator);
    int64_t px = (int64_t)f->prefix;
    pthread_mutex_unlock(&S->mu);
    mpk_fx_staged_record(&f->sf, val, 0, px, NULL);
    pthread_mutex_lock(&S->mu);
  }
  f->hashing = false;
  pthread_cond_broadcast(&S->cv); /* on_response may wait for it */
  return rc;
}

/* Bring the file back to nothing (S->mu held, no piece in transfer, nobody hashing). */
static int reset_file(sched *S, rfile *f, mpk_error *err) {
  if (ftruncate(f->sf.fd, 0) != 0)
    return mpk_fail(err, MPK_EIO, f->sf.path, NULL, "cannot truncate: %s", strerror(errno));
  mpk_hasher_restart(&f->md);
  f->prefix = f->kept = f->present = 0;
  f->validator[0] = '\0';
  f->changed = f->serial = false;
  f->owner = 0; /* the next discovery owns it */
  if (layout(S, f, 0)) return mpk_fail(err, MPK_ENOMEM, f->sf.path, NULL, "out of memory");
  mpk_fx_staged_record(&f->sf, "", 0, 0, NULL);
  mpk_fx_set_done(S->pool, S->r, f->it, 0);
  f->phase = F_NEW;
  pthread_cond_broadcast(&S->cv);
  return 0;
}

/* After a unit of `f` ended (S->mu held): the file changed (start over once), or is complete (the
   digest checked, synced, recorded). */
static void settle(sched *S, rfile *f) {
  mpk_error e;
  mpk_error_clear(&e);
  const mpk_fetch_file *file = f->it->f;
  if (f->active || f->hashing || f->phase == F_FINAL || f->phase == F_DONE) return;
  if (f->changed) {
    if (f->restarts >= 1) {
      char *url = mpk_src_url(S->r->src, file->path);
      mpk_fail(&e, MPK_EMISMATCH, url ? url : file->path, NULL,
               "the file changed on the server while being downloaded, again after starting it over (validator "
               "%s, then %s): refused",
               f->old_validator[0] ? f->old_validator : "none", f->validator[0] ? f->validator : "none");
      free(url);
      fail_locked(S, MPK_EMISMATCH, &e);
      return;
    }
    f->restarts++;
    mpk_pool_lock(S->pool);
    S->r->restarts++;
    mpk_pool_unlock(S->pool);
    snprintf(f->old_validator, sizeof f->old_validator, "%s", f->validator);
    int rc = reset_file(S, f, &e);
    if (rc) fail_locked(S, rc, &e);
    return;
  }
  if (f->prefix < file->size || f->phase != F_RELEASED) {
    pthread_cond_signal(&S->hcv); /* the hasher has the rest to do */
    return;
  }
  int rc;
  f->phase = F_FINAL;
  pthread_mutex_unlock(&S->mu);
  char hex[65] = "";
  bool good = mpk_hasher_final_hex(&f->md, hex) == 0 && strcmp(hex, file->digest) == 0;
  unsigned tries = S->r->o.digest_attempts ? S->r->o.digest_attempts : 3;
  const char *algo = mpk_fetch_algo_name(file->algo);
  rc = 0;
  (void)rc;
  if (good && fsync(f->sf.fd) != 0) {
    int en = errno;
    rc = mpk_fail(&e, MPK_EIO, f->sf.path, NULL, "cannot sync: %s%s", strerror(en),
                  en == ENOSPC || en == EDQUOT ? " (the disk is full)" : "");
  }
  if (good && !rc) rc = mpk_fx_staged_record(&f->sf, f->validator, file->size, -1, &e);
  if (good && !rc) {
    mpk_pool_lock(S->pool);
    S->r->reused += f->kept;
    mpk_pool_unlock(S->pool);
    mpk_fx_emit(S->pool, S->r, MPK_FETCH_FILE_DONE, f->it, NULL);
  }
  pthread_mutex_lock(&S->mu);
  if (good) {
    if (rc) fail_locked(S, rc, &e);
    f->phase = F_DONE;
    mpk_fx_staged_close(&f->sf);
    mpk_hasher_free(&f->md);
    f->md_ok = false;
    pthread_cond_broadcast(&S->cv);
    return;
  }
  /* Wrong bytes: all of them are fetched again (a resumed prefix may be what is stale). */
  f->downloads++;
  if (f->downloads >= tries) {
    mpk_fail(&e, MPK_EMISMATCH, file->path, NULL, "%s of the downloaded bytes is %s, %s says %s (%u download%s)",
             algo, hex, S->r->plan_name, file->digest, tries, tries == 1 ? "" : "s");
    fail_locked(S, MPK_EMISMATCH, &e);
    return;
  }
  char msg[200];
  snprintf(msg, sizeof msg, "%s %s, %s says %s", algo, hex, S->r->plan_name, file->digest);
  rc = reset_file(S, f, &e);
  if (rc) {
    fail_locked(S, rc, &e);
    return;
  }
  mpk_fx_emit(S->pool, S->r, MPK_FETCH_RETRY, f->it, msg);
}

/* ---------------------------------------------------------------- callbacks of one transfer */

typedef struct unit {
  sched *S;
  rfile *f;
  piece *p;
  uint8_t *buf;
  mpk_error err;
  int rc;
} unit;

static int on_response(void *ctx, const mpk_src_range *q) {
  unit *u = ctx;
  sched *S = u->S;
  rfile *f = u->f;
  pthread_mutex_lock(&S->mu);
  int stop = 0;
  while (q->whole && f->hashing) pthread_cond_wait(&S->cv, &S->mu); /* the hasher lets go of md first */
  if (f->phase == F_DISCOVER) {
    snprintf(f->validator, sizeof f->validator, "%s", q->validator);
    if (q->whole) {
      /* No ranges: this connection takes the whole file, from byte 0. */
      if (f->prefix || f->kept) {
        mpk_pool_lock(S->pool);
        S->r->restarts++;
        mpk_pool_unlock(S->pool);
      }
      mpk_hasher_restart(&f->md);
      f->prefix = f->kept = f->present = 0;
      if (ftruncate(f->sf.fd, 0) != 0 || layout(S, f, 0)) {
        mpk_fail(&u->err, MPK_EIO, f->sf.path, NULL, "cannot truncate: %s", strerror(errno));
        u->rc = MPK_EIO;
        stop = 1;
      } else {
        /* one piece, [0, size), in this worker's hands */
        f->np = 1;
        f->pieces[0].end = f->it->f->size;
        f->pieces[0].state = P_ACTIVE;
        u->p = &f->pieces[0];
      }
      mpk_fx_set_done(S->pool, S->r, f->it, 0);
    } else {
      f->serial = q->no_ranges;
    }
    mpk_fx_staged_record(&f->sf, f->validator, 0, (int64_t)f->prefix, NULL);
    f->phase = F_RELEASED; /* the other pieces may go */
    pthread_cond_broadcast(&S->cv);
  } else if (q->whole) { /* a later piece, single stream again after a failure (whole_ok) */
    mpk_hasher_restart(&f->md);
    f->prefix = f->present = 0;
    u->p->got = 0;
    f->hp = 0;
    mpk_fx_set_done(S->pool, S->r, f->it, 0);
  }
  if (f->changed) stop = 1;
  pthread_mutex_unlock(&S->mu);
  return stop || stopping(S);
}

static int on_data(void *ctx, uint64_t from, uint64_t to, const uint8_t *data) {
  unit *u = ctx;
  sched *S = u->S;
  rfile *f = u->f;
  pthread_mutex_lock(&S->mu);
  u->p->got = to - u->p->start;
  f->present += to - from;
  uint64_t present = f->present;
  bool at_prefix = f->hp < f->np && u->p == &f->pieces[f->hp];
  if (at_prefix && f->prefix == from && !f->hashing && !f->changed && f->md_ok) {
    /* These bytes extend the hashed prefix: hash them here, from memory (reading them back is
       the hasher's way for bytes that arrived ahead of the prefix; on loopback that read-back
       was the installer's largest cost beyond curl's and md5sum's, docs/PERFORMANCE.md). */
    f->hashing = true;
    pthread_mutex_unlock(&S->mu);
    mpk_hasher_update(&f->md, data, (size_t)(to - from));
    pthread_mutex_lock(&S->mu);
    bool record = false;
    if (!f->changed) {
      f->prefix = to;
      if (to == u->p->end) {
        f->hp++;
        record = true;
      }
    }
    if (record) {
      char val[256];
      snprintf(val, sizeof val, "%s", f->validator);
      pthread_mutex_unlock(&S->mu);
      mpk_fx_staged_record(&f->sf, val, 0, (int64_t)to, NULL);
      pthread_mutex_lock(&S->mu);
    }
    f->hashing = false;
    pthread_cond_broadcast(&S->cv); /* on_response may wait for it */
    if (f->hp < f->np) pthread_cond_signal(&S->hcv); /* later pieces may be in already */
  } else if (at_prefix) {
    pthread_cond_signal(&S->hcv); /* the prefix grew: the hasher reads it back */
  }
  bool stop = f->changed;
  mpk_fx_set_done(S->pool, S->r, f->it, present);
  pthread_mutex_unlock(&S->mu);
  return stop || stopping(S);
}

/* ---------------------------------------------------------------- units */

/* Open a split file for its discovery: the staged file, what an earlier run left (its recorded
   prefix, re-hashed), the pieces over the rest. Called without S->mu (the file is this worker's). */
static int open_file(sched *S, rfile *f, uint8_t *buf, mpk_error *err) {
  const mpk_fetch_file *file = f->it->f;
  int rc = mpk_fx_staged_open(S->pool, S->r, f->it, &f->sf, err);
  if (rc) return rc;
  f->opened = true;
  if (mpk_hasher_init(&f->md, file->algo)) return mpk_fail(err, MPK_ENOMEM, file->path, NULL, "out of memory");
  f->md_ok = true;
  uint64_t keep = mpk_fx_staged_resume(&f->sf, f->validator);
  if (ftruncate(f->sf.fd, (off_t)keep) != 0)
    return mpk_fail(err, MPK_EIO, f->sf.path, NULL, "cannot truncate: %s", strerror(errno));
  if (keep) {
    int hrc = mpk_hasher_update_fd(&f->md, f->sf.fd, 0, keep, buf, HASH_BUF, NULL, NULL, NULL);
    if (hrc)
      return mpk_fail(err, hrc == MPK_ENOMEM ? MPK_ENOMEM : MPK_EIO, f->sf.path, NULL,
                      "cannot re-read the partial download: %s", errno ? strerror(errno) : "short");
  } else {
    f->validator[0] = '\0';
  }
  f->prefix = f->kept = f->present = keep;
  if (layout(S, f, keep)) return mpk_fail(err, MPK_ENOMEM, file->path, NULL, "out of memory");
  if ((rc = mpk_fx_staged_record(&f->sf, f->validator, 0, (int64_t)keep, err))) return rc;
  f->t_end = mpk_src_now_ms() + (double)mpk_src_deadline_secs(S->r->src) * 1000.0;
  mpk_fx_set_done(S->pool, S->r, f->it, keep);
  mpk_fx_emit(S->pool, S->r, MPK_FETCH_FILE_START, f->it, NULL);
  return 0;
}

/* Transfer piece u->p of u->f (S->mu not held). */
static int run_piece(sched *S, unit *u, void *curl, bool discovery) {
  rfile *f = u->f;
  mpk_src_range q = {.rel = f->it->f->path,
                     .size = f->it->f->size,
                     .fd = f->sf.fd,
                     .from = u->p->start + u->p->got,
                     .to = u->p->end,
                     .whole_ok = discovery,
                     .t_end = f->t_end,
                     .curl = curl,
                     .on_response = on_response,
                     .on_data = on_data,
                     .ctx = u};
  pthread_mutex_lock(&S->mu);
  snprintf(q.validator, sizeof q.validator, "%s", f->validator);
  /* A single stream (no ranges) stays one: a retry may get the whole file again. */
  if (f->np == 1 && f->pieces[0].start == 0 && !discovery && f->pieces[0].end == q.size) q.whole_ok = true;
  pthread_mutex_unlock(&S->mu);
  int rc = mpk_src_fetch_range(S->r->src, &q, &u->err);
  mpk_pool_lock(S->pool);
  S->r->retries += q.retries;
  mpk_pool_unlock(S->pool);
  if (u->rc) return u->rc; /* a hashing failure in a callback */
  return rc;
}

/* The lowest pending piece of f if one may be taken now, else NULL. */
static piece *pending_piece(rfile *f) {
  if (f->phase != F_RELEASED || f->changed || (f->serial && f->active)) return NULL;
  for (size_t k = 0; k < f->np; k++)
    if (f->pieces[k].state == P_PENDING) return &f->pieces[k];
  return NULL;
}

static void take_piece(unit *u, rfile *f, piece *p) {
  p->state = P_ACTIVE;
  f->active++;
  u->f = f;
  u->p = p;
}

/* The next unit for worker `w` (S->mu held): 1 found, 0 none now (wait), -1 none ever (exit).
   A split file has an owner, the worker that discovered it, which takes its pieces in order: its
   bytes extend the hashed prefix as they arrive (hashed from memory, never read back) and one
   thread writes the file. Otherwise, in plan order, the first file not started (a whole file, or a
   discovery: the worker owns it), or a file without an owner. Only when every file has started
   do the idle workers take pieces of files others own — the lowest pending piece of the file with
   the most left (in order, so that the hashed prefix keeps up) — so that no connection idles at
   the tail. Measured (docs/PERFORMANCE.md,
   section 11): every worker on the pieces of the first files made several threads write into one
   file at once, whose inode lock they contend for (spinning: a third more CPU on loopback). */
static int take(sched *S, unsigned w, unit *u, bool *discovery, bool *whole) {
  while (S->first < S->n && S->files[S->first].phase == F_DONE) S->first++;
  for (size_t i = S->first; i < S->n; i++) { /* its own file first */
    rfile *f = &S->files[i];
    piece *p = f->ranged && f->owner == w + 1 ? pending_piece(f) : NULL;
    if (p) {
      take_piece(u, f, p);
      return 1;
    }
  }
  bool open_left = false;
  for (size_t i = S->first; i < S->n; i++) {
    rfile *f = &S->files[i];
    if (f->phase == F_DONE) continue;
    if (!f->ranged) {
      if (f->phase == F_NEW) {
        f->phase = F_RELEASED; /* taken: this worker finishes it */
        u->f = f;
        *whole = true;
        return 1;
      }
      continue;
    }
    open_left = true;
    if (f->changed) continue;
    if (f->phase == F_NEW) {
      f->phase = F_DISCOVER;
      f->owner = w + 1;
      f->active++;
      u->f = f;
      u->p = f->np ? &f->pieces[0] : NULL;
      if (u->p) u->p->state = P_ACTIVE;
      *discovery = true;
      return 1;
    }
    piece *p = f->owner == 0 ? pending_piece(f) : NULL;
    if (p) {
      f->owner = w + 1;
      take_piece(u, f, p);
      return 1;
    }
  }
  rfile *most = NULL; /* the tail: help the file with the most pending pieces */
  size_t most_left = 0;
  for (size_t i = S->first; i < S->n; i++) {
    rfile *f = &S->files[i];
    if (!f->ranged || !pending_piece(f)) continue;
    size_t left = 0;
    for (size_t k = 0; k < f->np; k++) left += f->pieces[k].state == P_PENDING;
    if (left > most_left) most = f, most_left = left;
  }
  if (most) {
    take_piece(u, most, pending_piece(most));
    return 1;
  }
  return open_left ? 0 : -1;
}

static void wait_a_little(pthread_cond_t *cv, pthread_mutex_t *mu) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 100000000L; /* a stop set by an event callback is seen within 0.1 s */
  if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  pthread_cond_timedwait(cv, mu, &ts);
}

/* A hasher task (HASHERS of them). It extends the prefix of every file whose pieces have written
   past it and that no other hasher holds, in plan order, so that the workers never stop reading their connections to hash; a file whose
   pieces are all in and hashed is then settled (its digest checked) here. */
static void hasher(sched *S, uint8_t *buf) {
  pthread_mutex_lock(&S->mu);
  for (;;) {
    if (stopping(S)) break;
    bool left = false, did = false;
    for (size_t i = S->first; i < S->n; i++) {
      rfile *f = &S->files[i];
      if (f->phase == F_DONE || !f->ranged) continue;
      left = true;
      if (f->hashing || f->changed || !f->md_ok || f->hp >= f->np) continue;
      piece *p = &f->pieces[f->hp];
      if (p->start + p->got <= f->prefix) continue;
      mpk_error e;
      int rc = advance_prefix(S, f, buf, &e);
      if (rc) fail_locked(S, rc, &e);
      if (!f->active) settle(S, f);
      did = true;
      break; /* from the first file again: plan order */
    }
    if (!left) break; /* whole files are the workers' to finish */
    if (!did) wait_a_little(&S->hcv, &S->mu);
  }
  pthread_mutex_unlock(&S->mu);
}

static int worker(mpk_pool *pool, void *ctx, size_t w, void *scratch, mpk_error *err) {
  (void)err;
  sched *S = ctx;
  if (w < HASHERS) {
    pthread_mutex_lock(&S->mu);
    S->pool = pool;
    pthread_mutex_unlock(&S->mu);
    hasher(S, scratch);
    return 0;
  }
  void *curl = mpk_src_handle_new();
  mpk_error e;
  if (!curl) {
    mpk_fail(&e, MPK_ENOMEM, NULL, NULL, "cannot create a libcurl handle");
    pthread_mutex_lock(&S->mu);
    S->pool = pool;
    fail_locked(S, MPK_ENOMEM, &e);
    pthread_mutex_unlock(&S->mu);
    return 0;
  }
  pthread_mutex_lock(&S->mu);
  S->pool = pool;
  for (;;) {
    if (stopping(S)) break;
    unit u = {.S = S, .buf = scratch};
    mpk_error_clear(&u.err);
    bool discovery = false, whole = false;
    int t = take(S, (unsigned)w, &u, &discovery, &whole);
    if (t < 0) break;
    if (t == 0) {
      wait_a_little(&S->cv, &S->mu);
      continue;
    }
    rfile *f = u.f;
    pthread_mutex_unlock(&S->mu);
    int rc = 0;
    if (whole) {
      rc = mpk_fx_fetch_whole(S->pool, S->r, f->it, curl, &u.err);
      pthread_mutex_lock(&S->mu);
      f->phase = F_DONE;
      if (rc) fail_locked(S, rc, &u.err);
      pthread_cond_broadcast(&S->cv);
      continue;
    }
    if (discovery && !f->opened) {
      rc = open_file(S, f, u.buf, &u.err); /* lays the pieces out: the first is this discovery */
      pthread_mutex_lock(&S->mu);
      u.p = !rc && f->np ? &f->pieces[0] : NULL;
      if (u.p) u.p->state = P_ACTIVE;
      pthread_mutex_unlock(&S->mu);
    }
    if (!rc && u.p) rc = run_piece(S, &u, curl, discovery);
    pthread_mutex_lock(&S->mu);
    if (discovery && f->phase == F_DISCOVER) { /* no response came (an error, or nothing to fetch) */
      f->phase = F_RELEASED;
      pthread_cond_broadcast(&S->cv);
    }
    f->active--;
    if (u.p) u.p->state = rc == 0 ? P_DONE : P_PENDING;
    if (rc == MPK_SRC_CHANGED || (rc && f->changed)) {
      f->changed = true; /* the pieces still in transfer stop; the last one out starts the file over */
      rc = 0;
    } else if (rc) {
      fail_locked(S, rc, &u.err);
      continue;
    }
    settle(S, f);
    pthread_cond_broadcast(&S->cv);
  }
  pthread_mutex_unlock(&S->mu);
  mpk_src_handle_free(curl);
  return 0;
}

void mpk_fx_download_http(mpk_fx_run *r) {
  sched S = {.r = r, .n = r->n};
  S.range_bytes = r->o.range_bytes ? r->o.range_bytes : MPK_FETCH_DEFAULT_RANGE_BYTES;
  mpk_error e;
  if (!(S.files = calloc(r->n ? r->n : 1, sizeof *S.files))) {
    r->rc = mpk_fail(&r->err, MPK_ENOMEM, NULL, NULL, "out of memory");
    return;
  }
  for (size_t i = 0; i < r->n; i++) {
    S.files[i].it = &r->items[i];
    S.files[i].ranged = r->items[i].f->size > S.range_bytes && S.range_bytes != UINT64_MAX;
    S.files[i].sf.fd = S.files[i].sf.dir = S.files[i].sf.pdir = -1;
  }
  pthread_mutex_init(&S.mu, NULL);
  pthread_cond_init(&S.cv, NULL);
  pthread_cond_init(&S.hcv, NULL);
  /* S.pool is set by the first worker: core's pool hands it to the tasks only. */
  /* Tasks 0..HASHERS-1 are the hashers (started first), the others the transfers. */
  unsigned tasks = r->connections + HASHERS;
  mpk_pool_run(tasks, &(mpk_pool_opts){.workers = tasks, .scratch_bytes = HASH_BUF}, worker, &S, NULL, &e);
  pthread_cond_destroy(&S.cv);
  pthread_cond_destroy(&S.hcv);
  pthread_mutex_destroy(&S.mu);
  for (size_t i = 0; i < r->n; i++) {
    if (S.files[i].opened) mpk_fx_staged_close(&S.files[i].sf);
    if (S.files[i].md_ok) mpk_hasher_free(&S.files[i].md);
    free(S.files[i].pieces);
  }
  free(S.files);
}
