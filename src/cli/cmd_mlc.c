/* modelpkg mlc id DIR | modelpkg mlc metadata LIB */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char id_about[] =
    "Print the interface_id recomputed from the tasks of DIR's mlc-model-manifest.json (or of the\n"
    "manifest file itself): defaults filled, canonical JSON, SHA-256. Exit 1 when it differs from the\n"
    "declared one (noted on stderr). A package without a manifest is legacy: it declares no tasks.\n";
static const char metadata_about[] =
    "Print the _metadata JSON embedded in a compiled model library (.wasm, .so, .dylib, .dll, a .tar -\n"
    "gzip'd too - or ar archive of objects), byte-exact: the string the VM function _metadata returns,\n"
    "else found by a scan of the library's bytes. With --json, also where it was found (the archive\n"
    "member, the offset of the stored string - its u64 length - and whether a scan found it).\n";
static const char more[] = "exit status: 0 ok, 1 refused (the reason on stderr), 2 usage error\n";

static const char *const id_keys[] = {"manifest", "interface_id", "declared_interface_id", NULL};

static int cmd_id(const char *arg, bool json) {
  bool dir = mpk_cli_is_dir(arg);
  char *path = dir ? mpk_cli_path_join(arg, MPK_MLC_MANIFEST_FILENAME) : strdup(arg);
  if (!path) return MPK_EXIT_FAIL;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mapped m;
  mpk_mlc_package *pkg = NULL;
  char id[MPK_SHA256_ID_SIZE];
  int rc;
  enum mpk_package_kind kind = MPK_PACKAGE_MLC;
  if (dir && mpk_package_kind(arg, &kind, NULL)) kind = MPK_PACKAGE_MLC; /* both manifests: the MLC one is read */
  if (kind != MPK_PACKAGE_MLC) /* absent, not merely unreadable: a legacy package */
    rc = mpk_fail(&err, MPK_ENOTFOUND, arg, NULL,
                  "has no mlc-model-manifest.json (a legacy package: it declares no tasks, so there is no "
                  "interface_id): write one with `modelpkg mlc build %s --tasks TASKS.json --lib LIB`",
                  arg);
  else /* a package's manifest is read beneath the package; a file named directly, as given */
    rc = dir ? mpk_map_beneath(arg, MPK_MLC_MANIFEST_FILENAME, MPK_DOCUMENT_MAX_BYTES, &m, &err)
             : mpk_map_file(path, MPK_DOCUMENT_MAX_BYTES, &m, &err);
  if (!rc) {
    rc = mpk_mlc_package_parse(m.data, m.size, path, 1, &pkg, &err);
    mpk_unmap_file(&m);
  }
  if (!rc) rc = mpk_mlc_package_interface_id(pkg, id, &err);
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("mlc id", id_keys, &err);
    free(path);
    mpk_mlc_package_free(pkg);
    return MPK_EXIT_FAIL;
  }
  int status = MPK_EXIT_OK;
  mpk_error_clear(&err);
  if (strcmp(id, pkg->interface_id) != 0) {
    mpk_fail(&err, MPK_EMISMATCH, path, "/interface_id", "declared %s differs from the recomputed id", pkg->interface_id);
    fprintf(stderr, "modelpkg: %s: /interface_id: declared %s differs from the recomputed id\n", path,
            pkg->interface_id);
    status = MPK_EXIT_FAIL;
  }
  if (json) {
    json_t *root = mpk_cli_json_begin("mlc id", status == MPK_EXIT_OK);
    json_object_set_new(root, "manifest", json_string(path));
    json_object_set_new(root, "interface_id", json_string(id));
    json_object_set_new(root, "declared_interface_id", json_string(pkg->interface_id));
    mpk_cli_json_end(root, &err, err.code ? 1 : 0, NULL, 0);
  } else {
    printf("%s\n", id);
  }
  mpk_mlc_package_free(pkg);
  free(path);
  return status;
}

static const char *const metadata_keys[] = {"library", "where", "member", "offset", "bytes", "scanned", "metadata", NULL};

static int cmd_metadata(const char *lib, bool json) {
  mpk_error err;
  mpk_error_clear(&err);
  /* A library is read as a whole (where the format puts the _metadata); a _metadata JSON file, or
     a container the reader refuses, is loaded as before (mpk_mlc_metadata_load says why not). */
  mpk_mlc_library *l = NULL;
  const mpk_mlc_metadata *md = NULL;
  mpk_mlc_metadata *loaded = NULL;
  int rc = mpk_mlc_library_open(lib, &l, &err);
  if (!rc && l->metadata) {
    md = l->metadata;
  } else if (!rc || rc == MPK_EUNSUPPORTED || rc == MPK_EMALFORMED) {
    mpk_mlc_library_free(l);
    l = NULL;
    mpk_error_clear(&err);
    if (mpk_mlc_metadata_load(lib, &loaded, &err) == 0) md = loaded;
  }
  if (!md) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("mlc metadata", metadata_keys, &err);
    mpk_mlc_library_free(l);
    return MPK_EXIT_FAIL;
  }
  if (json) {
    json_t *root = mpk_cli_json_begin("mlc metadata", true);
    json_object_set_new(root, "library", json_string(lib));
    json_object_set_new(root, "where", mpk_cli_json_str(l ? l->metadata_where : "a _metadata JSON file"));
    json_object_set_new(root, "member", mpk_cli_json_str(l ? l->metadata_member : NULL));
    /* the stored string's offset (its u64 length; the JSON text is 8 bytes later), in the member
       for an archive */
    json_object_set_new(root, "offset", l && md->source_offset >= 8 ? json_integer(md->source_offset - 8) : json_null());
    json_object_set_new(root, "bytes", json_integer((json_int_t)md->json_len));
    json_object_set_new(root, "scanned", json_boolean(l ? l->metadata_scanned : 0));
    json_t *v = json_loadb(md->json, md->json_len, JSON_DECODE_ANY, NULL);
    json_object_set_new(root, "metadata", v ? v : json_null());
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
  } else {
    fwrite(md->json, 1, md->json_len, stdout);
    if (md->json_len && md->json[md->json_len - 1] != '\n' && isatty(STDOUT_FILENO)) putchar('\n');
  }
  mpk_mlc_metadata_free(loaded);
  mpk_mlc_library_free(l);
  return MPK_EXIT_OK;
}

int mpk_cmd_mlc_id(int argc, char **argv) {
  bool json = false;
  const mpk_cli_opt opts[] = {{"--json", 0, NULL, "print one JSON document (docs/CLI.md)", .flag = &json}, {0}};
  const mpk_cli_spec spec = {.name = "mlc id", .usage = "DIR|MANIFEST [--json]", .about = id_about, .opts = opts,
                             .more = more, .json_keys = id_keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  if (!a.n) return mpk_cli_usage(&spec, a.json, "id needs a package directory");
  return cmd_id(a.arg[0], a.json);
}

int mpk_cmd_mlc_metadata(int argc, char **argv) {
  bool json = false;
  const mpk_cli_opt opts[] = {
      {"--json", 0, NULL, "print one JSON document: the library and its _metadata parsed (docs/CLI.md)",
       .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = "mlc metadata", .usage = "LIB [--json]", .about = metadata_about, .opts = opts,
                             .more = more, .json_keys = metadata_keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  if (!a.n) return mpk_cli_usage(&spec, a.json, "metadata needs a library file");
  return cmd_metadata(a.arg[0], a.json);
}
