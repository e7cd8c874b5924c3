# shellcheck shell=bash
# Helpers for tonari system tests that run inside the test-bed VM (test/vm/run copies this file
# next to the test as $TONARI_VM_SHARE/testlib.sh). Conventions follow systemd's TEST-NN suites:
#
#   #!/bin/bash
#   set -eux
#   set -o pipefail
#   . "$TONARI_VM_SHARE/testlib.sh"
#
#   testcase_something() {
#           trap 'rm -rf /tmp/x' EXIT       # cleanup: each testcase runs in its own subshell
#           assert_eq 2 "$(numactl -H | awk '/^available:/ {print $2}')"
#   }
#
#   run_testcases
#
# run_testcases runs every function named testcase_* in the order they are defined (or only the
# ones named in $TESTCASES, space- or comma-separated), each in a subshell with `set -e`, so one
# failing testcase does not stop the others. It prints one result line per testcase and a closing
# "N passed, N failed" line, and returns non-zero if any testcase failed.
# A test script that cannot run in this VM should `exit 77` with a one-line reason (skip).

set -eux
set -o pipefail

# Print without the xtrace noise, keeping xtrace as it was.
_tl_say() {
        local xtrace=0
        [[ $- == *x* ]] && xtrace=1
        set +x
        printf '%s\n' "$*" >&2
        ((xtrace)) && set -x
        return 0
}

_tl_fail() {
        _tl_say "ASSERTION FAILED: $*"
        return 1
}

# assert_eq EXPECTED ACTUAL [WHAT]
assert_eq() {
        [[ "$2" == "$1" ]] || _tl_fail "${3:-assert_eq}: expected '$1', got '$2'"
}

# assert_match REGEX ACTUAL [WHAT]     (bash extended regex, unanchored unless you anchor it)
assert_match() {
        [[ "$2" =~ $1 ]] || _tl_fail "${3:-assert_match}: expected a match for /$1/, got '$2'"
}

# assert_rc EXPECTED_RC COMMAND [ARGS...]
assert_rc() {
        local expected=$1 rc=0
        shift
        "$@" || rc=$?
        ((rc == expected)) || _tl_fail "assert_rc: expected exit code $expected, got $rc from: $*"
}

# _tl_cmp OP A B: numeric comparison, integers or decimals.
_tl_cmp() {
        local op=$1 a=$2 b=$3 num='^-?[0-9]+(\.[0-9]+)?$'
        [[ "$a" =~ $num ]] || _tl_fail "assert: '$a' is not a number" || return
        [[ "$b" =~ $num ]] || _tl_fail "assert: '$b' is not a number" || return
        awk -v a="$a" -v b="$b" "BEGIN { exit !(a $op b) }"
}

# assert_le ACTUAL MAX [WHAT]          ACTUAL <= MAX
assert_le() {
        _tl_cmp '<=' "$1" "$2" || _tl_fail "${3:-assert_le}: expected <= $2, got $1"
}

# assert_ge ACTUAL MIN [WHAT]          ACTUAL >= MIN
assert_ge() {
        _tl_cmp '>=' "$1" "$2" || _tl_fail "${3:-assert_ge}: expected >= $2, got $1"
}

# The testcase_* functions in definition order (by line number: keep them in one file).
_tl_list_testcases() {
        local name
        shopt -s extdebug
        for name in $(compgen -A function testcase_); do
                declare -F "$name"
        done | sort -k2,2n | cut -d' ' -f1
        shopt -u extdebug
}

run_testcases() {
        local names=() name rc start_usec ms passed=0 failed=0 failed_names=()
        if [[ -n "${TESTCASES:-}" ]]; then
                read -ra names <<<"${TESTCASES//,/ }"
        else
                mapfile -t names < <(_tl_list_testcases)
        fi
        ((${#names[@]} > 0)) || _tl_fail "run_testcases: no testcase_* functions" || return

        for name in "${names[@]}"; do
                declare -F "$name" >/dev/null || _tl_fail "run_testcases: no such testcase: $name" || return
                _tl_say "=== RUN   $name"
                start_usec=${EPOCHREALTIME/./}
                rc=0
                # errexit is switched off here so that a failing testcase is reported, and on
                # again inside the subshell so the testcase stops at its first failing command.
                set +e
                (set -e; "$name")
                rc=$?
                set -e
                ms=$(( (${EPOCHREALTIME/./} - start_usec) / 1000 ))
                if ((rc == 0)); then
                        passed=$((passed + 1))
                        _tl_say "--- PASS  $name ($((ms / 1000)).$(printf '%03d' $((ms % 1000))) s)"
                else
                        failed=$((failed + 1))
                        failed_names+=("$name")
                        _tl_say "--- FAIL  $name (rc=$rc, $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s)"
                fi
        done

        ((failed == 0)) || _tl_say "failed testcases: ${failed_names[*]}"
        _tl_say "$passed passed, $failed failed"
        ((failed == 0))
}
