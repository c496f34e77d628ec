#!/usr/bin/env bash
# A test whose external tool is absent is skipped, never passed and never failed (issue 17): it
# prints "SKIP: <test>: <tool> not found (scripts/setup.sh --test installs it)" on stdout and exits
# 77 (ctest's SKIP_RETURN_CODE); a test that needs the tool for some cases only skips those, each
# with its SKIP line, and still runs and passes the rest. Proven here by running real tests with the
# tool hidden: a PATH (and MPK_TEST_TOOL_PATH, where the helpers look, sbin included) of links to
# every program but the hidden ones, or a PYTHONPATH whose stub module fails to import.
# usage: test_skips.sh MODELPKG SOURCE_DIR
set -uo pipefail
MPK="$1"; SRC="$2"
I="$SRC/tests/integration"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
EXPECT_TIMEOUT=120; . "$I/expect.sh"
HOW="(scripts/setup.sh --test installs it)"

# without NAME TOOL...: $T/NAME, a directory of links to every program on PATH and in the sbin
# directories (the first of each name, as a search would find it) except TOOL...
without() {
  local dir="$T/$1" d t; shift
  mkdir -p "$dir"
  local IFS=:
  for d in $PATH:/usr/local/sbin:/usr/sbin:/sbin; do
    [ -d "$d" ] || continue
    # one ln per directory; names already linked from an earlier directory are kept (ln refuses them)
    (cd "$d" && ln -s -t "$dir" -- "$d"/* 2>/dev/null)
  done
  for t in "$@"; do rm -f "$dir/$t"; done
  printf '%s\n' "$dir"
}
# stubs NAME MODULE...: $T/NAME, a PYTHONPATH directory in which importing MODULE... fails.
stubs() {
  local dir="$T/$1" m; shift
  mkdir -p "$dir"
  for m in "$@"; do echo "raise ModuleNotFoundError('hidden by test_skips.sh', name='$m')" >"$dir/$m.py"; done
  printf '%s\n' "$dir"
}
# skips NAME LINE -- CMD...: CMD exits 77 and prints LINE (exactly, on stdout), nothing on stderr
# that says FAIL.
skips() {
  local name="$1" line="$2"; shift 3
  local out err rc
  out="$(timeout "$EXPECT_TIMEOUT" "$@" 2>"$T/err")"; rc=$?
  err="$(cat "$T/err")"
  if [ "$rc" -eq 77 ] && grep -qxF -- "$line" <<<"$out" && ! grep -q FAIL <<<"$out$err"; then ok
  else bad "$name: exit $rc (wanted 77), stdout without the line '$line'"; first_lines 10 "$out"; first_lines 10 "$err"; fi
}

# The check itself: a program hidden from the links is not found; one left there is.
NONGINX="$(without nonginx nginx)"
if [ -e "$NONGINX/nginx" ] || [ ! -e "$NONGINX/bash" ]; then bad "without: the links are wrong"; fi
( MPK_TEST_TOOL_PATH="$NONGINX"; have_tool nginx ) && bad "have_tool found a hidden nginx" || ok
( MPK_TEST_TOOL_PATH="$NONGINX"; have_tool bash ) && ok || bad "have_tool missed bash"

# ---- whole tests skipped
# mt install against nginx: without nginx, and with nginx but without curl.
skips install_http_nginx "SKIP: test_install_http: nginx not found $HOW" \
  -- env PATH="$NONGINX" MPK_TEST_TOOL_PATH="$NONGINX" "$I/test_install_http.sh" "$MPK" "$T/no-shared"
if have_tool nginx; then
  NOCURL="$(without nocurl curl)"
  skips install_http_curl "SKIP: test_install_http: curl not found $HOW" \
    -- env PATH="$NOCURL" MPK_TEST_TOOL_PATH="$NOCURL" "$I/test_install_http.sh" "$MPK" "$T/no-shared"
else
  skip_case install_http_curl nginx
fi
# the ONNX Runtime merge test: without node; with node but without python3-onnx.
NONODE="$(without nonode node)"
skips merge_onnx_node "SKIP: test_merge_onnx: node not found $HOW" \
  -- env PATH="$NONODE" MPK_TEST_TOOL_PATH="$NONODE" "$SRC/tests/e2e/test_merge_onnx.sh" "$MPK" "$SRC"
# the URL differential test: without node; with node but without WebLLM's bundle (in an empty tree).
skips url_diff_node "SKIP: test_url_diff: node not found $HOW" \
  -- env PATH="$NONODE" MPK_TEST_TOOL_PATH="$NONODE" "$I/test_webllm_diff.sh" tests/url/url_diff.mjs /nonexistent "$SRC"
# the JavaScript package's tests: without node; with node but without the WebAssembly module (a tree without js/dist).
skips js_node "SKIP: test_js: node not found $HOW" \
  -- env PATH="$NONODE" MPK_TEST_TOOL_PATH="$NONODE" "$I/test_js.sh" "$MPK" "$SRC" "$T/no-shared"
if have_tool node; then
  mkdir -p "$T/nojs/tests" && cp -r "$SRC/tests/integration" "$T/nojs/tests/"
  skips js_module "SKIP: test_js: $T/nojs/js/dist/modelpkg-core.wasm not found (scripts/wasm.sh builds it)" \
    -- "$I/test_js.sh" "$MPK" "$T/nojs" "$T/no-shared"
fi
if have_tool node; then
  skips url_diff_bundle "SKIP: test_url_diff: the WebLLM bundle ($T/.deps/node_modules/@mlc-ai/web-llm/lib/index.js) not found (scripts/deps_node.sh webllm installs it)" \
    -- "$I/test_webllm_diff.sh" tests/url/url_diff.mjs /nonexistent "$T"
fi
if have_tool node; then
  skips merge_onnx_onnx "SKIP: test_merge_onnx: /usr/bin/python3 module onnx not found $HOW" \
    -- env PYTHONPATH="$(stubs noonnx onnx)" "$SRC/tests/e2e/test_merge_onnx.sh" "$MPK" "$SRC"
else
  skip_case merge_onnx_onnx node
fi
# the image CLI test writes its inputs with Pillow
skips cli_image_pil "SKIP: test_cli_image: /usr/bin/python3 module PIL not found $HOW" \
  -- env PYTHONPATH="$(stubs nopil PIL)" "$I/test_cli_image.sh" "$MPK" "$SRC"
# the ONNX graphs' generator, and the CLI test that reads its graphs (none were generated)
skips gen_onnx_graphs "SKIP: gen_onnx_graphs: /usr/bin/python3 module onnx not found $HOW" \
  -- env PYTHONPATH="$(stubs noonnx2 onnx)" /usr/bin/python3 "$SRC/scripts/gen_onnx_graphs.py" "$T/graphs"
skips cli_mt_graph "SKIP: test_cli_mt_graph: /usr/bin/python3 module onnx not found $HOW" \
  -- env PYTHONPATH="$(stubs noonnx3 onnx)" "$I/test_cli_mt_graph.sh" "$MPK" "$SRC" "$T/graphs"
# the Python binding's suite runs under Debian's pytest
skips python_pytest "SKIP: test_python: /usr/bin/python3 module pytest not found $HOW" \
  -- env PYTHONPATH="$(stubs nopytest pytest)" "$I/test_python.sh" /nonexistent "$MPK" "$SRC" "$T/no-shared"
# the image quality comparison draws its images with ImageMagick
NOCONVERT="$(without noconvert convert)"
skips image_quality_convert "SKIP: test_image_quality: ImageMagick convert not found $HOW" \
  -- env PATH="$NOCONVERT" MPK_TEST_TOOL_PATH="$NOCONVERT" /usr/bin/python3 "$SRC/scripts/image_vs_pillow.py" --tool "$T/none" --generate

# ---- cases skipped, the rest run: the audio test without numpy passes, saying which two it skipped.
out="$(timeout "$EXPECT_TIMEOUT" env PYTHONPATH="$(stubs nonumpy numpy)" "$I/test_cli_audio.sh" "$MPK" "$SRC" 2>&1)"; rc=$?
n="$(grep -c "^SKIP: test_cli_audio: .*: /usr/bin/python3 module numpy not found $HOW\$" <<<"$out")"
want=2; grep -q __asan_init "$MPK" && want=1  # (under AddressSanitizer the memory case does not run at all)
if [ "$rc" -eq 0 ] && [ "$n" -eq "$want" ] && grep -qx ok <<<"$out"; then ok
else bad "cli_audio_numpy: exit $rc (wanted 0), $n SKIP lines (wanted $want)"; first_lines 20 "$out"; fi

# ---- finish: 77 when every case was skipped, 0 when one ran, 1 when one failed
cat >"$T/cases.sh" <<'SH'
#!/usr/bin/env bash
set -uo pipefail
. "$1/expect.sh"
case_needs nosuchtool-mpk first && ok
[ "$2" = none ] || ok
[ "$2" = fail ] && bad "planted"
finish
SH
chmod +x "$T/cases.sh"
for want in none:77 one:0 fail:1; do
  out="$("$T/cases.sh" "$I" "${want%%:*}" 2>&1)"; rc=$?
  if [ "$rc" -eq "${want#*:}" ] && grep -qxF "SKIP: cases: first: nosuchtool-mpk not found $HOW" <<<"$out"; then ok
  else bad "finish with ${want%%:*} run: exit $rc, wanted ${want#*:}"; first_lines 5 "$out"; fi
done

finish
