# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Helpers for tonari's shell tests. The host integration tests (test/integration/) source it
# directly; the system tests in the test-bed VM get it from test/vm/run, which copies it next to
# the test as $TONARI_VM_SHARE/testlib.sh. Conventions follow systemd's TEST-NN suites:
#
#   #!/bin/bash
#   set -eux
#   set -o pipefail
#   . "$TONARI_VM_SHARE/testlib.sh"
#
#   testcase_something() {
#           # Cleanup: each testcase runs in its own subshell, so an EXIT trap is scoped to it. The
#           # trap runs after the function returned: it must not use the function's locals.
#           tmp=$(mktemp -d)
#           trap 'rm -rf "$tmp"' EXIT
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

# Assertions run with xtrace off: the trace already shows the call and its arguments, and a
# failure prints expected vs. actual. Each starts with `{ _tl_xt=$-; set +x; } 2>/dev/null` and
# ends with _tl_end, which reports and restores xtrace.
_tl_xt=
_tl_end() {
        local ok=$1
        shift
        ((ok == 0)) || printf 'ASSERTION FAILED: %s\n' "$*" >&2
        [[ $_tl_xt != *x* ]] || set -x
        return "$ok"
}

# assert_eq EXPECTED ACTUAL [WHAT]
assert_eq() {
        { _tl_xt=$-; set +x; } 2>/dev/null
        local ok=0
        [[ "$2" == "$1" ]] || ok=1
        _tl_end "$ok" "${3:-assert_eq}: expected '$1', got '$2'"
}

# assert_match REGEX ACTUAL [WHAT]     (bash extended regex, unanchored unless you anchor it)
assert_match() {
        { _tl_xt=$-; set +x; } 2>/dev/null
        local ok=0
        [[ "$2" =~ $1 ]] || ok=1
        _tl_end "$ok" "${3:-assert_match}: expected a match for /$1/, got '$2'"
}

# assert_rc EXPECTED_RC COMMAND [ARGS...]    (the command runs traced, with errexit off)
assert_rc() {
        local expected=$1 rc=0
        shift
        "$@" || rc=$?
        { _tl_xt=$-; set +x; } 2>/dev/null
        local ok=0
        ((rc == expected)) || ok=1
        _tl_end "$ok" "assert_rc: expected exit code $expected, got $rc from: $*"
}

# assert_rc_match EXPECTED_RC REGEX COMMAND [ARGS...]
#       One run of the command (errexit off; untraced, or the trace of its arguments would be part
#       of the output it is matched against): its exit code must be EXPECTED_RC and its output
#       (stdout and stderr together) must match REGEX. A message checked without the exit code it
#       came with proves nothing: "$(cmd || true)" passes whatever cmd returned.
assert_rc_match() {
        { _tl_xt=$-; set +x; } 2>/dev/null
        local expected=$1 regex=$2 rc=0 out
        shift 2
        out=$("$@" 2>&1) || rc=$?
        local ok=0
        ((rc == expected)) && [[ "$out" =~ $regex ]] || ok=1
        _tl_end "$ok" "assert_rc_match: expected exit code $expected and a match for /$regex/," \
                "got $rc and '$out' from: $*"
}

# _tl_cmp OP A B: numeric comparison of integers or decimals; 2 if either is not a number.
_tl_cmp() {
        local num='^-?[0-9]+(\.[0-9]+)?$'
        [[ "$2" =~ $num && "$3" =~ $num ]] || return 2
        awk -v a="$2" -v b="$3" "BEGIN { exit !(a $1 b) }"
}

# assert_le ACTUAL MAX [WHAT]          ACTUAL <= MAX
assert_le() {
        { _tl_xt=$-; set +x; } 2>/dev/null
        local ok=0
        _tl_cmp '<=' "$1" "$2" || ok=1
        _tl_end "$ok" "${3:-assert_le}: expected a number <= $2, got '$1'"
}

# assert_ge ACTUAL MIN [WHAT]          ACTUAL >= MIN
assert_ge() {
        { _tl_xt=$-; set +x; } 2>/dev/null
        local ok=0
        _tl_cmp '>=' "$1" "$2" || ok=1
        _tl_end "$ok" "${3:-assert_ge}: expected a number >= $2, got '$1'"
}

# cpu_usec PID: the CPU time (user + system) the process has used, in µs, from /proc/PID/stat.
cpu_usec() {
        local ticks
        ticks=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat")
        echo $((ticks * 1000000 / $(getconf CLK_TCK)))
}

# wait_for_tonarid: (VM tests, system bus) at most 10 s until tonarid.service is active again after
# a restart or crash and tonarid owns its name on the bus.
wait_for_tonarid() {
        for _ in $(seq 100); do
                [[ $(systemctl is-active tonarid.service) == active ]] && busctl status org.tonari.Manager1 >/dev/null 2>&1 &&
                        return 0
                sleep 0.1
        done
        return 1
}

# kill_and_wait PID...: SIGKILL and wait (at most 10 s each) until each is gone. A process in a
# cgroup held at a small CPU quota runs (and so dies) only when the kernel gives it CPU again, which
# after an overrun of the quota can take several periods.
kill_and_wait() {
        local p
        kill -KILL "$@" 2>/dev/null || true
        for p in "$@"; do
                timeout 10 tail --pid="$p" -f /dev/null || true
        done
}

# cpu_percent PID SECONDS: the share of one CPU, in percent, the process uses over the next SECONDS.
cpu_percent() {
        local before start used elapsed
        before=$(cpu_usec "$1")
        start=$(date +%s%6N)
        sleep "$2"
        used=$(($(cpu_usec "$1") - before))
        elapsed=$(($(date +%s%6N) - start))
        awk -v u="$used" -v e="$elapsed" 'BEGIN { printf "%.1f", 100 * u / e }'
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
        # The bookkeeping runs untraced; each testcase runs with the caller's xtrace setting.
        { local xt=$-; set +x; } 2>/dev/null
        local names=() name rc start_usec ms passed=0 failed=0 failed_names=()
        if [[ -n "${TESTCASES:-}" ]]; then
                read -ra names <<<"${TESTCASES//,/ }"
        else
                mapfile -t names < <(_tl_list_testcases)
        fi
        if ((${#names[@]} == 0)); then
                echo "run_testcases: no testcase_* functions" >&2
                return 1
        fi

        for name in "${names[@]}"; do
                if ! declare -F "$name" >/dev/null; then
                        echo "run_testcases: no such testcase: $name" >&2
                        return 1
                fi
                echo "=== RUN   $name" >&2
                start_usec=${EPOCHREALTIME/./}
                # errexit is off here so that a failing testcase is reported, and on again inside
                # the subshell so that the testcase stops at its first failing command.
                set +e
                (
                        set -e
                        [[ $xt != *x* ]] || set -x
                        "$name"
                )
                rc=$?
                set -e
                ms=$(( (${EPOCHREALTIME/./} - start_usec) / 1000 ))
                if ((rc == 0)); then
                        passed=$((passed + 1))
                        printf -- '--- PASS  %s (%d.%03d s)\n' "$name" $((ms / 1000)) $((ms % 1000)) >&2
                else
                        failed=$((failed + 1))
                        failed_names+=("$name")
                        printf -- '--- FAIL  %s (rc=%d, %d.%03d s)\n' \
                                "$name" "$rc" $((ms / 1000)) $((ms % 1000)) >&2
                fi
        done

        ((failed == 0)) || echo "failed testcases: ${failed_names[*]}" >&2
        echo "$passed passed, $failed failed" >&2
        [[ $xt != *x* ]] || set -x
        ((failed == 0))
}
