#!/usr/bin/env bash
# Builds kubectl (with its built-in kustomize) from Go modules at the test control plane's pinned
# Kubernetes version into a cache directory outside the clone, and prints the path of the binary on
# its last line of stdout.
#
# The release-manifest tests use it: `kubectl kustomize` over config/ must give what our own
# generator gives, and hack/install.sh (which drives kubectl) is run against the test control plane.
# No registry reachable from our machines ships kubectl, so it is compiled like the control plane
# (hack/build-control-plane.sh); the wrapper Go module is written into the cache, never committed.
# It shares most packages with the control plane, so after that build it mostly links. A progress
# line is printed every 20 s (hack/lib/go-build.sh).
#
# Environment:
#   OLM_KUBECTL     if it names an executable kubectl, that one is used and nothing is built
#   OLM_CACHE_DIR   cache root (default: $XDG_CACHE_HOME/olm-rs or ~/.cache/olm-rs)
set -euo pipefail

K8S_VERSION=v1.34.4
K8S_STAGING_VERSION=v0.34.4

log() { echo "build-kubectl: $*" >&2; }

if [[ -n "${OLM_KUBECTL:-}" && -x "${OLM_KUBECTL}" ]]; then
  log "using ${OLM_KUBECTL}"
  echo "${OLM_KUBECTL}"
  exit 0
fi

CACHE_ROOT="${OLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/olm-rs}"
OUT="${CACHE_ROOT}/kubectl/${K8S_VERSION}"
BIN="${OUT}/bin/kubectl"
STAMP="${OUT}/.complete"

TIMINGS_FILE="${OUT}/build-times"
# Measured on the 2-core development machine with the control plane's packages already compiled.
TIMING_DEFAULTS="modules_s 10 compile_s 210 compile_pkgs 513 link_s 10 nproc 2"
# shellcheck source=hack/lib/go-build.sh
source "$(dirname "$0")/lib/go-build.sh"

binary_ok() {
  [[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${K8S_VERSION}" && -x "${BIN}" ]] || return 1
  # Output captured first (see build-control-plane.sh: grep -q under pipefail can SIGPIPE).
  local v
  v="$("${BIN}" version --client 2>/dev/null)" || return 1
  [[ "${v}" == *"Client Version: ${K8S_VERSION}"* ]]
}

if binary_ok; then
  log "kubectl ${K8S_VERSION} already built: ${BIN}"
  echo "${BIN}"
  exit 0
fi

command -v go >/dev/null || { log "go is required to build kubectl"; exit 1; }

# Same policy as hack/build-control-plane.sh: without a reachable checksum database, module content
# still comes from the Go module proxy over TLS and go.sum records the hashes it saw.
if ! curl -s -o /dev/null --max-time 10 https://sum.golang.org/lookup/golang.org/x/text@v0.3.0 2>/dev/null; then
  log "sum.golang.org is unreachable: building with GOSUMDB=off (checksum database verification disabled for this build only)"
  export GOSUMDB=off
fi
export GOFLAGS=-mod=mod
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
export CGO_ENABLED=0

WORK="${OUT}/wrapper"
mkdir -p "${WORK}" "${OUT}/bin"
exec 9>"${OUT}/.lock"
if ! flock -n 9; then
  log "another build is writing ${OUT}; waiting for it"
  flock 9
  if binary_ok; then
    log "kubectl ${K8S_VERSION} built meanwhile: ${BIN}"
    echo "${BIN}"
    exit 0
  fi
fi
rm -f "${STAMP}"

# kubectl's own staging modules, pinned to the release; everything else as k8s.io/kubernetes asks.
staging_modules=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api cri-client
  csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
  kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils
  pod-security-admission sample-apiserver sample-cli-plugin sample-controller)

{
  echo "module olm-rs.local/kubectl"
  echo
  echo "go 1.24.0"
  echo
  echo "require k8s.io/kubernetes ${K8S_VERSION}"
  echo
  echo "replace ("
  for m in "${staging_modules[@]}"; do
    echo "	k8s.io/${m} => k8s.io/${m} ${K8S_STAGING_VERSION}"
  done
  echo ")"
} > "${WORK}/go.mod"

cat > "${WORK}/tools.go" <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kubectl"
GO

resolve_modules "kubectl, step 1 of 2" "${WORK}"

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean"
done
add_build "${WORK}" "kubectl ${K8S_VERSION}" "${BIN}" "${ldflags}" k8s.io/kubernetes/cmd/kubectl
run_builds "kubectl, step 2 of 2, compiling kubectl ${K8S_VERSION}"
record_timings

echo "${K8S_VERSION}" > "${STAMP}"
binary_ok || { log "built kubectl does not report ${K8S_VERSION}"; exit 1; }
log "done: ${BIN}"
echo "${BIN}"
