#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok)
# from Go modules at pinned versions into a cache directory outside the clone, and prints the
# directory holding the binaries on its last line of stdout.
#
# No registry reachable from our machines ships these binaries, so we compile them. Nothing fetched or
# generated here is committed: the wrapper Go modules are written into the cache at build time.
#
# Only the binaries the tier needs are built (`--tier apiserver`: etcd and kube-apiserver; `full`, the
# default: all five), each once. etcd and the Kubernetes binaries are one `go build` (one package
# graph, compiled in parallel over the cores); kwok, a module of its own with other Kubernetes library
# versions, is built at the same time. A progress line with an estimate of the time left is printed
# every 20 s (hack/lib/go-build.sh).
#
# Usage: build-control-plane.sh [--tier apiserver|full]
#
# Environment:
#   KUBEBUILDER_ASSETS  if it holds the tier's binaries, those are used and nothing is built
#   OLM_CACHE_DIR       cache root (default: $XDG_CACHE_HOME/olm-rs or ~/.cache/olm-rs)
#   OLM_TIER            the tier when --tier is not given
set -euo pipefail

K8S_VERSION=v1.34.4
K8S_STAGING_VERSION=v0.34.4
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.7.0

log() { echo "build-control-plane: $*" >&2; }

tier="${OLM_TIER:-full}"
while (($#)); do
  case "$1" in
    --tier) tier="${2:-}"; shift 2 || { log "--tier needs a value"; exit 2; } ;;
    --tier=*) tier="${1#--tier=}"; shift ;;
    *) log "unknown argument $1 (usage: build-control-plane.sh [--tier apiserver|full])"; exit 2 ;;
  esac
done
case "${tier}" in
  apiserver) wanted=(etcd kube-apiserver) ;;
  full) wanted=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok) ;;
  *) log "unknown tier ${tier} (apiserver or full)"; exit 2 ;;
esac

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  have_all=true
  for b in "${wanted[@]}"; do [[ -x "${KUBEBUILDER_ASSETS}/${b}" ]] || have_all=false; done
  if ${have_all}; then
    log "using existing binaries from KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS}"
    echo "${KUBEBUILDER_ASSETS}"
    exit 0
  fi
fi

CACHE_ROOT="${OLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/olm-rs}"
OUT="${CACHE_ROOT}/k8s/${K8S_VERSION}-etcd${ETCD_VERSION}-kwok${KWOK_VERSION}"
BIN="${OUT}/bin"
# One stamp per binary (.built-NAME); .complete, which older versions of this script wrote once all
# five were built, still counts for all five.
STAMP="${OUT}/.complete"
WANT="k8s=${K8S_VERSION} etcd=${ETCD_VERSION} kwok=${KWOK_VERSION}"

# Where this machine's last cold build recorded its timings, and what a first build assumes:
# measured on the 2-core development machine (README, "Timings").
TIMINGS_FILE="${CACHE_ROOT}/k8s/build-times"
TIMING_DEFAULTS="modules_s 30 compile_s 1000 compile_pkgs 3350 link_s 50 nproc 2"
# shellcheck source=hack/lib/go-build.sh
source "$(dirname "$0")/lib/go-build.sh"

built() {
  local b="$1" v
  [[ -x "${BIN}/${b}" ]] || return 1
  [[ "$(cat "${OUT}/.built-${b}" 2>/dev/null)" == "${WANT}" || "$(cat "${STAMP}" 2>/dev/null)" == "${WANT}" ]] || return 1
  # Output captured first: `cmd | grep -q` under pipefail fails when grep exits before cmd has
  # written everything (SIGPIPE), which made a good cache look stale under load.
  case "${b}" in
    kube-apiserver)
      v="$("${BIN}/${b}" --version 2>/dev/null)" || return 1
      [[ "${v}" == *"Kubernetes ${K8S_VERSION}"* ]] ;;
    etcd)
      v="$("${BIN}/${b}" --version 2>/dev/null)" || return 1
      [[ "${v}" == *"etcd Version: ${ETCD_VERSION#v}"* ]] ;;
  esac
}

missing_binaries() {
  missing=()
  for b in "${wanted[@]}"; do built "${b}" || missing+=("${b}"); done
}

