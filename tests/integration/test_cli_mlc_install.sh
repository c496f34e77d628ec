#!/usr/bin/env bash
# modelpkg mlc install (docs/mlc-install.md): from a directory (a model with its manifest and library,
# examples/gemma4-audio), human and --json output, the no-op, a refusal before any shard (nothing in
# the cache), usage errors; then over HTTP from this test's own nginx on 127.0.0.1 (skipped, saying
# so, without nginx): a hub-layout URL (ORG/MODEL/resolve/main/) installs as ORG__MODEL with the
# library given by URL, and the installed tree passes `modelpkg check` with that library bound.
# usage: test_cli_mlc_install.sh MODELPKG SOURCE_DIR
set -uo pipefail
MPK="$1"
SRC="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/expect.sh"
T="$(mktemp -d)"
NGINX_PID=""
cleanup() {
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

cp -r "$SRC/examples/gemma4-audio" "$T/gemma"
chmod -R u+w "$T/gemma"
echo '{"model": {"type": "BPE"}}' > "$T/gemma/tokenizer.json"
LIB="$T/gemma/lib/gemma4-audio-webgpu.wasm"

# ---- from a directory
expect dir_install 0 'OK: installed .* into .*/cache/gemma \(1 shards, 704 bytes: 704 fetched.*library gemma4-audio-webgpu.wasm' -- \
  "$MPK" mlc install "$T/gemma" --cache "$T/cache" --lib "$LIB"
expect dir_check 0 'the library installed with the model is bound: gemma4-audio-webgpu.wasm' -- "$MPK" check "$T/cache/gemma"
expect dir_check_ok 0 'OK: all checks hold' -- "$MPK" check "$T/cache/gemma"
expect dir_noop 0 'installed already, unchanged \(1 shards, 704 bytes\): nothing fetched' -- \
  "$MPK" mlc install "$T/gemma" --cache "$T/cache" --lib "$LIB"
expect dir_noop_json 0 '"unchanged": true' -- "$MPK" mlc install "$T/gemma" --cache "$T/cache" --lib "$LIB" --json
expect dir_json_fields 0 '"tree": ".*/cache/gemma",' -- "$MPK" mlc install "$T/gemma" --cache "$T/cache" --lib "$LIB" --json
expect dir_verify 0 'unchanged' -- "$MPK" mlc install "$T/gemma" --cache "$T/cache" --lib "$LIB" --verify
# without the library, the model is another install: the tree is replaced, the shard copied from it
expect dir_nolib 0 'OK: installed .*704 bytes: 0 fetched, 0 resumed, 704 copied from the previous install\), replacing' -- \
  "$MPK" mlc install "$T/gemma" --cache "$T/cache"
check dir_nolib_gone test ! -e "$T/cache/gemma/gemma4-audio-webgpu.wasm"
# a library that does not bind: refused before any shard, the cache untouched, --json says why
expect dir_wrong_lib 1 'parameter_schema_id .*nothing was fetched' -- \
  "$MPK" mlc install "$T/gemma" --cache "$T/other" --lib "$SRC/examples/mismatched-lib/gemma4-audio-other-weights-webgpu.wasm"
check dir_wrong_lib_nothing test ! -e "$T/other"
expect dir_wrong_lib_json 1 '"ok": false' -- \
  "$MPK" mlc install "$T/gemma" --cache "$T/other" --json --lib "$SRC/examples/mismatched-lib/gemma4-audio-other-weights-webgpu.wasm"
expect dir_named 0 'into .*/cache/mine ' -- "$MPK" mlc install "$T/gemma" --cache "$T/cache" --name mine
expect usage_no_cache 2 'SOURCE and --cache are required' -- "$MPK" mlc install "$T/gemma"
expect usage_connections 2 '--connections needs an integer from 1 to 64' -- \
  "$MPK" mlc install "$T/gemma" --cache "$T/cache" --connections 0
expect usage_json 2 '"ok": false' -- "$MPK" mlc install "$T/gemma" --json
expect help 0 'usage: modelpkg mlc install SOURCE --cache DIR' -- "$MPK" mlc install --help
expect group_lists_it 0 'install' -- "$MPK" mlc --help

# ---- over HTTP: a hub layout on this test's own nginx
if case_needs nginx http_install && case_needs curl http_install; then
  NGINX="$(tool_path nginx)"
  mkdir -p "$T/www/org/tiny-model/resolve/main" "$T/www/libs" "$T/ngx"
  cp "$T/gemma/"*.json "$T/gemma/"*.bin "$T/www/org/tiny-model/resolve/main/"
  cp "$LIB" "$T/www/libs/"
  chmod 755 "$T"
  chmod -R a+rX "$T/www"
  PORT="$(free_port)"
  cat > "$T/ngx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $T/ngx/nginx.pid;
error_log $T/ngx/error.log;
events { worker_connections 64; }
http {
  access_log $T/ngx/access.log;
  client_body_temp_path $T/ngx/body; proxy_temp_path $T/ngx/proxy; fastcgi_temp_path $T/ngx/fcgi;
  uwsgi_temp_path $T/ngx/uwsgi; scgi_temp_path $T/ngx/scgi;
  default_type application/octet-stream;
  server { listen 127.0.0.1:$PORT; root $T/www; }
}
EOF
  "$NGINX" -c "$T/ngx/nginx.conf" -p "$T/ngx" 2>"$T/ngx/start.log" &
  NGINX_PID=$!
  BASE="http://127.0.0.1:$PORT"
  for _ in $(seq 50); do curl -fsS -o /dev/null "$BASE/libs/gemma4-audio-webgpu.wasm" 2>/dev/null && break; sleep 0.1; done
  expect http_install 0 'OK: installed http://127.0.0.1:[0-9]+/org/tiny-model/resolve/main/ into .*/hcache/org__tiny-model ' -- \
    "$MPK" mlc install "$BASE/org/tiny-model" --cache "$T/hcache" --lib "$BASE/libs/gemma4-audio-webgpu.wasm" --connections 4
  expect http_check 0 'OK: all checks hold' -- "$MPK" check "$T/hcache/org__tiny-model"
  check http_same_shard cmp "$T/gemma/params_shard_0.bin" "$T/hcache/org__tiny-model/params_shard_0.bin"
  check http_same_lib cmp "$LIB" "$T/hcache/org__tiny-model/gemma4-audio-webgpu.wasm"
  expect http_noop_json 0 '"fetched_bytes": 0,' -- \
    "$MPK" mlc install "$BASE/org/tiny-model" --cache "$T/hcache" --lib "$BASE/libs/gemma4-audio-webgpu.wasm" --json
  expect http_404 1 'mlc-chat-config.json' -- "$MPK" mlc install "$BASE/org/absent" --cache "$T/hcache2" --retries 1
  check http_404_nothing test ! -e "$T/hcache2/org__absent"
fi
finish test_cli_mlc_install
