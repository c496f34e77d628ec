#!/usr/bin/env bash
# Every command and subcommand has its own --help, printed from its option table: it exits 0, its
# usage line names the command, and it documents every option the command accepts. Conversely,
# every option a command documents is accepted (never "unknown option"). A group (mlc, mt,
# mt handoff) alone or with --help lists its subcommands. usage: test_cli_help.sh MODELPKG SOURCE_DIR
set -uo pipefail
MPK=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/expect.sh"

commands=("check" "fit" "audio" "image" "mlc id" "mlc metadata" "mlc functions" "mlc embed" "mlc compat" "mlc build" "mlc plan" "mlc urls" "mlc install" "mt build" "mt reseal"
  "mt handoff fmt" "mt handoff build" "mt graph" "mt inspect" "mt tensors" "mt merge" "mt restore" "mt select" "mt plan"
  "mt install" "mt parity")
for c in "${commands[@]}"; do
  # shellcheck disable=SC2086
  timeout 10 "$MPK" $c --help >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc = 0 ] || { bad "$c --help: exit $rc"; continue; }
  help=$(cat "$T/out")
  case $help in "usage: modelpkg $c "*) ok ;; *) bad "$c --help: the usage line does not name '$c': ${help%%$'\n'*}" ;; esac
  case $help in *"-h, --help"*) ok ;; *) bad "$c --help does not document -h, --help" ;; esac
  # Every option documented (an options-section line) is accepted: never "unknown option".
  opts=$(sed -n '/^options:/,/^$/p' "$T/out" | grep -oE '^  (-[a-z], )?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+' | sort -u)
  [ -n "$opts" ] || { bad "$c --help documents no option"; continue; }
  for o in $opts; do
    [ "$o" = --help ] && continue
    # shellcheck disable=SC2086
    timeout 10 "$MPK" $c "$o" >/dev/null 2>"$T/err" </dev/null
    if grep -q "unknown option '$o'" "$T/err"; then bad "$c: $o is documented but refused as unknown"; else ok; fi
  done
  # A -h works as --help.
  # shellcheck disable=SC2086
  timeout 10 "$MPK" $c -h >"$T/h" 2>/dev/null && cmp -s "$T/h" "$T/out" && ok || bad "$c -h differs from --help"
done

# Every option literal the CLI's sources accept is documented by some command's --help.
all_help=$(for c in "${commands[@]}"; do "$MPK" $c --help 2>/dev/null; done)
for o in $(grep -ohE '\{"--[a-z0-9-]+"' "$SRC"/src/cli/*.c "$SRC"/src/cli/*.h | grep -oE -- '--[a-z0-9-]+' | sort -u); do
  case $all_help in *"$o"*) ok ;; *) bad "option $o is in src/cli's tables but in no command's --help" ;; esac
done

# Groups: alone (usage error, the listing on stderr) and with --help (the listing on stdout).
for g in "mlc" "mt" "mt handoff"; do
  # shellcheck disable=SC2086
  timeout 10 "$MPK" $g --help >"$T/out" 2>/dev/null
  rc=$?
  [ $rc = 0 ] && ok || bad "$g --help: exit $rc"
  grep -q "^usage: modelpkg $g <subcommand>" "$T/out" && ok || bad "$g --help is not the listing of $g"
  for c in "${commands[@]}"; do
    case $c in "$g "*)
      rest=${c#"$g "}
      case $rest in *" "*) continue ;; esac # a subgroup's subcommand is listed by the subgroup
      grep -q "modelpkg $c " "$T/out" && ok || bad "$g --help does not list $c" ;;
    esac
  done
  # shellcheck disable=SC2086
  timeout 10 "$MPK" $g >/dev/null 2>"$T/err"
  rc=$?
  [ $rc = 2 ] && ok || bad "$g alone: exit $rc (wanted 2)"
  grep -q "^usage: modelpkg $g <subcommand>" "$T/err" && ok || bad "$g alone does not list its subcommands"
done
# mt --help is not mt build's help any more.
mth=$("$MPK" mt --help); case $mth in "usage: modelpkg mt build"*) bad "mt --help prints mt build's help" ;; *) ok ;; esac

finish test_cli_help
