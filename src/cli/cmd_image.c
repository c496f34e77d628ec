/* modelpkg image IN --package DIR [-o OUT.raw] [--png PREVIEW.png] [--json]: a photo to the
   [1, H, W, 3] pixel tensor of the package's image_decode processor, and a report of what it was
   (format, size, EXIF orientation) and what was done (JPEG DCT scale, resize plan, dtype). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define IMAGE_MAX_FILE ((size_t)1 << 30) /* larger inputs are not mapped */

static const char about[] =
    "Turn a JPEG, PNG or WebP file into the pixel tensor an image_decode adapter expects: [1, H, W, 3]\n"
    "RGB, resized with WebLLM 0.2.86's plan (stretch, or center_crop: scale to cover, keep the centre)\n"
    "and an antialiased filter, the EXIF orientation applied. Other formats are refused by name.\n";
static const char more[] = "exit status: 0 converted, 1 refused (the reason on stderr), 2 usage error\n";

typedef struct processor {
  mpk_image_target target;
  char *input;  /* the package input's name, or NULL */
  char *dtype;  /* from --lib: "uint8" or "uint32", or NULL */
} processor;

static mpk_image_resize_mode mode_of(mpk_mlc_resize_mode m) {
  return m == MPK_MLC_RESIZE_CENTER_CROP ? MPK_IMAGE_RESIZE_CENTER_CROP : MPK_IMAGE_RESIZE_STRETCH;
}

/* The image_decode processor: with --lib the input the binding (resolveChatCompletionArtifact)
   gives the image adapter, else chat.completions' image input, else the first. 0 or an MPK_E* code
   with *err set. */
static int package_processor(const char *arg, const char *lib, processor *p, mpk_error *err) {
  char *path = mpk_cli_is_dir(arg) ? mpk_cli_path_join(arg, MPK_MLC_MANIFEST_FILENAME) : strdup(arg);
  if (!path) return mpk_fail(err, MPK_ENOMEM, arg, NULL, "out of memory");
  mpk_mlc_package *pkg = NULL;
  mpk_mlc_metadata *md = NULL;
  int rc = 0;
  if ((rc = mpk_mlc_package_load(path, &pkg, err))) goto out;
  const mpk_mlc_input *found = NULL;
  if (lib) {
    mpk_mlc_binding b;
    if ((rc = mpk_mlc_metadata_load(lib, &md, err))) goto out;
    if (!md->artifact) {
      rc = mpk_fail(err, MPK_EMALFORMED, lib, NULL, "the library's _metadata has no artifact (no adapter_dtypes to read)");
      goto out;
    }
    if ((rc = mpk_mlc_resolve(pkg, md->artifact, &b, err))) goto out;
    if (!b.has_image) {
      rc = mpk_fail(err, MPK_EMALFORMED, path, NULL, "the package binds no image input to %s", lib);
      goto out;
    }
    found = b.image.input;
    if (!(p->dtype = strdup(b.image.dtype))) {
      rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
      goto out;
    }
  } else {
    for (size_t i = 0; i < pkg->n_tasks; i++)
      for (size_t k = 0; k < pkg->tasks[i].n_inputs; k++) {
        const mpk_mlc_input *in = &pkg->tasks[i].inputs[k];
        if (in->kind != MPK_MLC_PROCESSOR_IMAGE_DECODE) continue;
        if (!found || strcmp(pkg->tasks[i].name, "chat.completions") == 0) found = in;
      }
    if (!found) {
      rc = mpk_fail(err, MPK_EMALFORMED, path, NULL, "no task input has an image_decode processor");
      goto out;
    }
  }
  p->target.mode = mode_of(found->image.resize_mode);
  p->target.width = found->image.width;
  p->target.height = found->image.height;
  if (!(p->input = strdup(found->name))) rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
out:
  mpk_mlc_metadata_free(md);
  mpk_mlc_package_free(pkg);
  free(path);
  return rc;
}

static const char *mode_name(mpk_image_resize_mode m) { return m == MPK_IMAGE_RESIZE_CENTER_CROP ? "center_crop" : "stretch"; }

