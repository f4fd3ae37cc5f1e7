#!/usr/bin/env bash
# Our catalogd and operator-controller side by side with upstream OLM v1's (docs/PERFORMANCE.md,
# "Side by side with upstream"): ROUNDS interleaved rounds (ours, upstream, ours, upstream, ...),
# each side on a fresh control plane and registry inside a loopback-only network namespace, then
# the table of ratios.
#
# Needs: OLM_BIN_DIR (our binaries), the example built at $BENCH_BIN, `wrk` on PATH, and
# UPSTREAM_BIN_DIR naming a directory with upstream's `catalogd` and `operator-controller`
# (built outside this repository). Without UPSTREAM_BIN_DIR only our side runs, and it says so.
#
# Environment: ROUNDS (3), OUT (results file, JSON lines; default under $OLM_CACHE_DIR),
# P6_NAMESPACES (100: 1,000 extensions), BENCH_ARGS (more flags for `bench_upstream run`),
# SETTLE_SECONDS (120: the longest wait for the 1-minute load to fall below 1 before a side).
set -euo pipefail
: "${BENCH_BIN:?BENCH_BIN names the bench_upstream example binary}"
rounds="${ROUNDS:-3}"
out="${OUT:-${OLM_CACHE_DIR:-$HOME/.cache/olm-rs}/bench-upstream/results-$(date +%Y%m%d-%H%M%S).jsonl}"
mkdir -p "$(dirname "$out")"
command -v wrk >/dev/null || { echo "bench-upstream: wrk is not on PATH (apt-get install wrk)" >&2; exit 1; }

sides=(ours)
if [[ -n "${UPSTREAM_BIN_DIR:-}" ]]; then
  for bin in catalogd operator-controller; do
    [[ -x "$UPSTREAM_BIN_DIR/$bin" ]] || { echo "bench-upstream: $UPSTREAM_BIN_DIR/$bin is missing" >&2; exit 1; }
  done
  sides=(ours upstream)
  echo "bench-upstream: upstream binaries from $UPSTREAM_BIN_DIR: $("$UPSTREAM_BIN_DIR/operator-controller" --version 2>&1 | head -1 || true)"
else
  echo "bench-upstream: UPSTREAM_BIN_DIR is not set; measuring OUR SIDE ALONE (no ratios). Set it to a directory holding upstream's catalogd and operator-controller."
fi

export OLM_TEST_TIER=full
for round in $(seq 1 "$rounds"); do
  for side in "${sides[@]}"; do
    # Each side starts on a quiet machine: the previous side's control plane and controllers
    # are stopped, and its load has decayed (up to SETTLE_SECONDS), so one side's tail cannot
    # slow the next one's measurements. What still runs is printed.
    for _ in $(seq 1 "${SETTLE_SECONDS:-120}"); do
      awk '{ exit !($1 < 1.0) }' /proc/loadavg && break
      sleep 1
    done
    echo "bench-upstream: round $round, $side (load $(cut -d' ' -f1-3 /proc/loadavg)); busiest processes now:"
    ps -eo pid,pcpu,etimes,comm --sort=-pcpu | head -6 | sed 's/^/    /'
    hack/netns-run.sh "$BENCH_BIN" run --side "$side" --round "$round" --out "$out" \
      --p6-namespaces "${P6_NAMESPACES:-100}" ${BENCH_ARGS:-}
  done
done
echo "bench-upstream: results in $out"
"$BENCH_BIN" report "$out"
