#!/usr/bin/env bash
# Loads `catalogd serve` and nginx, side by side, with wrk on 127.0.0.1, serving the same bytes:
#   all         GET /catalogs/NAME/api/v1/all                      (84 MB of JSON Lines)
#   all-gz      the same with Accept-Encoding: gzip                (catalogd: copy gzipped at store
#                                                                  time; nginx: gzip_static .gz)
#   metas-L     GET .../metas?package=<largest package>            (nginx: that response as a file)
#   metas-S     GET .../metas?package=<smallest package>
#   metas-L-gz  metas-L with Accept-Encoding: gzip                 (both compress per request, level 5)
# nginx gets the very bytes catalogd returned (fetched with curl first, compared by checksum), with
# sendfile on, as the physical limit of this machine. For each case and server it prints requests/s,
# MB/s, latency percentiles, the server's CPU use (from /proc, all its processes) and RSS during
# and after the load, wrk's own CPU, and the load average. Results: docs/PERFORMANCE.md.
#
# Usage: hack/bench-catalogd-http.sh [FBC_DIR] [RUNS]
#   FBC_DIR   defaults to testdata/catalogs/community-operators-prod-derived/catalog (unpacked once by olm-testdata)
#   RUNS      repetitions of the whole matrix (default 2)
#   env: DURATION (default 20s), CONNS (64), THREADS (2), CASES (all all-gz metas-L metas-S metas-L-gz),
#        LARGE_PKG / SMALL_PKG (default: the largest and smallest package by bytes, found with jq),
#        SERVERS (default: catalogd nginx),
#        CATALOGD_BIN (default: build and use the release catalogd of this checkout; set it to
#        compare another build, e.g. one of an older commit)
# Needs: wrk, nginx (with gzip_static), jq, curl, GNU time. Listens on 127.0.0.1 only; stops what it
# started on exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fbc="${1:-$(cargo run -q --manifest-path "${root}/Cargo.toml" -p olm-testdata -- catalogs/community-operators-prod-derived/catalog)}"
runs="${2:-2}"
duration="${DURATION:-20s}"
conns="${CONNS:-64}"
threads="${THREADS:-2}"
cases="${CASES:-all all-gz metas-L metas-S metas-L-gz}"
servers="${SERVERS:-catalogd nginx}"
name=derived
for tool in wrk nginx jq curl /usr/bin/time; do
  command -v "${tool}" >/dev/null || { echo "needs ${tool} (apt-get install -y wrk nginx-light jq curl time)" >&2; exit 1; }
done

cd "${root}"
catalogd_bin="${CATALOGD_BIN:-}"
if [[ -z "${catalogd_bin}" ]]; then
  cargo build -q --release -p catalogd --bin catalogd
  target="${CARGO_TARGET_DIR:-$(cargo metadata -q --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')}"
  catalogd_bin="${target}/release/catalogd"
fi

