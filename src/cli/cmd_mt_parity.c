/* modelpkg mt parity DIR [--variant ID] [--train-graph FILE] [--tokens TOKENS.json | --seed N --length L]
   [--max-diff NATS] [--ort-library PATH] [--json]: the train/inference parity gate (docs/mt-numeric.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char about[] =
    "The train/inference parity gate of a MobileTransformers package variant (spec 001,\n"
    "verify_train_inference_parity): the same token ids through the training-side evaluation graph\n"
    "(<variant>/train/eval_model.onnx, or --train-graph) and the inference graph\n"
    "(inference/model.onnx, its handoff tensors handed to ONNX Runtime from the load gate's verified,\n"
    "zero-copy views), the mean next-token cross-entropy of each in nats, their difference and the\n"
    "uniform floor ln(vocab). It fails when the difference exceeds the bound (1.5 nats). The tokens:\n"
    "TOKENS.json ({\"tokens\": [id, ...]}), or L ids drawn from seed N (splitmix64: docs/mt-numeric.md)\n"
    "over the inference graph's vocabulary. Needs ONNX Runtime (libonnxruntime.so.1: --ort-library,\n"
    "else $MPK_ORT_LIBRARY, else the loader's search).\n";
static const char more[] =
    "exit status: 0 pass, 1 fail or refused (no ONNX Runtime, a graph that cannot run, a load gate\n"
    "that is not ready), 2 usage error\n";
/* The command's own keys in its --json document (docs/CLI.md), null on a refusal. */
static const char *const parity_keys[] = {"dir",      "variant",       "train_graph", "inference_graph",
                                          "tokens",   "seed",          "n_tokens",    "vocab",
                                          "ce_train", "ce_inference",  "diff",        "uniform_floor",
                                          "max_diff", "pass",          "verdict",     "ort_version",
                                          NULL};

static json_t *num(double d) { return json_real(d); }

static int report_json(const char *dir, const char *tokens_file, bool seeded, unsigned long long seed,
                       const mpk_mt_parity_report *r, const mpk_ort *ort) {
  json_t *root = mpk_cli_json_begin("mt parity", r->pass);
  json_object_set_new(root, "dir", json_string(dir));
  json_object_set_new(root, "variant", mpk_cli_json_str(r->variant));
  json_object_set_new(root, "train_graph", mpk_cli_json_str(r->train_graph));
  json_object_set_new(root, "inference_graph", mpk_cli_json_str(r->inference_graph));
  json_object_set_new(root, "tokens", mpk_cli_json_str(tokens_file));
  json_object_set_new(root, "seed", seeded ? json_integer((json_int_t)seed) : json_null());
  json_object_set_new(root, "n_tokens", json_integer((json_int_t)r->n_tokens));
  json_object_set_new(root, "vocab", json_integer((json_int_t)r->vocab));
  json_object_set_new(root, "ce_train", num(r->ce_train));
  json_object_set_new(root, "ce_inference", num(r->ce_inference));
  json_object_set_new(root, "diff", num(r->diff));
  json_object_set_new(root, "uniform_floor", num(r->uniform_floor));
  json_object_set_new(root, "max_diff", num(r->max_diff));
  json_object_set_new(root, "pass", json_boolean(r->pass));
  json_object_set_new(root, "verdict", mpk_cli_json_str(r->verdict));
  json_object_set_new(root, "ort_version", mpk_cli_json_str(mpk_ort_version(ort)));
  mpk_error e;
  size_t np = 0;
  if (!r->pass) {
    mpk_fail(&e, MPK_EMISMATCH, dir, NULL, "%s", r->verdict);
    np = 1;
  }
  return mpk_cli_json_end(root, &e, np, NULL, 0);
}

