# Shared by the CLI integration tests (source it): pass/fail counters and the expect helper.
# Every command runs under a timeout, so a hang is a failure, never a stuck suite.
pass=0; fail=0
EXPECT_TIMEOUT="${EXPECT_TIMEOUT:-60}"

# expect NAME STATUS PATTERN -- CMD...: within EXPECT_TIMEOUT seconds, CMD exits STATUS and its
# stdout+stderr match PATTERN (grep -E).
expect() {
  local name="$1" status="$2" pattern="$3"; shift 4
  local out rc
  # MPK_TEST_TIMEOUT_FACTOR: a cross build's tests run under an emulator (tests/cross.cmake).
  out="$(timeout "$((EXPECT_TIMEOUT * ${MPK_TEST_TIMEOUT_FACTOR:-1}))" "$@" 2>&1)"; rc=$?
  # A here-string, not a pipe: with pipefail, grep -q exiting at the first match could SIGPIPE printf.
  if [ "$rc" -eq "$status" ] && grep -Eq -- "$pattern" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: $name (exit $rc, wanted $status; pattern '$pattern')"; first_lines 20 "$out"
  fi
}
# ok [NAME] / bad WHAT: count a passed / failed check (ok prints "ok: NAME" when given one).
ok() { pass=$((pass + 1)); [ $# -eq 0 ] || echo "ok: $*"; }
# first_lines N TEXT: the first N lines of TEXT. Not `printf | head`: head exiting early would
# SIGPIPE the writer, and under pipefail that status is the pipeline's (test_no_pipe_grep.sh).
first_lines() { local -a l; mapfile -t -n "$1" l <<<"$2"; [ ${#l[@]} -eq 0 ] || printf '%s\n' "${l[@]}"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# check NAME CMD...: ok NAME when CMD succeeds, else bad NAME.
check() { local what="$1"; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
# free_port: a TCP port on 127.0.0.1 nothing listens on now (for a test's own server).
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- tools a test needs (issue 17). Absent, the test is skipped, never passed and never failed:
# it prints "SKIP: <test>: <tool> not found (scripts/setup.sh --test installs it)" and exits 77,
# which ctest counts as skipped (SKIP_RETURN_CODE 77). A test that needs a tool for some cases only
# skips those, each with its own SKIP line, and exits 77 only when nothing ran (finish).
TEST_NAME="${TEST_NAME:-$(basename "$0" .sh)}"
SKIP_HOW="scripts/setup.sh --test installs it"
skipped=0
# tool_path TOOL: TOOL's path, from $PATH and the sbin directories (Debian's nginx is /usr/sbin/nginx,
# off a user's PATH); MPK_TEST_TOOL_PATH, when set, is the whole search path (test_skips.sh hides a
# tool with it). An absolute TOOL is itself when executable.
tool_path() {
  local d IFS=:
  case "$1" in /*) [ -x "$1" ] && printf '%s\n' "$1"; return ;; esac
  for d in ${MPK_TEST_TOOL_PATH:-$PATH:/usr/local/sbin:/usr/sbin:/sbin}; do
    [ -n "$d" ] && [ -f "$d/$1" ] && [ -x "$d/$1" ] && { printf '%s\n' "$d/$1"; return 0; }
  done
  return 1
}
# have_tool TOOL [CHECK...]: TOOL is there, and CHECK (a command: a version probe, a module load) succeeds.
have_tool() { local t="$1"; shift; tool_path "$t" >/dev/null || return 1; [ $# -eq 0 ] || "$@" >/dev/null 2>&1; }
# have_py MODULE...: /usr/bin/python3 (Debian's, with python3-numpy, -onnx, -pil) imports each MODULE.
have_py() { local m; for m in "$@"; do have_tool /usr/bin/python3 /usr/bin/python3 -c "import $m" || return 1; done; }
# skip_test TOOL: the whole test is skipped for want of TOOL.
skip_test() { echo "SKIP: $TEST_NAME: $1 not found ($SKIP_HOW)"; exit 77; }
# need_tool TOOL [CHECK...] / need_py MODULE...: skip the whole test without it.
need_tool() { have_tool "$@" || skip_test "$1"; }
need_py() { local m; for m in "$@"; do have_py "$m" || skip_test "/usr/bin/python3 module $m"; done; }
# skip_case CASE TOOL: say that CASE is skipped for want of TOOL (and count it).
skip_case() { skipped=$((skipped + 1)); echo "SKIP: $TEST_NAME: $1: $2 not found ($SKIP_HOW)"; }
# case_needs TOOL CASE [CHECK...] / case_needs_py MODULE CASE: true when CASE can run; else says why,
# false: `case_needs script progress_tty && expect progress_tty ...`.
case_needs() { local t="$1" c="$2"; shift 2; have_tool "$t" "$@" && return 0; skip_case "$c" "$t"; return 1; }
case_needs_py() { have_py "$1" && return 0; skip_case "$2" "/usr/bin/python3 module $1"; return 1; }
# as_limit CMD...: sets AS_LIMIT to the 1 GiB address-space limit (prlimit --as=1073741824 --) that
# bounded-memory cases run under. Without prlimit they run unbounded, saying so with a SKIP line (the
# bound is what is skipped); when CMD cannot start under the limit (a sanitizer build reserves
# terabytes of shadow memory) too, with a note.
as_limit() {
  AS_LIMIT=()
  if ! have_tool prlimit; then skip_case "the 1 GiB address-space limit (cases run without it)" prlimit; return 1; fi
  if ! prlimit --as=1073741824 -- "$@" >/dev/null 2>&1; then
    echo "note: $1 cannot start under prlimit --as (a sanitizer build): bounded cases run without the limit"; return 1
  fi
  AS_LIMIT=(prlimit --as=1073741824 --)
}
# ---- components (docs/components.md): a test with cases of a component that may be off reads the
# command's `components:` line; in a build without it those cases check the refusal instead.
# has_component CLI NAME: CLI (modelpkg) was built with component NAME.
has_component() {
  local v; v=$("$1" --version) || return 1
  v=$(sed -n 's/^components: //p' <<<"$v")
  case " $v " in *" $2 "*) return 0 ;; *) return 1 ;; esac
}
# refused_without NAME CMD...: CMD exits 1 and says, on stderr, that modelpkg was built without
# component NAME (the library's stub message); false, with what it did instead on stdout, otherwise.
refused_without() {
  local comp="$1" err rc; shift
  err=$("$@" 2>&1 >/dev/null); rc=$?
  if [ $rc = 1 ] && grep -q "this modelpkg was built without the $comp component (-DMPK_WITH_${comp^^}=ON)" <<<"$err"; then
    return 0
  fi
  echo "not refused for want of $comp: exit $rc: $err"; return 1
}
# finish [LABEL]: the summary line; exit 1 when a check failed, 77 when every case was skipped, else 0.
finish() {
  local s=""; [ "$skipped" -eq 0 ] || s=", $skipped skipped"
  echo "${1:+$1: }$pass passed, $fail failed$s"
  [ "$fail" -eq 0 ] || exit 1
  [ "$pass" -gt 0 ] || [ "$skipped" -eq 0 ] || exit 77
  exit 0
}
