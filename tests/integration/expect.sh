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
    fail=$((fail + 1)); echo "FAIL: $name (exit $rc, wanted $status; pattern '$pattern')"; printf '%s\n' "$out" | head -20
  fi
}
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
