# Shared by the device-lifecycle tests (test_lifecycle.sh, test_lifecycle_crash.sh,
# test_reference_tree.sh): source it after tests/integration/expect.sh, with T (the test's temp dir)
# and MPK set.

# start_nginx ROOT [RATE]: a real nginx on 127.0.0.1 on a free port serving ROOT at /, and ROOT
# again at /slow/ throttled to RATE (nginx limit_rate, default 4m per connection) and at /slower/ to
# 64 KiB/s. Sets BASE and
# NGINX_PID; waits until it serves (a file ROOT/.probe). Stop it with stop_nginx (the EXIT trap).
start_nginx() {
  local root="$1" rate="${2:-4m}" ngx="$T/ngx" bin
  bin="$(tool_path nginx)"
  mkdir -p "$ngx"
  echo probe >"$root/.probe"
  # nginx's workers run as an unprivileged user: the served tree must be readable by anyone.
  chmod 755 "$T"
  chmod -R a+rX "$root"
  NGINX_PORT="$(free_port)"
  cat >"$ngx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $ngx/nginx.pid;
error_log $ngx/error.log;
events { worker_connections 256; }
http {
  log_format t '\$status \$request_method \$uri \$http_range';
  access_log $ngx/access.log t;
  client_body_temp_path $ngx/body; proxy_temp_path $ngx/proxy; fastcgi_temp_path $ngx/fcgi;
  uwsgi_temp_path $ngx/uwsgi; scgi_temp_path $ngx/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $root;
    location /slow/ { alias $root/; limit_rate $rate; }
    location /slower/ { alias $root/; limit_rate 64k; }
  }
}
EOF
  "$bin" -c "$ngx/nginx.conf" -p "$ngx" 2>"$ngx/start.log" &
  NGINX_PID=$!
  BASE="http://127.0.0.1:$NGINX_PORT"
  for _ in $(seq 50); do curl -fsS -o /dev/null "$BASE/.probe" 2>/dev/null && return 0; sleep 0.1; done
  cat "$ngx/start.log" "$ngx/error.log" 2>/dev/null
  echo "FAIL: nginx did not start"; echo "$pass passed, $((fail + 1)) failed"; exit 1
}
stop_nginx() { [ -z "${NGINX_PID:-}" ] || { kill "$NGINX_PID" 2>/dev/null; wait "$NGINX_PID" 2>/dev/null; NGINX_PID=""; }; }

# serve ROOT NAME PKG: ROOT/NAME becomes a copy of package PKG, replaced in one rename (a hub repo
# whose content moves from one version to the next under the same URL).
serve() {
  rm -rf "$1/.$2.next"
  cp -r "$3" "$1/.$2.next"
  chmod -R a+rX "$1/.$2.next"
  rm -rf "$1/.$2.prev"
  [ ! -e "$1/$2" ] || mv "$1/$2" "$1/.$2.prev"
  mv "$1/.$2.next" "$1/$2"
  rm -rf "$1/.$2.prev"
}

# jq_py FILE EXPR: EXPR (python, `d` the parsed JSON) printed; empty when FILE is not JSON.
jq_py() { /usr/bin/python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1]))
except Exception: sys.exit(0)
v=eval(sys.argv[2]); print(json.dumps(v) if isinstance(v,(dict,list,bool)) or v is None else v)' "$1" "$2"; }

# payload DIR: "<sha256>  <path>" of every regular file of an installed tree that is the model:
# no component starting with a dot (the merge record, the adapters merged and their copies, the
# gate's stamp, journals), no kept base (<tensor>.modelpkg-base, mt merge --keep-base) and not the
# install records (which hold an id and a time). Sorted, one line each.
payload() {
  # Globbed by bash and hashed by one sha256sum: no find/sort/xargs (the crash test calls this a
  # thousand times on a busy machine). Bash sorts a glob's matches; LC_ALL=C makes it byte order.
  local LC_ALL=C f rel out
  local -a files=()
  local o set=()
  for o in globstar dotglob nullglob; do shopt -q "$o" || set+=("$o"); done
  [ ${#set[@]} -eq 0 ] || shopt -s "${set[@]}"
  for f in "$1"/**; do
    rel="${f#"$1"/}"
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    case "/$rel" in */.* | *.modelpkg-base | */modelpkg_install.json | */install_record.json) continue ;; esac
    # PAYLOAD_SKIP_TXN=1: also without a killed transaction's temporaries (<final>.<txn>-txn.XXXXXX)
    case "${PAYLOAD_SKIP_TXN:-}$rel" in 1*-txn.??????) continue ;; esac
    files+=("$f")
  done
  [ ${#set[@]} -eq 0 ] || shopt -u "${set[@]}"
  [ ${#files[@]} -gt 0 ] || return 0
  out="$(sha256sum -- "${files[@]}")"
  printf '%s\n' "${out//"  $1/"/  ./}"
}

# installed_path PKGPATH VARIANT: where the installer puts a package file (docs/mt-install.md,
# "Installed layout").
installed_path() {
  local p="$1" v="$2"
  case "$p" in
    "variants/$v/inference/"*) echo "inference/${p#variants/"$v"/inference/}" ;;
    "variants/$v/train/"*) echo "train/${p#variants/"$v"/train/}" ;;
    "variants/$v/embedding/"*) echo "embedding/${p#variants/"$v"/embedding/}" ;;
    "shared/tokenizer/"*) echo "tokenizer/${p#shared/tokenizer/}" ;;
    "variants/$v/checksums.json") echo checksums.json ;;
    *) echo "$p" ;;
  esac
}

