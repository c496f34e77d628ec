/* The problems and notes a check collects instead of stopping at the first failure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static void publish(mpk_findings *f) {
  if (f->view_problems) *f->view_problems = f->problems;
  if (f->view_n_problems) *f->view_n_problems = f->n_problems;
  if (f->view_notes) *f->view_notes = (const char *const *)f->notes;
  if (f->view_n_notes) *f->view_n_notes = f->n_notes;
}

void mpk_findings_publish(mpk_findings *f, const mpk_error **problems, size_t *n_problems, const char *const **notes,
                          size_t *n_notes) {
  f->view_problems = problems;
  f->view_n_problems = n_problems;
  f->view_notes = notes;
  f->view_n_notes = n_notes;
  publish(f);
}

void mpk_findings_problem_in(mpk_findings *f, const mpk_error *e, const mpk_findings_doc *docs) {
  for (size_t i = 0; docs && docs[i].name; i++)
    if (docs[i].file && strcmp(e->file, docs[i].name) == 0) {
      mpk_error copy = *e;
      char ptr[sizeof copy.pointer + 64];
      snprintf(ptr, sizeof ptr, "%s%s", docs[i].pointer_prefix ? docs[i].pointer_prefix : "", e->pointer);
      snprintf(copy.pointer, sizeof copy.pointer, "%.*s", (int)sizeof copy.pointer - 1, ptr);
      snprintf(copy.file, sizeof copy.file, "%s", docs[i].file);
      mpk_findings_problem(f, &copy);
      return;
    }
  mpk_findings_problem(f, e);
}

void mpk_findings_problem(mpk_findings *f, const mpk_error *e) {
  if (f->n_problems == f->cap_problems) {
    size_t cap = f->cap_problems ? f->cap_problems * 2 : 8;
    mpk_error *np = realloc(f->problems, cap * sizeof *np);
    if (!np) {
      f->oom = true; /* the caller still fails: oom counts as a problem */
      return;
    }
    f->problems = np;
    f->cap_problems = cap;
  }
  f->problems[f->n_problems++] = *e;
  publish(f);
}

void mpk_findings_fail(mpk_findings *f, int code, const char *file, const char *pointer, const char *fmt, ...) {
  mpk_error e;
  mpk_error_clear(&e);
  va_list ap;
  va_start(ap, fmt);
  mpk_vfail(&e, code, file, pointer, fmt, ap);
  va_end(ap);
  mpk_findings_problem(f, &e);
}

void mpk_findings_note(mpk_findings *f, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  char **nn = realloc(f->notes, (f->n_notes + 1) * sizeof *nn);
  if (!nn) return;
  f->notes = nn;
  if ((nn[f->n_notes] = strdup(line))) f->n_notes++;
  publish(f);
}

void mpk_findings_free(mpk_findings *f) {
  free(f->problems);
  for (size_t i = 0; i < f->n_notes; i++) free(f->notes[i]);
  free(f->notes);
  memset(f, 0, sizeof *f);
}
