/* A chat-completion request against the model: every case of request_checks.json (WebLLM 0.2.86
   postInitAndCheckFieldsChatCompletion) through mpk_mlc_request_check, then the places the vectors
   leave out: message order, the stricter shape rules, the kinds helpers (docs/mlc-request.md). The
   random differential test against WebLLM's bundle is tests/request/request_diff.mjs. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* WebLLM error class -> our code (docs/mlc-request.md). */
static int code_for(const char *name) {
  static const char *const unsupported[] = {"UnsupportedContentPartError", "UserMessageContentErrorForNonVLM",
                                            "UnsupportedDetailError", "UnsupportedImageURLError",
                                            "MultipleTextContentError"};
  for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
    if (strcmp(name, unsupported[i]) == 0) return MPK_EUNSUPPORTED;
  if (strcmp(name, "TypeError") == 0 || strcmp(name, "SystemMessageOrderError") == 0 ||
      strcmp(name, "MessageOrderError") == 0)
    return MPK_EMALFORMED;
  fail_msg("unknown WebLLM error class %s", name);
  return 0;
}

static mpk_mlc_request_model model_of(const json_t *c) {
  mpk_mlc_request_model m = {.model_id = "m", .model_type = json_string_value(json_object_get(c, "model_type"))};
  const json_t *kinds = json_object_get(c, "supported_input_kinds"), *k;
  size_t i;
  if (json_is_array(kinds)) {
    m.kinds.declared = 1;
    json_array_foreach(kinds, i, k) {
      if (strcmp(json_string_value(k), "audio") == 0) m.kinds.audio = 1;
      else if (strcmp(json_string_value(k), "image") == 0) m.kinds.image = 1;
      else fail_msg("unknown input kind %s", json_string_value(k));
    }
  }
  return m;
}

static void test_request_checks(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("request_checks.json", &root), *c;
  size_t i, accepted = 0, refused = 0;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    char *text = tu_dumps(json_object_get(c, "request")); /* Float32Arrays are {"$float32array": [...]} there too */
    mpk_mlc_request_model m = model_of(c);
    mpk_error err;
    int rc = mpk_mlc_request_check(text, strlen(text), "request.json", &m, &err);
    const json_t *e = json_object_get(c, "expected_error");
    if (!e) {
      if (rc) fail_msg("%s: refused: %s", name, tu_err(&err));
      accepted++;
    } else {
      const char *ename = json_string_value(json_object_get(e, "name"));
      const char *emsg = json_string_value(json_object_get(e, "message"));
      if (rc != code_for(ename)) fail_msg("%s: code %d for %s: %s", name, rc, ename, tu_err(&err));
      size_t n = strcspn(emsg, "\n"); /* the first line opens ours, the second is in it */
      if (strncmp(err.message, emsg, n) != 0 || (emsg[n] && !strstr(err.message, emsg + n + 1)))
        fail_msg("%s: message\n  %s\nwanted\n  %s", name, err.message, emsg);
      if (strncmp(err.pointer, "/messages/0", 11) != 0) fail_msg("%s: pointer %s", name, err.pointer);
      assert_string_equal(err.file, "request.json");
      refused++;
    }
    free(text);
  }
  printf("  request_checks.json: %zu accepted, %zu refused as WebLLM refuses them\n", accepted, refused);
  assert_int_equal(accepted + refused, 15);
  json_decref(root);
}

/* A case beyond the vectors: the request, the model, and the error (code 0: accepted) and pointer. */
typedef struct extra {
  const char *request;
  const char *model_type;
  mpk_mlc_input_kinds kinds;
  int code;
  const char *pointer;
  const char *message; /* a part of the message */
} extra;

