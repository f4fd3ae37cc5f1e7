# Sourced by hack/build-control-plane.sh and hack/build-kubectl.sh: Go builds that say how far they
# are. Each build runs in the background with `go build -v` (which names every package it compiles,
# cached ones excepted) while the script prints a progress line every PROGRESS_EVERY seconds with
# an estimate of the time left.
#
# The estimate comes from measured numbers: the timings file (KEY VALUE lines) that the last
# complete build on this machine recorded, or, on a first build, the defaults the calling script
# passes (measured on the 2-core development machine, see README "Timings"). Keys:
#   modules_s     seconds to resolve and download the modules
#   compile_s     seconds to compile compile_pkgs packages (wall clock, all builds together)
#   compile_pkgs  how many packages that was
#   link_s        seconds from the last compiled package to the binaries
#   nproc         cores of the machine that measured them
# Once a quarter of the packages is compiled, the rate seen so far replaces the recorded one, so a
# machine busy with other work gets a longer estimate.

PROGRESS_EVERY="${PROGRESS_EVERY:-20}"

# 250 -> 4m10s
fmt_duration() {
  local s="$1"
  if ((s >= 60)); then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "${s}"; fi
}

# 250 -> "about 4 min left"
fmt_left() {
  local s="$1"
  if ((s < 60)); then echo "under a minute left"; else echo "about $(((s + 30) / 60)) min left"; fi
}