static const char *orientation_name(int o) {
  static const char *const names[9] = {"",           "as stored",     "mirrored",          "rotated 180",
                                       "flipped",    "transposed",    "rotated 90 CW",     "transverse",
                                       "rotated 90 CCW"};
  return o >= 1 && o <= 8 ? names[o] : "?";
}

static void report_text(FILE *out, const mpk_image *img, const char *in, const processor *p, const char *dtype,
                        size_t bytes) {
  fprintf(out, "source:  %s: %s %ux%u, %u channel%s, %u-bit%s\n", in, mpk_image_format_name(img->format),
          img->source_width, img->source_height, img->source_channels, img->source_channels == 1 ? "" : "s",
          img->source_bits, img->has_alpha ? ", alpha dropped (colour kept as stored)" : "");
  if (img->orientation == 1) fprintf(out, "orient:  1 (no EXIF orientation, or as stored)\n");
  else
    fprintf(out, "orient:  EXIF %d (%s), %s\n", img->orientation, orientation_name(img->orientation),
            img->orientation_applied ? "applied" : "ignored (--ignore-orientation)");
  fprintf(out, "decoded: %ux%u", img->decoded_width, img->decoded_height);
  if (img->format == MPK_IMAGE_FORMAT_JPEG) fprintf(out, " (JPEG DCT scale %d/8)", img->jpeg_scale_num);
  fputc('\n', out);
  fprintf(out, "plan:    %s to %lldx%lld: drawn at %lldx%lld, window at (%lld, %lld)\n", mode_name(p->target.mode),
          (long long)p->target.width, (long long)p->target.height, (long long)img->plan.width,
          (long long)img->plan.height, (long long)img->plan.left, (long long)img->plan.top);
  fprintf(out, "output:  [1, %lld, %lld, 3] %s, %zu bytes%s%s\n", (long long)img->height, (long long)img->width, dtype,
          bytes, p->input ? ", for input " : "", p->input ? p->input : "");
  if (img->warning[0]) fprintf(out, "note:    %s (the pixels are whole)\n", img->warning);
}

/* The command's own keys of its --json document (docs/CLI.md "JSON reports"). */
static const char *const json_keys[] = {"source", "decoded", "processor", "plan", "output", NULL};

static int report_json(const mpk_image *img, const char *in, const processor *p, const char *dtype,
                       const char *dtype_from, size_t bytes, const char *output, const char *png) {
  json_t *src = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:b, s:I, s:b}", "file", in, "format",
                          mpk_image_format_name(img->format), "width", (json_int_t)img->source_width, "height",
                          (json_int_t)img->source_height, "channels", (json_int_t)img->source_channels, "bits",
                          (json_int_t)img->source_bits, "alpha", img->has_alpha, "orientation",
                          (json_int_t)img->orientation, "orientation_applied", img->orientation_applied);
  json_t *dec = json_pack("{s:I, s:I}", "width", (json_int_t)img->decoded_width, "height",
                          (json_int_t)img->decoded_height);
  json_object_set_new(dec, "jpeg_scale_num",
                      img->format == MPK_IMAGE_FORMAT_JPEG ? json_integer(img->jpeg_scale_num) : json_null());
  json_t *proc = json_pack("{s:o, s:s, s:I, s:I}", "input", mpk_cli_json_str(p->input), "mode",
                           mode_name(p->target.mode), "width", (json_int_t)p->target.width, "height",
                           (json_int_t)p->target.height);
  json_t *plan = json_pack("{s:I, s:I, s:I, s:I}", "width", (json_int_t)img->plan.width, "height",
                           (json_int_t)img->plan.height, "left", (json_int_t)img->plan.left, "top",
                           (json_int_t)img->plan.top);
  json_t *o = json_pack("{s:[i, I, I, i], s:s, s:s, s:I, s:o, s:o}", "shape", 1, (json_int_t)img->height,
                        (json_int_t)img->width, 3, "dtype", dtype, "dtype_from", dtype_from, "bytes",
                        (json_int_t)bytes, "file", mpk_cli_json_str(output), "preview", mpk_cli_json_str(png));
  json_t *root = mpk_cli_json_begin("image", true);
  if (!root || !src || !dec || !proc || !plan || !o) {
    json_decref(root), json_decref(src), json_decref(dec), json_decref(proc), json_decref(plan), json_decref(o);
    return -1;
  }
  json_object_set_new(root, "source", src);
  json_object_set_new(root, "decoded", dec);
  json_object_set_new(root, "processor", proc);
  json_object_set_new(root, "plan", plan);
  json_object_set_new(root, "output", o);
  const char *notes[1];
  size_t n_notes = 0;
  if (img->warning[0]) notes[n_notes++] = img->warning;
  return mpk_cli_json_end(root, NULL, 0, notes, n_notes);
}

