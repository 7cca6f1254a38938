#!/usr/bin/env bash
# Java interop tests: the Arrow Flight SQL JDBC driver against a running Orrery server.
# Expects ORRERY_FLIGHT_HOST/PORT, ORRERY_ADMIN_USER/KEY, ORRERY_READER_USER/KEY in the
# environment (test/interop/run.sh sets them). Exits non-zero if any test fails.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v mvn >/dev/null 2>&1; then
  echo "java interop: mvn not found (apt-get install -y maven openjdk-17-jdk-headless)" >&2
  exit 1
fi

MVN=(mvn -B -Dstyle.color=never)

# Resolve everything first so dependency problems show up as such, not as test failures.
if ! "${MVN[@]}" -q dependency:go-offline; then
  echo "java interop: dependency resolution failed" >&2
  exit 1
fi

rm -rf target/surefire-reports
rc=0
"${MVN[@]}" -q test || rc=$?

# -q hides Surefire's summary on success: print one from the reports.
passed=0 failed=0 skipped=0
shopt -s nullglob
for f in target/surefire-reports/TEST-*.xml; do
  head=$(grep -m1 -o '<testsuite [^>]*>' "$f" || true)
  attr() { sed -n "s/.* $1=\"\([0-9]*\)\".*/\1/p" <<<"$head"; }
  t=$(attr tests) fl=$(attr failures) er=$(attr errors) sk=$(attr skipped)
  t=${t:-0} fl=${fl:-0} er=${er:-0} sk=${sk:-0}
  passed=$((passed + t - fl - er - sk))
  failed=$((failed + fl + er))
  skipped=$((skipped + sk))
done
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "java interop: maven exited $rc before reporting test results" >&2
fi
# (maven -q leaves ANSI resets without a newline; start the summary on a line of its own)
echo
echo "java-jdbc: $passed passed, $failed failed, $skipped skipped"
exit "$rc"
