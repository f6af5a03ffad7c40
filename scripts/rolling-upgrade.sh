#!/usr/bin/env bash
# A rolling upgrade, measured: a fleet of three payments replicas running an older commit
# (default: the previous commit of `main`, HEAD's first parent) is replaced one replica at a
# time by HEAD, behind HAProxy (`deploy/haproxy.cfg`), under load, on one Postgres and then
# on one Redis — the roll check of `tests/integration/roll` with `TOOLGATE_ROLL_FROM` set.
# The first new replica migrates the store under the older ones still serving (migrations
# are expand-then-contract: docs/stores-and-replicas.md, "Upgrading replicas one at a
# time"). It builds both commits; CI does not run it.
#
#   scripts/rolling-upgrade.sh [FROM_COMMIT]
#
# Needs what `.ci/run` starts (redis-server, Postgres binaries, haproxy) and
# TOOLGATE_TEST_POSTGRES_URL for the Postgres run. TOOLGATE_ROLL_SECONDS (60), _RATE and
# _ROUNDS as the roll check reads them.
set -euo pipefail
cd "$(dirname "$0")/.."
from="${1:-HEAD^1}"
from_commit="$(git rev-parse --short "$from")"
work="${TMPDIR:-/tmp}/toolgate-upgrade-from-$from_commit"
target="${CARGO_TARGET_DIR:-$PWD/target}"

if [ ! -d "$work" ]; then
  git worktree add --detach "$work" "$from_commit" >/dev/null
fi
# Built in this tree's target directory (its dependencies are mostly this tree's, and a
# second target would cost gigabytes), its binary copied out before HEAD is built again.
echo "building the older commit $from_commit (payments example) in $work"
(cd "$work" && CARGO_TARGET_DIR="$target" cargo build -q -p toolgate-examples --example payments)
older="$target/upgrade-from-$from_commit-payments"
cp "$target/debug/examples/payments" "$older"

echo "building HEAD ($(git rev-parse --short HEAD))"
CARGO_TARGET_DIR="$target" cargo build -q -p toolgate-examples --example payments
CARGO_TARGET_DIR="$target" cargo test -q -p toolgate --test integration --no-run 2>/dev/null

export TOOLGATE_ROLL_FROM="$older"
export TOOLGATE_ROLL_SECONDS="${TOOLGATE_ROLL_SECONDS:-60}"
echo "rolling $from_commit -> HEAD for ${TOOLGATE_ROLL_SECONDS} s on each store"
status=0
CARGO_TARGET_DIR="$target" cargo test -q -p toolgate --test integration roll::a_rolling_restart -- --nocapture \
  --test-threads=1 || status=$?
git worktree remove --force "$work" >/dev/null 2>&1 || true
exit "$status"
