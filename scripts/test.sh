#!/usr/bin/env bash
# Runs the test suite (arguments go to `swift test`) with its output flushed line by line,
# so that a CI log shows every test that started, under a time limit: a run still going
# after TEST_TIME_LIMIT seconds (default 1200) is stopped and the tests that never ended
# are named. A failed run ends with its failures again, so that the end of a long log says
# what failed.
set -uo pipefail

limit=${TEST_TIME_LIMIT:-1200}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

timeout --kill-after=30 "$limit" stdbuf -oL -eL swift test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    name() { sed -E -e 's/^.*Test (.*) (started|passed|failed).*$/\1/' -e 's/ with [0-9]+ test cases?$//' | sort -u; }
    echo "test: the suite did not end within ${limit}s. Tests that started and never ended:"
    comm -23 <(grep -E 'Test .* started\.$' "$log" | grep -v 'Test case passing' | name) <(grep -E 'Test .* (passed|failed) ' "$log" | name) | sed 's/^/  /'
fi
if [ "$status" != 0 ]; then
    echo "test: the run failed (status $status). Its failures:"
    grep -E -A2 '(✘ Test .* recorded an issue)|(error: .*XCT)|(: error: )|Fatal error' "$log" | grep -E '✘|↳|error|Fatal' | head -60 | sed 's/^/  /'
fi
exit "$status"