missing_binaries
if ((${#missing[@]} == 0)); then
  log "binaries for ${WANT} (tier ${tier}) already built in ${BIN}"
  echo "${BIN}"
  exit 0
fi

command -v go >/dev/null || { log "go is required to build the test control plane"; exit 1; }
mkdir -p "${OUT}" "${BIN}"

# Two builds into one directory at once would overwrite each other's files: the second waits.
exec 9>"${OUT}/.lock"
if ! flock -n 9; then
  log "another build is writing ${OUT}; waiting for it"
  flock 9
  missing_binaries
  if ((${#missing[@]} == 0)); then
    log "binaries for ${WANT} (tier ${tier}) built meanwhile in ${BIN}"
    echo "${BIN}"
    exit 0
  fi
fi

# The Go checksum database (sum.golang.org) is not reachable from our build machines. When it cannot be
# reached, checksum-database verification is turned off for this build only; module content still comes
# from the Go module proxy over TLS and go.sum records the hashes it saw.
if ! curl -s -o /dev/null --max-time 10 https://sum.golang.org/lookup/golang.org/x/text@v0.3.0 2>/dev/null; then
  log "sum.golang.org is unreachable: building with GOSUMDB=off (checksum database verification disabled for this build only)"
  export GOSUMDB=off
fi
export GOFLAGS=-mod=mod
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
export CGO_ENABLED=0

staging_modules=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api cri-client
  csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
  kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils
  pod-security-admission sample-apiserver sample-cli-plugin sample-controller)

# The Go packages of the missing binaries, in the wrapper module (etcd, Kubernetes) or kwok's own.
k8s_packages=()
build_kwok=false
for b in "${missing[@]}"; do
  case "${b}" in
    etcd) k8s_packages+=(go.etcd.io/etcd/server/v3) ;;
    kwok) build_kwok=true ;;
    *) k8s_packages+=("k8s.io/kubernetes/cmd/${b}") ;;
  esac
done

WORK="${OUT}/wrapper"
KWOK_WORK="${OUT}/kwok-wrapper"
module_dirs=()
if ((${#k8s_packages[@]})); then
  mkdir -p "${WORK}"
  {
    echo "module olm-rs.local/testbins"
    echo
    echo "go 1.24.0"
    echo
    echo "require ("
    echo "	k8s.io/kubernetes ${K8S_VERSION}"
    echo "	go.etcd.io/etcd/server/v3 ${ETCD_VERSION}"
    echo ")"
    echo
    echo "replace ("
    for m in "${staging_modules[@]}"; do
      echo "	k8s.io/${m} => k8s.io/${m} ${K8S_STAGING_VERSION}"
    done
    echo ")"
  } >"${WORK}/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    for p in "${k8s_packages[@]}"; do echo "	_ \"${p}\""; done
    echo ")"
  } >"${WORK}/tools.go"
  module_dirs+=("${WORK}")
fi
if ${build_kwok}; then
  # kwok's own module as a dependency of a wrapper: the same versions `go install kwok@VERSION`
  # selects (kwok's go.mod has no replace directives), and a package graph `go list` can count.
  mkdir -p "${KWOK_WORK}"
  printf 'module olm-rs.local/kwok\n\ngo 1.24.0\n\nrequire sigs.k8s.io/kwok %s\n' "${KWOK_VERSION}" >"${KWOK_WORK}/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kwok/cmd/kwok"\n' >"${KWOK_WORK}/tools.go"
  module_dirs+=("${KWOK_WORK}")
fi

log "building ${missing[*]} (tier ${tier}) on ${CORES} cores, with a progress line every ${PROGRESS_EVERY} s; the first build downloads about 1 GB of modules and compiles for 10-20 minutes"
resolve_modules "step 1 of 2" "${module_dirs[@]}"

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
done

# etcd's main package is go.etcd.io/etcd/server/v3, which `go build -o DIR/` names `server`.
if ((${#k8s_packages[@]})); then
  add_build "${WORK}" "${k8s_packages[*]}" "${WORK}/out/" "${ldflags}" "${k8s_packages[@]}"
  mkdir -p "${WORK}/out"
fi
if ${build_kwok}; then
  # kwok's version is a constant of its source (pkg/consts), so it needs no -X flags.
  add_build "${KWOK_WORK}" "kwok ${KWOK_VERSION}" "${KWOK_WORK}/out/kwok" "-s -w" sigs.k8s.io/kwok/cmd/kwok
  mkdir -p "${KWOK_WORK}/out"
fi
run_builds "step 2 of 2, compiling ${missing[*]}"
record_timings

for b in "${missing[@]}"; do
  case "${b}" in
    etcd) src="${WORK}/out/server" ;;
    kwok) src="${KWOK_WORK}/out/kwok" ;;
    *) src="${WORK}/out/${b}" ;;
  esac
  mv -f "${src}" "${BIN}/${b}"
  echo "${WANT}" >"${OUT}/.built-${b}"
done
complete=true
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
  [[ "$(cat "${OUT}/.built-${b}" 2>/dev/null)" == "${WANT}" ]] || complete=false
done
if ${complete}; then echo "${WANT}" >"${STAMP}"; fi

missing_binaries
if ((${#missing[@]})); then
  log "built binaries do not report the expected versions: ${missing[*]}"
  exit 1
fi
log "done in $(fmt_duration "${SECONDS}") (modules $(fmt_duration "${MODULES_SECONDS}"), compiling $(fmt_duration "${COMPILE_SECONDS}"), linking $(fmt_duration "${LINK_SECONDS}")): ${BIN}"
echo "${BIN}"