# timing KEY: the recorded value, else the default from TIMING_DEFAULTS ("KEY VALUE ...").
timing() {
  local key="$1" value=""
  if [[ -f "${TIMINGS_FILE}" ]]; then
    value="$(awk -v k="${key}" '$1 == k { print $2 }' "${TIMINGS_FILE}" | tail -n 1)"
  fi
  if [[ -z "${value}" ]]; then
    # shellcheck disable=SC2086 # word splitting of the KEY VALUE list is the point
    set -- ${TIMING_DEFAULTS}
    while (($# >= 2)); do
      if [[ "$1" == "${key}" ]]; then value="$2"; break; fi
      shift 2
    done
  fi
  echo "${value:-0}"
}

# Scales recorded seconds to this machine's cores (compilation parallelises over packages).
scale_to_cores() {
  local s="$1" measured_on
  measured_on="$(timing nproc)"
  ((measured_on > 0)) || measured_on=2
  echo $((s * measured_on / CORES))
}

CORES="$(nproc 2>/dev/null || echo 2)"

# resolve_modules LABEL DIR...: `go mod tidy -e` in each DIR at once, with progress lines.
resolve_modules() {
  local label="$1"; shift
  local start=$SECONDS pids=() logs=() dir i status=0 last=$SECONDS
  for dir in "$@"; do
    (cd "${dir}" && go mod tidy -e) >"${dir}/tidy.log" 2>&1 &
    pids+=($!); logs+=("${dir}/tidy.log")
  done
  local expected
  expected="$(timing modules_s)"
  while any_running "${pids[@]}"; do
    sleep 1
    if ((SECONDS - last >= PROGRESS_EVERY)); then
      last=$SECONDS
      local elapsed=$((SECONDS - start)) left
      left=$((expected - elapsed))
      if ((left > 0)); then
        log "${label}: resolving and downloading modules, $(fmt_duration "${elapsed}") elapsed, $(fmt_left "${left}") (measured $(fmt_duration "${expected}"))"
      else
        log "${label}: resolving and downloading modules, $(fmt_duration "${elapsed}") elapsed, longer than the $(fmt_duration "${expected}") measured (a slow network or module proxy)"
      fi
    fi
  done
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      status=1
      log "go mod tidy failed in ${logs[$i]%/tidy.log}:"
      tail -n 40 "${logs[$i]}" >&2
    fi
  done
  MODULES_SECONDS=$((SECONDS - start))
  return "${status}"
}

any_running() {
  local pid
  for pid in "$@"; do kill -0 "${pid}" 2>/dev/null && return 0; done
  return 1
}

# stale_packages DIR PACKAGES...: the import paths `go build -trimpath` would compile, one a line.
stale_packages() {
  local dir="$1"; shift
  (cd "${dir}" && go list -deps -trimpath -f '{{if .Stale}}{{.ImportPath}}{{end}}' "$@") | grep -v '^$' || true
}

# BUILDS: one entry per background build, fields separated by \x1f:
# DIR, LABEL, OUTPUT (go build -o), LDFLAGS, PACKAGES (space-separated).
BUILDS=()

# add_build DIR LABEL OUTPUT LDFLAGS PACKAGE...
add_build() {
  local dir="$1" label="$2" output="$3" ldflags="$4"; shift 4
  BUILDS+=("${dir}"$'\x1f'"${label}"$'\x1f'"${output}"$'\x1f'"${ldflags}"$'\x1f'"$*")
}

# How many distinct packages the `go build -v` logs name (not errors, not `# pkg` headers). Builds
# running at once share the build cache: a package one of them compiles, the other finds cached and
# does not name, so both the total and the progress count each import path once.
compiled_count() {
  local n
  n="$(grep -h -E '^[^ :#]+$' "$@" 2>/dev/null | sort -u | wc -l)" || true
  echo "${n:-0}"
}

# run_builds TITLE: runs every added build at once (Go parallelises packages within each build;
# separate modules cannot share one build graph), printing progress until all are done.
run_builds() {
  local title="$1" start=$SECONDS last=$SECONDS
  local pids=() outs=() labels=() stale_lists=() entry dir label output ldflags pkgs total i status=0
  # What is to be compiled is listed before any build starts (a running build fills the cache).
  for entry in "${BUILDS[@]}"; do
    IFS=$'\x1f' read -r dir label output ldflags pkgs <<<"${entry}"
    local pkg_list=()
    read -r -a pkg_list <<<"${pkgs}"
    stale_packages "${dir}" "${pkg_list[@]}" >"${dir}/stale.txt"
    stale_lists+=("${dir}/stale.txt")
  done
  total="$(sort -u "${stale_lists[@]}" | wc -l)"
  for entry in "${BUILDS[@]}"; do
    IFS=$'\x1f' read -r dir label output ldflags pkgs <<<"${entry}"
    local pkg_list=()
    read -r -a pkg_list <<<"${pkgs}"
    outs+=("${dir}/build.log"); labels+=("${label}")
    (cd "${dir}" && go build -v -trimpath -ldflags "${ldflags}" -o "${output}" "${pkg_list[@]}") >"${dir}/build.log" 2>&1 &
    pids+=($!)
  done
  local compile_done_at=0
  while any_running "${pids[@]}"; do
    sleep 1
    local done_pkgs
    done_pkgs="$(compiled_count "${outs[@]}")"
    ((done_pkgs > total)) && done_pkgs=${total}
    if ((compile_done_at == 0 && done_pkgs >= total)); then compile_done_at=$SECONDS; fi
    if ((SECONDS - last >= PROGRESS_EVERY)); then
      last=$SECONDS
      local elapsed=$((SECONDS - start)) left link
      link="$(scale_to_cores "$(timing link_s)")"
      if ((compile_done_at > 0)); then
        left=$((link - (SECONDS - compile_done_at)))
        ((left < 10)) && left=10
        log "${title}: linking, $(fmt_duration "${elapsed}") elapsed, $(fmt_left "${left}") on ${CORES} cores"
      else
        local pkgs_left=$((total - done_pkgs))
        if ((done_pkgs * 4 >= total && done_pkgs > 0)); then
          left=$((elapsed * pkgs_left / done_pkgs + link))
        else
          local rec_s rec_pkgs
          rec_s="$(scale_to_cores "$(timing compile_s)")"; rec_pkgs="$(timing compile_pkgs)"
          ((rec_pkgs > 0)) || rec_pkgs=1
          left=$((rec_s * pkgs_left / rec_pkgs + link))
        fi
        log "${title}: ${done_pkgs} of ${total} packages compiled, $(fmt_duration "${elapsed}") elapsed, $(fmt_left "${left}") on ${CORES} cores"
      fi
    fi
  done
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      status=1
      log "building ${labels[$i]} failed; last lines of go build -v:"
      tail -n 40 "${outs[$i]}" >&2
    fi
  done
  ((compile_done_at > 0)) || compile_done_at=$SECONDS
  BUILD_PACKAGES=${total}
  COMPILE_SECONDS=$((compile_done_at - start))
  LINK_SECONDS=$((SECONDS - compile_done_at))
  BUILDS=()
  return "${status}"
}

# record_timings: after a build that compiled enough to be representative (a cold one), keep its
# numbers for the next estimate on this machine.
record_timings() {
  ((BUILD_PACKAGES >= 500)) || return 0
  mkdir -p "$(dirname "${TIMINGS_FILE}")"
  {
    echo "# measured by $(basename "$0") on $(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
    echo "modules_s ${MODULES_SECONDS:-0}"
    echo "compile_s ${COMPILE_SECONDS}"
    echo "compile_pkgs ${BUILD_PACKAGES}"
    echo "link_s ${LINK_SECONDS}"
    echo "nproc ${CORES}"
  } >"${TIMINGS_FILE}"
}
