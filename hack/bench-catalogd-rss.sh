#!/usr/bin/env bash
# catalogd's memory around a burst of `/all` downloads: VmRSS idle, VmHWM and VmRSS right after
# `wrk -t2 -c64 -d20s` of `/api/v1/all` (plain HTTP, `catalogd serve`), VmRSS 30 s later, the
# server's CPU seconds over the load, wrk's throughput and its p50/p99 latency (fairness: under
# fair sharing every download takes about as long as the others). Results: docs/PERFORMANCE.md.
#
# Usage: [TLS=1] [FLOOR=TLS_FLOOR_BIN] hack/bench-catalogd-rss.sh CATALOGD_BIN [LABEL] [FBC_DIR]
#   FBC_DIR defaults to the derived community catalog (unpacked once by olm-testdata).
#   TLS=1 serves HTTPS with a throwaway self-signed certificate (as catalogd serves in a cluster).
#   FLOOR names catalogd's `tls_floor` example (release build): catalogd's `/all` is fetched once,
#   then the floor serves those bytes from memory on the same stack and is measured instead.
#   AFTER_SECONDS (30) is the wait before the last RSS reading.
# Needs: wrk, curl (and openssl with TLS=1). Listens on 127.0.0.1 only; stops what it started on exit.
set -euo pipefail
bin="${1:?usage: bench-catalogd-rss.sh CATALOGD_BIN [LABEL] [FBC_DIR]}"
label="${2:-catalogd}"
root="$(cd "$(dirname "$0")/.." && pwd)"
fbc="${3:-$(cargo run -q --manifest-path "${root}/Cargo.toml" -p olm-testdata -- catalogs/community-operators-prod-derived/catalog)}"
for tool in wrk curl; do
  command -v "${tool}" >/dev/null || { echo "needs ${tool} (apt-get install -y wrk curl)" >&2; exit 1; }
done
port=$((20000 + RANDOM % 40000))
work="$(mktemp -d -t catalogd-rss-XXXXXX)"
log="${work}/catalogd.log"
scheme=http
tls_flags=()
if [[ "${TLS:-}" == 1 ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "${work}/tls.key" -out "${work}/tls.crt" 2>/dev/null
  scheme=https
  tls_flags=(--tls-cert "${work}/tls.crt" --tls-key "${work}/tls.key")
fi
"${bin}" serve --dir "${fbc}" --name derived --listen "127.0.0.1:${port}" "${tls_flags[@]}" 2>"${log}" &
pid=$!
trap 'kill ${pid} 2>/dev/null; wait ${pid} 2>/dev/null; rm -rf "${work}"' EXIT
url="${scheme}://127.0.0.1:${port}/catalogs/derived/api/v1/all"
for _ in $(seq 300); do curl -kfsS -o /dev/null "${url}" 2>/dev/null && break; sleep 0.1; done
if [[ -n "${FLOOR:-}" ]]; then
  curl -kfsS -o "${work}/all.jsonl" "${url}"
  kill "${pid}"; wait "${pid}" 2>/dev/null || true
  port=$((20000 + RANDOM % 40000))
  url="${scheme}://127.0.0.1:${port}/catalogs/derived/api/v1/all"
  "${FLOOR}" "${work}/all.jsonl" "127.0.0.1:${port}" ${tls_flags[@]:+"${work}/tls.crt" "${work}/tls.key"} 2>"${log}" &
  pid=$!
  for _ in $(seq 300); do curl -kfsS -o /dev/null "${url}" 2>/dev/null && break; sleep 0.1; done
fi
sleep 2
mib() { awk -v k="$1:" '$1 == k {printf "%.1f", $2 / 1024}' "/proc/${pid}/status"; }
cpu() { awk '{print ($14 + $15) / 100}' "/proc/${pid}/stat"; }
idle="$(mib VmRSS)"
before="$(cpu)"
out="$(wrk -t2 -c64 -d20s --timeout 60s --latency "${url}")"
after_cpu="$(cpu)"
after="$(mib VmRSS)"
peak="$(mib VmHWM)"
sleep "${AFTER_SECONDS:-30}"
later="$(mib VmRSS)"
mb_per_s="$(echo "${out}" | awk '/Transfer\/sec/ {v = $2; if (v ~ /GB/) {sub("GB", "", v); v *= 1024} else {sub("MB", "", v)} print v}')"
latency="$(echo "${out}" | awk '$1 == "50%" {p50 = $2} $1 == "99%" {p99 = $2} END {print "p50 " p50 ", p99 " p99}')"
cpu_s="$(awk -v a="${before}" -v b="${after_cpu}" 'BEGIN {printf "%.2f", b - a}')"
cpu_per_gb="$(awk -v c="${cpu_s}" -v m="${mb_per_s}" 'BEGIN {printf "%.2f", c / (m * 20 / 1024)}')"
echo "${label}: RSS idle ${idle} MiB; peak ${peak} MiB; after the load ${after} MiB; ${AFTER_SECONDS:-30} s later ${later} MiB; ${mb_per_s} MB/s; ${cpu_s} CPU s (${cpu_per_gb} per GB); ${latency}; load $(cut -d' ' -f1-3 /proc/loadavg)"