# expected_payload PKG VARIANT [FEATURES...]: what payload() of a fresh install of PKG's VARIANT is:
# the files of the groups core, checksums and FEATURES (default inference train), at their installed
# paths, with the package's bytes.
expected_payload() {
  local pkg="$1" v="$2" p; shift 2
  local feats=("${@:-inference}")
  [ $# -gt 0 ] || feats=(inference train)
  {
    for p in mobiletransformers_manifest.json shared/tokenizer/tokenizer.json shared/chat_template.jinja \
      shared/config.json shared/generation_config.json "variants/$v/checksums.json"; do
      [ -f "$pkg/$p" ] && printf '%s  ./%s\n' "$(sha256sum <"$pkg/$p" | cut -c1-64)" "$(installed_path "$p" "$v")"
    done
    for f in "${feats[@]}"; do
      [ -d "$pkg/variants/$v/$f" ] || continue
      (cd "$pkg" && find "variants/$v/$f" -type f -print) | while read -r p; do
        printf '%s  ./%s\n' "$(sha256sum <"$pkg/$p" | cut -c1-64)" "$(installed_path "$p" "$v")"
      done
    done
  } | LC_ALL=C sort -k2
}

# gson_record FILE: exit 0 when FILE is an install record the reference runtime's reader accepts
# (InstallRecord.read: Gson into {repoId: String, variantId: String, features: List<String>,
# installedAtEpochMs: Long}, kept only when repoId is not blank); prints why not. With EXPECT_REPO,
# EXPECT_VARIANT and EXPECT_FEATURES (comma list) set, also checks those values.
gson_record() {
  /usr/bin/python3 - "$1" <<'PY'
import json, os, sys
p = sys.argv[1]
try:
    raw = open(p, "rb").read()
    d = json.loads(raw.decode("utf-8"))
except Exception as e:
    sys.exit("%s: not JSON Gson reads: %s" % (p, e))
if not isinstance(d, dict):
    sys.exit("%s: not a JSON object" % p)
why = []
if not isinstance(d.get("repoId"), str) or not d["repoId"].strip():
    why.append("repoId is not a non-blank string (InstallRecord.read drops the record)")
if "variantId" in d and not isinstance(d["variantId"], str):
    why.append("variantId is not a string")
if "features" in d and not (isinstance(d["features"], list) and all(isinstance(f, str) for f in d["features"])):
    why.append("features is not an array of strings")
t = d.get("installedAtEpochMs", 0)
if isinstance(t, bool) or not isinstance(t, int) or not (-2**63 <= t < 2**63):
    why.append("installedAtEpochMs is not an integer a Java long holds")
want = {"repoId": os.environ.get("EXPECT_REPO"), "variantId": os.environ.get("EXPECT_VARIANT")}
for k, v in want.items():
    if v is not None and d.get(k) != v:
        why.append("%s is %r, expected %r" % (k, d.get(k), v))
if os.environ.get("EXPECT_FEATURES") is not None and d.get("features") != os.environ["EXPECT_FEATURES"].split(","):
    why.append("features is %r, expected %r" % (d.get("features"), os.environ["EXPECT_FEATURES"].split(",")))
if isinstance(t, int) and not isinstance(t, bool) and os.environ.get("EXPECT_RECENT") and not (1.7e12 < t < 4.1e12):
    why.append("installedAtEpochMs %r is not a time in milliseconds since 1970" % t)
if why:
    sys.exit("%s: %s" % (p, "; ".join(why)))
PY
}

# gson_exact FILE: FILE is byte for byte what Gson's toJson(InstallRecord) writes: compact, the four
# fields in declaration order (repoId, variantId, features, installedAtEpochMs), nothing else.
gson_exact() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read()
d = json.loads(raw)
keys = ["repoId", "variantId", "features", "installedAtEpochMs"]
want = json.dumps({k: d.get(k) for k in keys}, separators=(",", ":"), ensure_ascii=False).encode()
if list(d) != keys or raw != want:
    sys.exit("%s: %r is not Gson's %r" % (sys.argv[1], raw, want))
PY
}
