# Shared by the CLI integration tests (source it): pass/fail counters and the expect helper.
# Every command runs under a timeout, so a hang is a failure, never a stuck suite.
pass=0; fail=0
EXPECT_TIMEOUT="${EXPECT_TIMEOUT:-60}"

# expect NAME STATUS PATTERN -- CMD...: within EXPECT_TIMEOUT seconds, CMD exits STATUS and its
# stdout+stderr match PATTERN (grep -E).
expect() {
  local name="$1" status="$2" pattern="$3"; shift 4
  local out rc
  out="$(timeout "$EXPECT_TIMEOUT" "$@" 2>&1)"; rc=$?
  # A here-string, not a pipe: with pipefail, grep -q exiting at the first match could SIGPIPE printf.
  if [ "$rc" -eq "$status" ] && grep -Eq -- "$pattern" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: $name (exit $rc, wanted $status; pattern '$pattern')"; first_lines 20 "$out"
  fi
}
ok() { pass=$((pass + 1)); }
# first_lines N TEXT: the first N lines of TEXT. Not `printf | head`: head exiting early would
# SIGPIPE the writer, and under pipefail that status is the pipeline's (test_no_pipe_grep.sh).
first_lines() { local -a l; mapfile -t -n "$1" l <<<"$2"; [ ${#l[@]} -eq 0 ] || printf '%s\n' "${l[@]}"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