int mpk_cmd_mt_parity(int argc, char **argv) {
  const char *variant = NULL, *train_graph = NULL, *tokens_file = NULL, *seed_s = NULL, *length_s = NULL,
             *max_diff_s = NULL, *library = NULL;
  bool json = false;
  const mpk_cli_opt opts[] = {
      {"--variant", 0, "ID", "the variant (default: defaultVariant)", .str = &variant, .once = true},
      {"--train-graph", 0, "FILE", "the training-side graph (default: <variant>/train/eval_model.onnx): a\n"
                                   "language model taking input_ids and giving logits",
       .str = &train_graph, .once = true},
      {"--tokens", 0, "TOKENS.json", "the token ids: {\"tokens\": [id, ...]} (at least 2)", .str = &tokens_file, .once = true},
      {"--seed", 0, "N", "draw the ids from seed N (default 0; not with --tokens)", .str = &seed_s, .once = true},
      {"--length", 0, "L", "how many ids to draw (2 to 1048576, default 64; not with --tokens)", .str = &length_s,
       .once = true},
      {"--max-diff", 0, "NATS", "the bound on the difference (default 1.5)", .str = &max_diff_s, .once = true},
      {"--ort-library", 0, "PATH", "ONNX Runtime's shared library (default: $MPK_ORT_LIBRARY, else\n"
                                   "libonnxruntime.so.1 from the loader's search path)",
       .str = &library, .once = true},
      {"--json", 0, NULL, "print one JSON document (docs/CLI.md)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {
      .name = "mt parity",
      .usage = "DIR [--variant ID] [--train-graph FILE] [--tokens TOKENS.json | --seed N --length L]\n"
               "[--max-diff NATS] [--ort-library PATH] [--json]",
      .about = about, .opts = opts, .more = more, .json_keys = parity_keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  if (!a.n) return mpk_cli_usage(&spec, a.json, "missing the package directory");
  if (!mpk_cli_is_dir(a.arg[0])) return mpk_cli_usage(&spec, a.json, "'%s' is not a directory", a.arg[0]);
  if (tokens_file && (seed_s || length_s))
    return mpk_cli_usage(&spec, a.json, "--tokens gives the ids: --%s does not apply with it", seed_s ? "seed" : "length");
  long long seed = 0, length = 64;
  if (seed_s && !mpk_cli_parse_int(seed_s, 0, 9223372036854775807LL, &seed))
    return mpk_cli_usage(&spec, a.json, "--seed needs an integer from 0 to 9223372036854775807");
  if (length_s && !mpk_cli_parse_int(length_s, 2, 1048576, &length))
    return mpk_cli_usage(&spec, a.json, "--length needs an integer from 2 to 1048576");
  double max_diff = 0;
  if (max_diff_s) {
    char *end = NULL;
    errno = 0;
    max_diff = strtod(max_diff_s, &end);
    if (!*max_diff_s || *end || errno || !isfinite(max_diff) || max_diff <= 0)
      return mpk_cli_usage(&spec, a.json, "--max-diff needs a number of nats greater than 0");
  }

  const char *dir = a.arg[0];
  mpk_error err;
  mpk_error_clear(&err);
  int status = MPK_EXIT_FAIL;
  int64_t *ids = NULL;
  size_t n_ids = 0;
  mpk_ort *ort = NULL;
  mpk_mt_parity_report *r = NULL;
  if (tokens_file && mpk_mt_parity_tokens_load(tokens_file, &ids, &n_ids, &err)) goto refused;
  mpk_ort_options oo = MPK_ORT_OPTIONS_INIT;
  oo.library = library;
  if (mpk_ort_open(&oo, &ort, &err)) goto refused;
  mpk_mt_parity_options po = MPK_MT_PARITY_OPTIONS_INIT;
  po.ort = ort;
  po.variant = variant;
  po.train_graph = train_graph;
  po.tokens = ids;
  po.n_tokens = n_ids;
  po.seed = (uint64_t)seed;
  po.length = (size_t)length;
  po.max_diff = max_diff;
  if (mpk_mt_parity(dir, &po, &r, &err)) goto refused;
  if (a.json) {
    if (report_json(dir, tokens_file, !tokens_file, (unsigned long long)seed, r, ort)) goto out;
  } else {
    printf("modelpkg mt parity %s (variant %s)\n", dir, r->variant);
    if (tokens_file) printf("  tokens: %zu ids from %s\n", r->n_tokens, tokens_file);
    else printf("  tokens: %zu ids drawn from seed %lld (splitmix64) over the vocabulary\n", r->n_tokens, seed);
    printf("  training-side graph  %s\n    cross-entropy %.6f nats\n", r->train_graph, r->ce_train);
    printf("  inference graph      %s\n    cross-entropy %.6f nats\n", r->inference_graph, r->ce_inference);
    printf("  difference %.6f nats (bound %g); uniform floor ln(%lld) = %.6f\n", r->diff, r->max_diff,
           (long long)r->vocab, r->uniform_floor);
    printf("  ONNX Runtime %s (%s)\n", mpk_ort_version(ort), mpk_ort_library(ort));
    printf("%s: %s\n", r->pass ? "OK" : "FAILED", r->verdict);
  }
  status = r->pass ? MPK_EXIT_OK : MPK_EXIT_FAIL;
  goto out;
refused:
  if (a.json) mpk_cli_json_refuse("mt parity", parity_keys, &err);
  mpk_cli_error(&err);
out:
  mpk_mt_parity_report_free(r);
  mpk_ort_close(ort);
  mpk_free(ids);
  return status;
}
