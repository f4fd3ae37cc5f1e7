#!/usr/bin/env bash
# Measures catalogd's unpack path on a large catalog: push it as a catalog image to a throwaway
# docker-registry on 127.0.0.1, then, each in a fresh process under /usr/bin/time -v:
#   cold   pull + ingest with an empty image cache and empty storage
#   warm   the same again with the same cache and storage (unchanged digest: one manifest GET,
#          no blob GET, no rewrite; the stored content is reopened from disk as after a restart)
#   ingest the ingest step alone (walk + canonical JSON + jsonl + index) from the directory, then the
#          wait for the gzip copy written after it (gzip_ready_s)
# and prints one table row per run. Results and interpretation: docs/PERFORMANCE.md.
#
# Usage: hack/bench-catalogd-ingest.sh [FBC_DIR] [RUNS]
#   FBC_DIR defaults to testdata/catalogs/community-operators-prod-derived/catalog (unpacked once by olm-testdata)
#   Needs OLM_REGISTRY_BIN (`make tools && source "$OLM_CACHE_DIR/tools.env"`) and GNU time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fbc="${1:-$(cargo run -q --manifest-path "${root}/Cargo.toml" -p olm-testdata -- catalogs/community-operators-prod-derived/catalog)}"
runs="${2:-3}"
: "${OLM_REGISTRY_BIN:?set OLM_REGISTRY_BIN: make tools && source \$OLM_CACHE_DIR/tools.env}"
[[ -x /usr/bin/time ]] || { echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }

cd "${root}"
cargo build -q --release -p catalogd --example ingest_bench
target="${CARGO_TARGET_DIR:-$(cargo metadata -q --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')}"
bench="${target}/release/examples/ingest_bench"

work="$(mktemp -d -t catalogd-ingest-bench-XXXXXX)"
registry_pid=""
cleanup() {
  if [[ -n "${registry_pid}" ]]; then kill "${registry_pid}" 2>/dev/null || true; wait "${registry_pid}" 2>/dev/null || true; fi
  rm -rf "${work}"
}
trap cleanup EXIT

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/${p}") 2>/dev/null; then echo "${p}"; return; fi
  done
}
port="$(free_port)"
cat > "${work}/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: ${work}/registry
http:
  addr: 127.0.0.1:${port}
  secret: bench-only-secret
EOF
"${OLM_REGISTRY_BIN}" serve "${work}/registry.yml" >"${work}/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:${port}/v2/" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:${port}/v2/" >/dev/null

ref="127.0.0.1:${port}/bench/catalog:v1"
echo "# push ${fbc} as ${ref}"
"${bench}" push "${fbc}" "${ref}" | sed 's/^/#   /'
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# One measured process: prints the bench's key=value lines and GNU time's figures as one row.
measure() {
  local label="$1"; shift
  /usr/bin/time -v -o "${work}/time.txt" "${bench}" "$@" >"${work}/out.txt"
  local wall user sys rss
  wall="$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "${work}/time.txt")"
  user="$(sed -n 's/.*User time (seconds): //p' "${work}/time.txt")"
  sys="$(sed -n 's/.*System time (seconds): //p' "${work}/time.txt")"
  rss="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "${work}/time.txt")"
  printf '%-7s wall=%-8s user=%-6s sys=%-6s maxrss_kb=%-7s %s\n' "${label}" "${wall}" "${user}" "${sys}" "${rss}" \
    "$(grep -v '^peak_rss_kb=' "${work}/out.txt" | tr '\n' ' ')"
}

for run in $(seq "${runs}"); do
  rm -rf "${work}/cache" "${work}/storage" "${work}/storage-ingest"
  measure cold pull-ingest "${ref}" "${work}/cache" "${work}/storage"
  measure warm pull-ingest "${ref}" "${work}/cache" "${work}/storage"
  measure ingest ingest "${fbc}" "${work}/storage-ingest"
  echo "# run ${run} done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