work="$(mktemp -d -t catalogd-http-bench-XXXXXX)"
chmod 755 "${work}" # nginx workers may run as an unprivileged user
catalogd_pid=""
nginx_pid=""
stop() {
  local pid="$1"
  [[ -n "${pid}" ]] || return 0
  kill "${pid}" 2>/dev/null || true
  wait "${pid}" 2>/dev/null || true
}
cleanup() {
  stop "${catalogd_pid}"
  stop "${nginx_pid}"
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
wait_http() {
  for _ in $(seq 600); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no answer from $1" >&2
  return 1
}

# --- catalogd ---
cport="$(free_port)"
"${catalogd_bin}" serve --dir "${fbc}" --name "${name}" --listen "127.0.0.1:${cport}" 2>"${work}/catalogd.log" &
catalogd_pid=$!
cbase="http://127.0.0.1:${cport}/catalogs/${name}/api/v1"
wait_http "${cbase}/metas?package=no-such-package" || { cat "${work}/catalogd.log" >&2; exit 1; }
sleep 1

# --- the same bytes for nginx ---
www="${work}/www"
mkdir -p "${www}"
chmod 755 "${www}"
curl -fsS "${cbase}/all" -o "${www}/all.jsonl"
curl -fsS -H 'Accept-Encoding: gzip' "${cbase}/all" -o "${www}/all.jsonl.gz"
gzip -dc "${www}/all.jsonl.gz" | cmp - "${www}/all.jsonl"
if [[ -z "${LARGE_PKG:-}" || -z "${SMALL_PKG:-}" ]]; then
  jq -r 'select((.package // "") != "") | [.package, (tojson | utf8bytelength)] | @tsv' "${www}/all.jsonl" |
    awk -F'\t' '{b[$1] += $2 + 1} END {for (p in b) print b[p], p}' | sort -n >"${work}/packages.txt"
  : "${SMALL_PKG:=$(head -n1 "${work}/packages.txt" | cut -d' ' -f2)}"
  : "${LARGE_PKG:=$(tail -n1 "${work}/packages.txt" | cut -d' ' -f2)}"
fi
curl -fsS "${cbase}/metas?package=${LARGE_PKG}" -o "${www}/metas-L.jsonl"
curl -fsS "${cbase}/metas?package=${SMALL_PKG}" -o "${www}/metas-S.jsonl"
chmod 644 "${www}"/*

nport="$(free_port)"
mkdir -p "${work}/nginx-tmp"
cat >"${work}/nginx.conf" <<EOF
worker_processes auto;
daemon off;
pid ${work}/nginx.pid;
error_log ${work}/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${work}/nginx-tmp/body;
  proxy_temp_path ${work}/nginx-tmp/proxy;
  fastcgi_temp_path ${work}/nginx-tmp/fastcgi;
  uwsgi_temp_path ${work}/nginx-tmp/uwsgi;
  scgi_temp_path ${work}/nginx-tmp/scgi;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  default_type application/jsonl;
  types { }
  gzip_static on;
  gzip on;
  gzip_comp_level 5;
  gzip_min_length 1024;
  gzip_types application/jsonl;
  server {
    listen 127.0.0.1:${nport};
    location = /catalogs/${name}/api/v1/all { alias ${www}/all.jsonl; }
    location = /metas-L { alias ${www}/metas-L.jsonl; gzip_static off; }
    location = /metas-S { alias ${www}/metas-S.jsonl; gzip_static off; }
  }
}
EOF
nginx -c "${work}/nginx.conf" -p "${work}" -e "${work}/nginx-error.log" &
nginx_pid=$!
nbase="http://127.0.0.1:${nport}"
wait_http "${nbase}/metas-S" || { cat "${work}/nginx-error.log" >&2; exit 1; }

# Both servers must send identical bodies for every case.
same() {
  local a b
  a="$(curl -fsS "${@:3}" "$1" | sha256sum)"
  b="$(curl -fsS "${@:3}" "$2" | sha256sum)"
  [[ "${a}" == "${b}" ]] || { echo "bodies differ: $1 vs $2" >&2; exit 1; }
}
same "${cbase}/all" "${nbase}/catalogs/${name}/api/v1/all"
same "${cbase}/all" "${nbase}/catalogs/${name}/api/v1/all" -H 'Accept-Encoding: gzip'
same "${cbase}/metas?package=${LARGE_PKG}" "${nbase}/metas-L" --compressed
same "${cbase}/metas?package=${SMALL_PKG}" "${nbase}/metas-S"

url_for() { # server case
  case "$1:$2" in
    catalogd:all | catalogd:all-gz) echo "${cbase}/all" ;;
    catalogd:metas-L | catalogd:metas-L-gz) echo "${cbase}/metas?package=${LARGE_PKG}" ;;
    catalogd:metas-S) echo "${cbase}/metas?package=${SMALL_PKG}" ;;
    nginx:all | nginx:all-gz) echo "${nbase}/catalogs/${name}/api/v1/all" ;;
    nginx:metas-L | nginx:metas-L-gz) echo "${nbase}/metas-L" ;;
    nginx:metas-S) echo "${nbase}/metas-S" ;;
  esac
}
pids_of() { # server -> its pids (nginx: master and workers)
  if [[ "$1" == catalogd ]]; then echo "${catalogd_pid}"; else echo "${nginx_pid} $(pgrep -P "${nginx_pid}" | tr '\n' ' ')"; fi
}
cpu_ticks() { # utime+stime of the given pids, in clock ticks
  local total=0 pid f
  for pid in "$@"; do
    read -ra f <"/proc/${pid}/stat"
    # Fields 14 and 15 (1-based); the command name has no spaces for these binaries.
    total=$((total + f[13] + f[14]))
  done
  echo "${total}"
}
rss_kb() { # sum of VmRSS of the given pids
  local total=0 pid
  for pid in "$@"; do total=$((total + $(awk '/^VmRSS:/ {print $2}' "/proc/${pid}/status"))); done
  echo "${total}"
}
secs() { local d="$1"; case "${d}" in *m) echo $((${d%m} * 60)) ;; *s) echo "${d%s}" ;; *) echo "${d}" ;; esac; }

echo "# catalog ${fbc}: all=$(stat -c %s "${www}/all.jsonl") B, all.gz=$(stat -c %s "${www}/all.jsonl.gz") B"
echo "# metas-L package=${LARGE_PKG} $(stat -c %s "${www}/metas-L.jsonl") B; metas-S package=${SMALL_PKG} $(stat -c %s "${www}/metas-S.jsonl") B"
echo "# catalogd pid ${catalogd_pid} idle RSS $(rss_kb "${catalogd_pid}") kB; nginx pids $(pids_of nginx) idle RSS $(rss_kb $(pids_of nginx)) kB"
echo "# wrk -t${threads} -c${conns} -d${duration} --timeout 60s --latency [-H 'Accept-Encoding: gzip'] URL"
clk="$(getconf CLK_TCK)"
dur_s="$(secs "${duration}")"
printf '%-3s %-10s %-8s %10s %10s %9s %9s %9s %9s %7s %9s %9s %7s %s\n' \
  run case server 'req/s' 'MB/s' p50 p90 p99 max srvCPU% rss_mid rss_end wrkCPU% loadavg
for run in $(seq "${runs}"); do
  for c in ${cases}; do
    for server in ${servers}; do
      url="$(url_for "${server}" "${c}")"
      hdr=()
      [[ "${c}" == *-gz ]] && hdr=(-H 'Accept-Encoding: gzip')
      # shellcheck disable=SC2046
      set -- $(pids_of "${server}")
      load="$(cut -d' ' -f1 /proc/loadavg)"
      before="$(cpu_ticks "$@")"
      (sleep $((dur_s / 2)) && rss_kb "$@" >"${work}/rss_mid") &
      sampler=$!
      /usr/bin/time -f '%U %S' -o "${work}/wrk_time" \
        wrk -t"${threads}" -c"${conns}" -d"${duration}" --timeout 60s --latency "${hdr[@]}" "${url}" >"${work}/wrk.txt"
      wait "${sampler}" || true
      after="$(cpu_ticks "$@")"
      rss_end="$(rss_kb "$@")"
      w="${work}/wrk.txt"
      rps="$(awk '/^Requests\/sec/ {print $2}' "${w}")"
      tps="$(awk '/^Transfer\/sec/ {print $2}' "${w}")"
      # wrk prints Transfer/sec with a unit; normalise to MB/s (10^6 bytes).
      mbs="$(awk -v t="${tps}" 'BEGIN {
        n = t + 0; u = t; sub(/^[0-9.]+/, "", u)
        f = (u == "GB") ? 1073741824 : (u == "MB") ? 1048576 : (u == "KB") ? 1024 : 1
        printf "%.1f", n * f / 1e6 }')"
      pct() { awk -v p="$1" '$1 == p {print $2}' "${w}"; }
      maxl="$(awk '/^    Latency/ {print $4}' "${w}")"
      errs="$(grep -E 'Non-2xx|Socket errors' "${w}" | tr -s ' ' | tr '\n' ';' || true)"
      srv_cpu="$(awk -v a="${after}" -v b="${before}" -v c="${clk}" -v d="${dur_s}" 'BEGIN {printf "%.0f", (a - b) / c / d * 100}')"
      wrk_cpu="$(awk -v d="${dur_s}" '{printf "%.0f", ($1 + $2) / d * 100}' "${work}/wrk_time")"
      printf '%-3s %-10s %-8s %10s %10s %9s %9s %9s %9s %7s %9s %9s %7s %s %s\n' \
        "${run}" "${c}" "${server}" "${rps}" "${mbs}" "$(pct 50%)" "$(pct 90%)" "$(pct 99%)" "${maxl}" \
        "${srv_cpu}" "$(cat "${work}/rss_mid")" "${rss_end}" "${wrk_cpu}" "${load}" "${errs}"
    done
  done
done
echo "# catalogd peak RSS (VmHWM, includes the initial ingest): $(awk '/^VmHWM:/ {print $2, $3}' "/proc/${catalogd_pid}/status")"