/* An 8-bit RGB PNG of the tensor (the library's encoder into memory, then the output contract). */
static int write_png(const char *path, const mpk_image *img, mpk_error *err) {
  void *png = NULL;
  size_t len = 0;
  int rc = mpk_image_encode_png(img, &png, &len, err);
  if (rc) return mpk_fail(err, rc, path, NULL, "%s", err ? err->message : "PNG encoder failed");
  rc = mpk_output_file(path, png, len, err);
  mpk_free(png);
  return rc;
}

static int write_tensor(const char *path, const mpk_image *img, int elem, size_t bytes, mpk_error *err) {
  if (elem == 1) return mpk_output_file(path, img->pixels, bytes, err);
  uint8_t *buf = malloc(bytes);
  if (!buf) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  int rc = mpk_image_tensor_bytes(img, elem, buf, bytes, err);
  if (!rc) rc = mpk_output_file(path, buf, bytes, err);
  free(buf);
  return rc;
}

/* -o FILE of uint8 without --png: the tensor's rows written as the library makes them
   (mpk_image_options.rows), so the process never holds the tensor whole; gathered in a buffer,
   and the file committed only once the image is done (on failure there is no file). */
typedef struct row_writer {
  mpk_output *o;
  size_t used;
  uint8_t buf[1 << 13]; /* 8 KiB: each fresh page costs more (~10 µs in a VM) than the writes a larger buffer saves */
} row_writer;

static int row_writer_flush(row_writer *w, mpk_error *err) {
  int rc = w->used ? mpk_output_write(w->o, w->buf, w->used, err) : 0;
  w->used = 0;
  return rc;
}

static int write_row(void *ctx, int64_t y, const uint8_t *row, size_t len, mpk_error *err) {
  row_writer *w = ctx;
  (void)y; /* rows come in order, each once (mpk_image_options.rows) */
  while (len) {
    size_t n = sizeof w->buf - w->used < len ? sizeof w->buf - w->used : len;
    memcpy(w->buf + w->used, row, n);
    w->used += n, row += n, len -= n;
    if (w->used == sizeof w->buf) {
      int rc = row_writer_flush(w, err);
      if (rc) return rc;
    }
  }
  return 0;
}

/* Whether rows may be written before the image is done: a file is written aside and committed
   at the end; standard output only when it is a character device (/dev/null, a terminal): a
   failure half-way must leave no part of the tensor in a pipe or a redirected file. */
static bool can_stream(const char *output) {
  if (!mpk_output_is_stdout(output)) return true;
  struct stat st;
  return fstat(STDOUT_FILENO, &st) == 0 && S_ISCHR(st.st_mode);
}

/* An integer option in 1..max (an mpk_cli_opt fn). */
#define usage(json, ...) mpk_cli_usage(&spec, (json), __VA_ARGS__)

typedef struct int_opt {
  long long max, *out;
} int_opt;
static int int_option(void *ctx, const mpk_cli_spec *s, bool json, const char *opt, const char *v) {
  const int_opt *o = ctx;
  if (!mpk_cli_parse_int(v, 1, o->max, o->out))
    return mpk_cli_usage(s, json, "%s: expected an integer in 1..%lld, got '%s'", opt, o->max, v);
  return MPK_EXIT_OK;
}

