/* modelpkg mlc id DIR | modelpkg mlc metadata LIB */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "usage: modelpkg mlc <subcommand>\n"
    "\n"
    "  mlc id DIR|MANIFEST [--json]\n"
    "                        print the interface_id recomputed from the tasks of DIR's\n"
    "                        mlc-model-manifest.json (defaults filled, canonical JSON, SHA-256);\n"
    "                        exit 1 when it differs from the declared one (noted on stderr)\n"
    "  mlc metadata LIB      print the _metadata JSON embedded in a compiled model library\n"
    "                        (.wasm, .so, .dylib, .dll, .tar), byte-exact\n"
    "  mlc build DIR --tasks TASKS.json [--lib FILE | --params FILE] [...]\n"
    "                        write DIR/mlc-model-manifest.json and print the artifact to embed\n"
    "                        (see modelpkg mlc build --help)\n"
    "  mlc plan --package DIR --lib LIB --segments SEGMENTS.json [--json]\n"
    "                        plan a prompt's prefill calls: text and adapter rows in chunks, context\n"
    "                        checks, which rows come from embed_tokens and which from an adapter\n"
    "                        (see modelpkg mlc plan --help)\n"
    "  -h, --help            show this help\n";

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

static int cmd_metadata(const char *lib) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mlc_metadata *md = NULL;
  if (mpk_mlc_metadata_load(lib, &md, &err)) {
    mpk_cli_error(&err);
    return MPK_EXIT_FAIL;
  }
  fwrite(md->json, 1, md->json_len, stdout);
  if (md->json_len && md->json[md->json_len - 1] != '\n' && isatty(STDOUT_FILENO)) putchar('\n');
  mpk_mlc_metadata_free(md);
  return MPK_EXIT_OK;
}

int mpk_cmd_mlc(int argc, char **argv) {
  if (argc < 2 || mpk_cli_is_help(argv[1])) {
    fputs(help, argc < 2 ? stderr : stdout);
    return argc < 2 ? MPK_EXIT_USAGE : MPK_EXIT_OK;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "build") == 0) return mpk_cmd_mlc_build(argc, argv);
  if (strcmp(sub, "plan") == 0) return mpk_cmd_mlc_plan(argc, argv);
  if (strcmp(sub, "id") != 0 && strcmp(sub, "metadata") != 0)
    return mpk_cli_usage_error("mlc", "unknown subcommand '%s'", sub);
  const char *arg = NULL;
  bool is_id = strcmp(sub, "id") == 0;
  bool json = is_id && mpk_cli_json_wanted(argc, argv);
  const char *cmd = is_id ? "mlc id" : "mlc";
  for (int i = 2; i < argc; i++) {
    if (mpk_cli_is_help(argv[i])) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    }
    if (is_id && strcmp(argv[i], "--json") == 0) continue;
    if (argv[i][0] == '-' && argv[i][1]) return mpk_cli_usage_json(json, cmd, id_keys, "unknown option '%s'", argv[i]);
    if (arg) return mpk_cli_usage_json(json, cmd, id_keys, "unexpected argument '%s'", argv[i]);
    arg = argv[i];
  }
  if (!arg)
    return mpk_cli_usage_json(json, cmd, id_keys, "%s needs %s", sub, is_id ? "a package directory" : "a library file");
  return is_id ? cmd_id(arg, json) : cmd_metadata(arg);
}
