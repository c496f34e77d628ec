/* The check report of a MobileTransformers package, for people and as JSON (schema:
   docs/check-report.md, second section). */
#include <jansson.h>
#include <string.h>

#include "cli.h"

#define WARNING "warning: "

static size_t count_warnings(const mpk_mt_report *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_notes; i++) n += strncmp(r->notes[i], WARNING, strlen(WARNING)) == 0;
  return n;
}

void mpk_cli_mt_report_text(FILE *out, const mpk_mt_report *r) {
  const mpk_mt_manifest *m = r->manifest;
  fprintf(out, "modelpkg check %s\n", r->dir);
  if (m) {
    fprintf(out, "  package:   MobileTransformers, %s (schemaVersion %s, minReaderVersion %s)\n",
            MPK_MT_MANIFEST_FILENAME, m->schema_version, m->min_reader_version);
    if (m->base_model_id) fprintf(out, "  model:     %s\n", m->base_model_id);
    fprintf(out, "  variants: ");
    for (size_t i = 0; i < m->n_variants; i++)
      fprintf(out, "%s %s%s", i ? "," : "", m->variants[i].id,
              strcmp(m->variants[i].id, m->default_variant) == 0 ? " (default)" : "");
    fprintf(out, "%s\n", m->n_variants ? "" : " none");
    fprintf(out, "  checked:   %s", r->all_variants ? "all variants" : r->n_variants ? "variant" : "no variant");
    for (size_t i = 0; i < r->n_variants && !r->all_variants; i++) fprintf(out, " %s", r->variants[i]);
    fputs(r->installed ? " (an installed model: docs/mt-installed.md)\n" : "\n", out);
    fprintf(out, "  files:     %zu listed file%s in scope, %zu present with their listed size", r->n_files,
            r->n_files == 1 ? "" : "s", r->n_files_sized);
    if (r->hashed)
      fprintf(out, ", %zu SHA-256 verified (%llu bytes hashed)\n", r->n_files_hashed,
              (unsigned long long)r->bytes_hashed);
    else
      fprintf(out, " (digests not computed)\n");
    if (r->hashed && r->n_files_merged)
      fprintf(out, "             %zu merged on device (tensor and sidecar: verified by the load gate against modelpkg's merge record)\n",
              r->n_files_merged);
    fprintf(out, "  tensors:   %zu merged-weight tensor%s, %zu verified by the load gate\n", r->n_tensors,
            r->n_tensors == 1 ? "" : "s", r->n_tensors_verified);
    if (r->n_unlisted)
      fprintf(out, "  unlisted:  %zu file%s on disk the manifest does not list\n", r->n_unlisted,
              r->n_unlisted == 1 ? "" : "s");
  } else {
    fprintf(out, "  package:   MobileTransformers, %s not loadable\n", MPK_MT_MANIFEST_FILENAME);
  }
  for (size_t i = 0; i < r->n_notes; i++)
    if (strncmp(r->notes[i], WARNING, strlen(WARNING)) != 0) fprintf(out, "  note: %s\n", r->notes[i]);
  for (size_t i = 0; i < r->n_notes; i++)
    if (strncmp(r->notes[i], WARNING, strlen(WARNING)) == 0) fprintf(out, "%s\n", r->notes[i]);
  for (size_t i = 0; i < r->n_problems; i++) {
    char line[2048];
    mpk_error_format(&r->problems[i], line, sizeof line);
    fprintf(out, "error: %s [%s]\n", line, mpk_code_name(r->problems[i].code));
  }
  size_t w = count_warnings(r);
  char warnings[64] = "";
  if (w) snprintf(warnings, sizeof warnings, " (%zu warning%s)", w, w == 1 ? "" : "s");
  if (r->n_problems)
    fprintf(out, "FAILED: %zu problem%s%s\n", r->n_problems, r->n_problems == 1 ? "" : "s", warnings);
  else
    fprintf(out, "OK: all checks hold%s\n", warnings);
}

int mpk_cli_mt_report_json(FILE *out, const mpk_mt_report *r) {
  const mpk_mt_manifest *m = r->manifest;
  json_t *root = mpk_cli_json_begin("check", r->n_problems == 0);
  json_object_set_new(root, "format", json_string("mobiletransformers"));
  json_object_set_new(root, "dir", json_string(r->dir));
  json_t *man = json_null();
  if (m) {
    json_t *ids = json_array();
    for (size_t i = 0; i < m->n_variants; i++) json_array_append_new(ids, json_string(m->variants[i].id));
    man = json_pack("{s:s, s:s, s:o, s:s, s:o}", "schemaVersion", m->schema_version, "minReaderVersion",
                    m->min_reader_version, "baseModelId", mpk_cli_json_str(m->base_model_id), "defaultVariant",
                    m->default_variant, "variants", ids);
  }
  json_object_set_new(root, "manifest", man);
  json_object_set_new(root, "checked",
                      json_pack("{s:o, s:b, s:b, s:b}", "variants", mpk_cli_json_strings(r->variants, r->n_variants),
                                "all_variants", r->all_variants, "hashed", r->hashed, "installed", r->installed));
  json_object_set_new(root, "files",
                      json_pack("{s:I, s:I, s:I, s:I, s:I}", "in_scope", (json_int_t)r->n_files, "sized",
                                (json_int_t)r->n_files_sized, "hashed", (json_int_t)r->n_files_hashed, "bytes_hashed",
                                (json_int_t)r->bytes_hashed, "merged", (json_int_t)r->n_files_merged));
  json_object_set_new(root, "tensors",
                      json_pack("{s:I, s:I}", "gated", (json_int_t)r->n_tensors, "verified",
                                (json_int_t)r->n_tensors_verified));
  json_object_set_new(root, "unlisted", mpk_cli_json_strings(r->unlisted, r->n_unlisted));
  json_object_set_new(root, "problems", mpk_cli_json_problems(r->problems, r->n_problems));
  json_object_set_new(root, "notes", mpk_cli_json_strings(r->notes, r->n_notes));
  return mpk_cli_json_print(out, root);
}