int mpk_cmd_image(int argc, char **argv) {
  const char *package = NULL, *output = NULL, *png = NULL, *lib = NULL, *mode = NULL, *dtype_opt = NULL;
  bool json = false, ignore_orientation = false;
  long long width = 0, height = 0, max_pixels = 0, max_mib = 0;
  int_opt w = {MPK_IMAGE_MAX_DIM, &width}, h = {MPK_IMAGE_MAX_DIM, &height}, px = {MPK_CLI_SAFE_INT_MAX, &max_pixels},
          mib = {1LL << 24, &max_mib};
  const mpk_cli_opt opts[] = {
      {"--package", 0, "DIR", "read the processor (resize mode, width, height) from DIR's\n"
                              "mlc-model-manifest.json (or the manifest file itself)", .str = &package},
      {"--mode", 0, "MODE", "stretch or center_crop (overrides the package's; needed without --package)",
       .str = &mode},
      {"--width", 0, "W", "the output width (overrides the package's; needed without --package)", .fn = int_option,
       .ctx = &w},
      {"--height", 0, "H", "the output height (overrides the package's; needed without --package)", .fn = int_option,
       .ctx = &h},
      {"--lib", 0, "FILE", "the compiled model library: take the tensor's dtype from its\n"
                           "adapter_dtypes, for the input the package binds to it (needs --package)", .str = &lib},
      {"--dtype", 0, "uint8|uint32", "element type of the output (default uint8; uint32 zero-extends each\n"
                                     "value, little-endian); with --lib it must agree with the library",
       .str = &dtype_opt},
      {"--ignore-orientation", 0, NULL, "keep the pixels as stored (a frontend that does not read EXIF)",
       .flag = &ignore_orientation},
      {"--max-pixels", 0, "N", "largest source width x height accepted (default 268435456)", .fn = int_option,
       .ctx = &px},
      {"--max-decode-mib", 0, "N", "memory budget for decoding, in MiB (default 512): the decoded pixels\n"
                                   "(3 bytes each) and a progressive JPEG's coefficients, from the header",
       .fn = int_option, .ctx = &mib},
      {"--output", 'o', "FILE", "write the tensor as raw bytes (atomically; - is standard output, a\n"
                                "device or FIFO is written through; the report then goes to stderr)",
       .str = &output},
      {"--png", 0, "FILE", "write the tensor as an 8-bit RGB PNG preview (the same rules)", .str = &png},
      {"--json", 0, NULL, "print the report as one JSON document (not with data on stdout)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = "image", .usage = "IN (--package DIR | --mode MODE --width W --height H) [options]",
                             .about = about, .opts = opts, .more = more, .json_keys = json_keys, .max_args = 1,
                             .extra = "one input file, got '%s' and '%s'"};
  mpk_cli_args args;
  int st = mpk_cli_parse(&spec, argc, argv, &args);
  if (st != MPK_CLI_GO_ON) return st;
  json = args.json;
  const char *in = args.arg[0];
  if (mode && strcmp(mode, "stretch") != 0 && strcmp(mode, "center_crop") != 0)
    return usage(json, "--mode: expected stretch or center_crop, got '%s'", mode);
  if (dtype_opt && strcmp(dtype_opt, "uint8") != 0 && strcmp(dtype_opt, "uint32") != 0)
    return usage(json, "--dtype: expected uint8 or uint32, got '%s'", dtype_opt);
  if (!in) return usage(json, "no input file");
  if (lib && !package) return usage(json, "--lib needs --package (the binding names the input)");
  if (!package && (!mode || !width || !height)) return usage(json, "give --package DIR, or --mode, --width and --height");
  /* Where the data go decides where the report goes (docs/CLI.md "Output files"). */
  bool out_stdout = output && mpk_output_is_stdout(output), png_stdout = png && mpk_output_is_stdout(png);
  if (out_stdout && png_stdout) return usage(json, "-o and --png cannot both write to standard output");
  if (json && (out_stdout || png_stdout))
    return usage(json, "--json prints its document on standard output, which %s writes the %s to; write the data "
                 "to a file, or drop --json (the report then goes to standard error)",
                 out_stdout ? "-o" : "--png", out_stdout ? "tensor" : "preview");
  FILE *rep = out_stdout || png_stdout ? stderr : stdout;
  /* Unbuffered stderr would make the report eight writes; nothing has been written to it yet. */
  static char rep_buf[4096];
  if (rep == stderr) setvbuf(stderr, rep_buf, _IOFBF, sizeof rep_buf);

  mpk_error err;
  mpk_error_clear(&err);
  processor p = {{MPK_IMAGE_RESIZE_STRETCH, 0, 0}, NULL, NULL};
  int rc = package ? package_processor(package, lib, &p, &err) : 0;
  if (!rc) {
    if (mode) p.target.mode = strcmp(mode, "center_crop") == 0 ? MPK_IMAGE_RESIZE_CENTER_CROP : MPK_IMAGE_RESIZE_STRETCH;
    if (width) p.target.width = width;
    if (height) p.target.height = height;
  }
  const char *dtype = "uint8", *dtype_from = "default";
  if (!rc && p.dtype) {
    dtype = p.dtype, dtype_from = "lib";
    if (dtype_opt && strcmp(dtype_opt, p.dtype) != 0)
      rc = mpk_fail(&err, MPK_EMISMATCH, lib, NULL, "adapter_dtypes gives the image adapter %s; --dtype says %s", p.dtype,
                    dtype_opt);
    else if (strcmp(p.dtype, "uint8") != 0 && strcmp(p.dtype, "uint32") != 0)
      rc = mpk_fail(&err, MPK_EUNSUPPORTED, lib, NULL, "image adapter dtype %s is neither uint8 nor uint32", p.dtype);
  } else if (dtype_opt) dtype = dtype_opt, dtype_from = "option";

  mpk_image *img = NULL;
  int elem = strcmp(dtype, "uint32") == 0 ? 4 : 1;
  size_t bytes = 0;
  if (!rc) {
    mpk_mapped m;
    mpk_image_options o = {.struct_size = sizeof o, .ignore_orientation = ignore_orientation, .max_pixels = (uint64_t)max_pixels,
                           .max_decode_bytes = (uint64_t)max_mib << 20};
    row_writer *rw = output && !png && elem == 1 && can_stream(output) ? malloc(sizeof *rw) : NULL;
    if (rw) rw->o = NULL, rw->used = 0;
    rc = mpk_map_file(in, IMAGE_MAX_FILE, &m, &err);
    bool mapped = rc == 0;
    if (!rc && rw && !(rc = mpk_output_open(output, &rw->o, &err))) {
      o.rows = write_row;
      o.rows_ctx = rw;
    }
    if (!rc) rc = mpk_image_from_bytes(m.data, m.size, in, &p.target, &o, &img, &err);
    if (mapped) mpk_unmap_file(&m);
    if (!rc) bytes = (size_t)img->width * (size_t)img->height * 3 * (size_t)elem;
    if (rw && rw->o) {
      if (!rc) rc = row_writer_flush(rw, &err);
      if (!rc) rc = mpk_output_commit(rw->o, &err);
      else mpk_output_abort(rw->o);
    }
    if (!rc && output && !rw) rc = write_tensor(output, img, elem, bytes, &err);
    free(rw);
    if (!rc && png) rc = write_png(png, img, &err);
  }
  int status = MPK_EXIT_OK;
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("image", json_keys, &err);
    status = MPK_EXIT_FAIL;
  } else if (json) {
    if (report_json(img, in, &p, dtype, dtype_from, bytes, output, png)) status = MPK_EXIT_FAIL;
  } else {
    report_text(rep, img, in, &p, dtype, bytes);
    if (output) fprintf(rep, "written: %s (%zu bytes)\n", strcmp(output, "-") == 0 ? "standard output" : output, bytes);
    if (png) fprintf(rep, "preview: %s\n", strcmp(png, "-") == 0 ? "standard output" : png);
  }
  if (rep == stderr) fflush(stderr);
  mpk_image_free(img);
  free(p.input);
  free(p.dtype);
  return status;
}
