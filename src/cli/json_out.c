/* Pieces every --json report shares. */
#include <stdarg.h>
#include <string.h>

#include "cli.h"

json_t *mpk_cli_json_str(const char *s) { return s ? json_string(s) : json_null(); }

json_t *mpk_cli_json_strings(const char *const *list, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_string(list[i]));
  return a;
}

json_t *mpk_cli_json_problems(const mpk_error *problems, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++) {
    const mpk_error *e = &problems[i];
    json_t *p = json_pack("{s:s, s:s, s:s, s:s}", "code", mpk_code_name(e->code), "file", e->file, "pointer",
                          e->pointer, "message", e->message);
    if (p) json_object_set_new(p, "offset", e->offset >= 0 ? json_integer(e->offset) : json_null());
    json_array_append_new(a, p);
  }
  return a;
}

int mpk_cli_json_print(FILE *out, json_t *root) {
  int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  fputc('\n', out);
  json_decref(root);
  return rc;
}

json_t *mpk_cli_json_begin(const char *command, bool ok) {
  json_t *root = json_object();
  json_object_set_new(root, "modelpkg_version", json_string(mpk_version()));
  json_object_set_new(root, "command", json_string(command));
  json_object_set_new(root, "ok", json_boolean(ok));
  return root;
}

int mpk_cli_json_end(json_t *root, const mpk_error *problems, size_t n_problems, const char *const *notes,
                     size_t n_notes) {
  /* ok is true exactly when there is no problem, whatever the caller said at begin */
  if (n_problems) json_object_set_new(root, "ok", json_false());
  json_object_set_new(root, "problems", mpk_cli_json_problems(problems, n_problems));
  json_object_set_new(root, "notes", mpk_cli_json_strings(notes, n_notes));
  return mpk_cli_json_print(stdout, root);
}

int mpk_cli_json_refuse(const char *command, const char *const *keys, const mpk_error *err) {
  json_t *root = mpk_cli_json_begin(command, false);
  for (size_t i = 0; keys && keys[i]; i++) json_object_set_new(root, keys[i], json_null());
  return mpk_cli_json_end(root, err, err ? 1 : 0, NULL, 0);
}

int mpk_cli_usage_json(bool json, const char *cmd, const char *const *keys, const char *fmt, ...) {
  char msg[sizeof ((mpk_error *)0)->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (json) {
    mpk_error e;
    mpk_error_clear(&e);
    snprintf(e.message, sizeof e.message, "usage: %.500s", msg);
    e.code = MPK_EINVAL;
    mpk_cli_json_refuse(cmd, keys, &e);
  }
  return mpk_cli_usage_error(cmd, "%s", msg);
}
