#!/usr/bin/env bash
# No shell script under tests/, bench/ or scripts/ pipes into a reader that stops early (`grep -q`,
# `grep -m N`, `grep -l`, `head`) where pipefail is on. The reader exiting at its first match closes
# the pipe; a writer still writing then dies of SIGPIPE (status 141), and pipefail makes that the
# pipeline's status: a check that matched reports a failure, about once in 2,000 runs (issue 17).
# Capture the output, then test it: `out=$(cmd) || ...; grep -q PATTERN <<<"$out"`, or a `case`;
# `awk 'NR <= N'` reads to the end where the first lines are wanted; expect.sh has first_lines.
#
# A file counts as pipefail when it sets it, or when a file that sets it sources it (expect.sh).
# A line that must keep such a pipe says why with the comment `# pipe-ok: REASON`.
# usage: test_no_pipe_grep.sh [SOURCE_DIR]   (exit 0 clean, 1 with each offence as FILE:LINE: TEXT)
set -uo pipefail
SRC="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
[ -d "$SRC" ] || { echo "FAIL: no source directory $SRC"; exit 1; }

# scan DIR: print each offence under DIR's tests/, bench/ and scripts/ as FILE:LINE: TEXT, then a
# last line "scanned N M" (N shell scripts, M under pipefail).
scan() (
  cd "$1" || exit 1
  # The shell scripts: *.sh, and files whose first line is a sh/bash shebang.
  mapfile -t FILES < <(find tests bench scripts -type f ! -path '*/corpus/*' ! -path '*/data/*' 2>/dev/null | LC_ALL=C sort)
  scripts=()
  for f in "${FILES[@]}"; do
    case "$f" in
      tests/integration/test_no_pipe_grep.sh) ;;  # this file: its planted offences are the self-test's
    *.sh) scripts+=("$f") ;;
      *.py | *.c | *.h | *.js | *.json | *.md | *.txt | *.cmake | CMakeLists.txt) ;;
      *) IFS= read -r first <"$f" 2>/dev/null || first=""
         case "$first" in '#!'*/sh* | '#!'*bash*) scripts+=("$f") ;; esac ;;
    esac
  done

  # Which of them run under pipefail: their own `set -o pipefail` / `set -...o pipefail`, or sourced
  # (`. path/NAME` / `source path/NAME`) by one that does.
  declare -A pf=()
  for f in "${scripts[@]}"; do
    if grep -Eq '^[^#]*\bset\b[^#]*\bpipefail\b' "$f"; then pf[$f]=1; fi
  done
  for f in "${scripts[@]}"; do
    [ -n "${pf[$f]:-}" ] || continue
    while IFS= read -r name; do
      for g in "${scripts[@]}"; do [ "$(basename "$g")" = "$name" ] && pf[$g]=1; done
    done < <(grep -v '^[[:space:]]*#' "$f" | grep -oE '(^|[;&|[:space:]])(\.|source)[[:space:]].*/[A-Za-z0-9_.-]+\.sh' | sed 's#.*/##')
  done

  # The offences, on logical lines (a line ending in `\` or `|`, or continued by one starting with `|`,
  # is joined to the next), comments dropped, `||` set aside.
  for f in "${scripts[@]}"; do
    [ -n "${pf[$f]:-}" ] || continue
    out="$(awk -v file="$f" '
      function code(s,   i, c, q, r) {          # the line without a trailing comment (outside quotes)
        q = ""; r = ""
        for (i = 1; i <= length(s); i++) {
          c = substr(s, i, 1)
          if (q == "" && c == "#" && (i == 1 || substr(s, i - 1, 1) ~ /[ \t;|&(]/)) break
          if (c == "\\" && q != "\x27") { r = r c substr(s, i + 1, 1); i++; continue }
          if (q == "" && (c == "\"" || c == "\x27")) q = c; else if (q == c) q = ""
          r = r c
        }
        return r
      }
      function continues(s) { s = code(s); return s ~ /\\$/ || s ~ /(^|[^|])\|[ \t]*$/ }
      function check(text, at,   t) {
        t = text; gsub(/\|\|/, " OR ", t)
        if (t ~ /\|[ \t\n]*(grep[ \t]([^|;&]*[ \t])?(-[A-Za-z]*[qml][A-Za-z0-9]*|--quiet|--silent|--max-count|--files-with-matches)([ \t=]|$)|head([ \t;)]|$))/)
          printf "%s:%d: %s\n", file, at, text
      }
      { L[NR] = $0 }
      END {
        for (i = 1; i <= NR; i++) {
          start = i; text = code(L[i]); raw = L[i]
          while (i < NR && (continues(L[i]) || L[i + 1] ~ /^[ \t]*\|[^|]/)) { i++; text = text "\n" code(L[i]); raw = raw "\n" L[i] }
          if (raw !~ /#[ \t]*pipe-ok:/) check(text, start)
        }
      }' "$f")"
    [ -z "$out" ] || printf '%s\n' "$out"
  done

  echo "scanned ${#scripts[@]} ${#pf[@]}"
)

# The scan itself must catch what it is for: a planted tree, every offence on a line of its own
# and every safe form beside it.
SELF="$(mktemp -d)"; trap 'rm -rf "$SELF"' EXIT
mkdir -p "$SELF/tests/integration" "$SELF/bench" "$SELF/scripts"
cat >"$SELF/tests/integration/planted.sh" <<'SH'
#!/usr/bin/env bash
set -euo pipefail
. "$(dirname "$0")/helper.sh"
echo "$out" | grep -q x || fail 1
"$CLI" --help | grep -Eq "usage" || fail 2
printf '%s\n' "$out" | head -5
cmd arg |
  grep -m1 y
cmd arg \
  | grep --quiet z
ls | grep -l a
grep -q x <<<"$out" || fail ok1
out=$(cmd) && grep -c x <<<"$out"
a || grep -q x file
cmd | awk 'NR <= 5'
head -c 10 file
echo x | grep y  # pipe-ok: reads it all
# echo "$out" | grep -q in a comment
SH
printf '%s\n' '#!/bin/sh' 'echo "$out" | head -1' >"$SELF/tests/integration/helper.sh"
printf '%s\n' '#!/bin/sh' 'echo "$out" | grep -q x' >"$SELF/scripts/no_pipefail"
got="$(scan "$SELF" | sed -n 's/^\([^:]*:[0-9]*\):.*/\1/p' | tr '\n' ' ')"
want="tests/integration/helper.sh:2 tests/integration/planted.sh:4 tests/integration/planted.sh:5 tests/integration/planted.sh:6 tests/integration/planted.sh:7 tests/integration/planted.sh:9 tests/integration/planted.sh:11 "
if [ "$got" != "$want" ]; then
  echo "FAIL: the scan of a planted tree found: $got"
  echo "      it should have found:          $want"
  exit 1
fi

out="$(scan "$SRC")" || { echo "FAIL: cannot scan $SRC"; exit 1; }
offences="$(grep -v '^scanned ' <<<"$out")"
read -r _ n m < <(grep '^scanned ' <<<"$out")
if [ -n "$offences" ]; then
  printf '%s\n' "$offences"
  echo "FAIL: a pipe into grep -q / grep -m / grep -l / head under pipefail (above): capture the output, then test it (grep -q PATTERN <<<\"\$out\")"
  exit 1
fi
echo "ok: $n shell scripts under tests/, bench/, scripts/, $m under pipefail: no pipe into an early-exiting reader (and the planted tree's $(wc -w <<<"$want") offences found)"