#define AUDIO_IMAGE {1, 1, 1}
#define NONE {0, 0, 0}
static const extra extras[] = {
    /* order: a system message later, the last message's role */
    {"{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"u\"}]}", "LLM", NONE, 0},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"u\"},{\"role\":\"system\",\"content\":\"s\"}]}", "LLM", NONE,
     MPK_EMALFORMED, "/messages/1/role", "System prompt should always be the first message"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"u\"},{\"role\":\"assistant\",\"content\":\"a\"}]}", "LLM", NONE,
     MPK_EMALFORMED, "/messages/1/role", "Last message should be from either `user` or `tool`."},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"u\"},{\"role\":\"tool\",\"content\":\"t\"}]}", "LLM", NONE, 0},
    /* a part's error comes before the count of text parts; every other type counts as text */
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"},{\"type\":\"text\"},"
     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"ftp://x\"}}]}]}",
     "LLM", AUDIO_IMAGE, MPK_EUNSUPPORTED, "/messages/0/content/2/image_url/url", "but got: ftp://x"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"video\"},{}]}]}", "LLM", AUDIO_IMAGE, MPK_EUNSUPPORTED,
     "/messages/0/content", "at most one text contentPart"},
    /* a legacy VLM (nothing declared): images pass, audio does not; detail null is no detail */
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x\","
     "\"detail\":null}}]}]}",
     "VLM", NONE, 0},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{\"format\":\"wav\","
     "\"data\":\"AAAA\"}}]}]}",
     "VLM", NONE, MPK_EUNSUPPORTED, "/messages/0/content/0/type", "does not declare support"},
    /* a Float32Array given by its length; a rate written 16000.0; WAV data as HTTPS: in capitals */
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{\"format\":\"pcm_f32\","
     "\"data\":{\"$float32array\":3},\"sample_rate\":16000.0}}]}]}",
     "LLM", AUDIO_IMAGE, 0},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{\"format\":\"mp3\","
     "\"data\":\"HTTPS:x\"}}]}]}",
     "LLM", AUDIO_IMAGE, MPK_EMALFORMED, "/messages/0/content/0/input_audio/data", "raw base64"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{\"format\":\"pcm_f32\","
     "\"data\":{\"$float32array\":[0],\"x\":1},\"sample_rate\":1}}]}]}",
     "LLM", AUDIO_IMAGE, MPK_EMALFORMED, "/messages/0/content/0/input_audio/data", "Float32Array"},
    /* the NonVLM message prints the content as String() does */
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"},null,\"x\",1.5e-7]}]}", "embedding", NONE,
     MPK_EUNSUPPORTED, "/messages/0/content", "received: [object Object],,x,1.5e-7. Loaded modelId: model, modelType: embedding"},
    /* stricter than WebLLM: shapes it would crash on or read past */
    {"{\"messages\":[{\"role\":\"user\",\"content\":null}]}", "VLM", NONE, MPK_EMALFORMED, "/messages/0/content",
     "a string or an array"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\"}}]}", "LLM", AUDIO_IMAGE, MPK_EMALFORMED,
     "/messages/0/content", "a string or an array"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[7]}]}", "LLM", AUDIO_IMAGE, MPK_EMALFORMED, "/messages/0/content/0",
     "content part"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":3}}]}]}", "LLM",
     AUDIO_IMAGE, MPK_EMALFORMED, "/messages/0/content/0/image_url/url", "must be a string"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]}", "LLM", AUDIO_IMAGE,
     MPK_EMALFORMED, "/messages/0/content/0/input_audio/data", "raw base64"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":\"x\"}]}]}", "LLM",
     AUDIO_IMAGE, MPK_EMALFORMED, "/messages/0/content/0/image_url/url", "must be a string"},
    {"{\"messages\":[{\"role\":\"user\"}]}", "LLM", NONE, MPK_EUNSUPPORTED, "/messages/0/content",
     "received: undefined. Loaded"},
    {"{\"messages\":[]}", "LLM", NONE, MPK_EMALFORMED, "/messages", "non-empty array"},
    {"[]", "LLM", NONE, MPK_EMALFORMED, "", "chat-completion request"},
    {"{\"messages\":[\"hi\"]}", "LLM", NONE, MPK_EMALFORMED, "/messages/0", "expected a message"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\",\"content\":\"b\"}]}", "LLM", NONE, MPK_EMALFORMED, "",
     "duplicate"},
};

static void test_beyond_the_vectors(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof extras / sizeof *extras; i++) {
    const extra *x = &extras[i];
    mpk_mlc_request_model m = {.model_type = x->model_type, .kinds = x->kinds};
    mpk_error err;
    int rc = mpk_mlc_request_check(x->request, strlen(x->request), NULL, &m, &err);
    if (rc != x->code) fail_msg("case %zu: %s: code %d, wanted %d: %s", i, x->request, rc, x->code, tu_err(&err));
    if (!rc) continue;
    if (strcmp(err.pointer, x->pointer) != 0) fail_msg("case %zu: pointer '%s', wanted '%s'", i, err.pointer, x->pointer);
    if (!strstr(err.message, x->message)) fail_msg("case %zu: message %s lacks %s", i, err.message, x->message);
    assert_string_equal(err.file, "request");
  }
}

static void test_arguments_and_kinds(void **state) {
  (void)state;
  mpk_error err;
  mpk_mlc_request_model m = {.model_type = "GPT"};
  const char *ok = "{\"messages\":[{\"role\":\"user\",\"content\":\"u\"}]}";
  assert_int_equal(mpk_mlc_request_check(ok, strlen(ok), NULL, &m, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "LLM, VLM or embedding"));
  assert_int_equal(mpk_mlc_request_check(ok, strlen(ok), NULL, NULL, &err), MPK_EINVAL);
  m.model_type = NULL; /* LLM */
  assert_int_equal(mpk_mlc_request_check(ok, strlen(ok), NULL, &m, &err), 0);

  mpk_mlc_binding b = {.has_audio = 1};
  mpk_mlc_input_kinds k;
  mpk_mlc_input_kinds_of_binding(&b, &k);
  assert_true(k.declared && k.audio && !k.image);
  b = (mpk_mlc_binding){0};
  mpk_mlc_input_kinds_of_binding(&b, &k);
  assert_true(k.declared && !k.audio && !k.image); /* a manifest model declares, even nothing */
  mpk_mlc_legacy_abi abi = {.chat = 1, .image_embed = 1};
  mpk_mlc_input_kinds_of_legacy(&abi, &k);
  assert_true(k.declared && k.image && !k.audio);
  abi.image_embed = 0;
  mpk_mlc_input_kinds_of_legacy(&abi, &k);
  assert_false(k.declared);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_request_checks),
      cmocka_unit_test(test_beyond_the_vectors),
      cmocka_unit_test(test_arguments_and_kinds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
