#!/usr/bin/env bash
# Makes sure the tools the tests and `make run` need exist, building or fetching them into the cache
# directory outside the clone, and writes their locations as shell exports to ENV_FILE.
#
# Usage: ensure-tools.sh [--tier apiserver|full] ENV_FILE
#
# - kube-apiserver, etcd, and for the full tier (the default; the tests need it) also
#   kube-controller-manager, kube-scheduler and kwok: built from Go modules
#   (hack/build-control-plane.sh), or taken from KUBEBUILDER_ASSETS.
# - docker-registry: Debian's package, unpacked (never installed, so its service never starts).
# - kubectl: the one on PATH, else built from Go modules at the control plane's version
#   (hack/build-kubectl.sh), so `make run`'s instructions work on a machine without it. The tests
#   comparing with `kubectl kustomize` and running hack/install.sh use it too: with
#   OLM_REQUIRE_ALL=1 (make test) a kubectl that cannot be had is an error, not a warning. One on
#   PATH more than one minor version away from the control plane is left alone: `make run` warns
#   about it once and offers the built one.
# - kubelet, kube-proxy, crictl, CoreDNS and the sandbox's pause for the `real` test tier: built from
#   Go modules (hack/build-node.sh), or taken from OLM_NODE_ASSETS. The tier also needs Debian's
#   containerd, runc and containernetworking-plugins (.ci/run installs them) and root. With
#   OLM_REQUIRE_ALL=1 a failed build is an error; otherwise a warning (the tier's test then skips).
#   OLM_NODE_TOOLS=0 skips them (`make run` needs none of them).
set -euo pipefail
tier="${OLM_TIER:-full}"
out=""
while (($#)); do
  case "$1" in
    --tier) tier="${2:-}"; shift 2 || { echo "ensure-tools: --tier needs a value" >&2; exit 2; } ;;
    --tier=*) tier="${1#--tier=}"; shift ;;
    *) out="$1"; shift ;;
  esac
done
[[ -n "${out}" ]] || { echo "usage: ensure-tools.sh [--tier apiserver|full] ENV_FILE" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
CACHE_ROOT="${OLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/olm-rs}"
mkdir -p "${CACHE_ROOT}/bin"

log() { echo "ensure-tools: $*" >&2; }

assets="$("${here}/build-control-plane.sh" --tier "${tier}" | tail -n 1)"

if [[ -z "${OLM_KUBECTL:-}" ]] && command -v kubectl >/dev/null; then
  kubectl="$(command -v kubectl)"
else
  # Only `make run`'s instructions need kubectl; a failed build is a warning, not a failed set-up.
  kubectl="$("${here}/build-kubectl.sh" | tail -n 1)" || {
    if [[ -n "${OLM_REQUIRE_ALL:-}" && "${OLM_REQUIRE_ALL}" != 0 ]]; then
      log "error: could not build kubectl (see above), and OLM_REQUIRE_ALL is set: the kubectl tests would be skipped"
      exit 1
    fi
    log "warning: could not build kubectl (see above); make run will print no kubectl path, the kubectl tests will be skipped"
    kubectl=""
  }
fi

# OLM_NODE_TOOLS=0 (what `make run` sets: it runs no test) leaves the node binaries out, keeping
# OLM_NODE_ASSETS as given.
if [[ "${OLM_NODE_TOOLS:-1}" == 0 ]]; then
  node="${OLM_NODE_ASSETS:-}"
else
  node="$("${here}/build-node.sh" | tail -n 1)" || {
    if [[ -n "${OLM_REQUIRE_ALL:-}" && "${OLM_REQUIRE_ALL}" != 0 ]]; then
      log "error: could not build the real tier's node binaries (see above), and OLM_REQUIRE_ALL is set"
      exit 1
    fi
    log "warning: could not build the real tier's node binaries (see above); its test will be skipped"
    node=""
  }
fi

registry="${OLM_REGISTRY_BIN:-}"
if [[ -z "${registry}" ]]; then
  if [[ -x "${CACHE_ROOT}/bin/docker-registry" ]]; then
    registry="${CACHE_ROOT}/bin/docker-registry"
  elif command -v docker-registry >/dev/null; then
    registry="$(command -v docker-registry)"
  else
    log "fetching Debian's docker-registry package (unpacked only; its service is never started)"
    tmp="$(mktemp -d)"
    trap 'rm -rf "${tmp}"' EXIT
    # As root, apt downloads as its unprivileged _apt user, which cannot write to our private
    # temporary directory; the download is for unpacking only, so let root fetch it directly.
    apt_opts=()
    if [[ "$(id -u)" == 0 ]]; then apt_opts=(-o APT::Sandbox::User=root); fi
    download() { (cd "${tmp}" && apt-get download -q "${apt_opts[@]}" docker-registry >&2); }
    if ! download; then
      # A fresh machine may have no package lists yet.
      if [[ "$(id -u)" == 0 ]]; then
        log "apt-get download failed; running apt-get update and retrying"
        apt-get update -qq >&2 && download
      else
        false
      fi
    fi || {
      log "apt-get download docker-registry failed; run 'apt-get update' (as root) and retry"
      exit 1
    }
    dpkg-deb -x "${tmp}"/docker-registry_*.deb "${tmp}/x"
    install -m 0755 "${tmp}/x/usr/bin/docker-registry" "${CACHE_ROOT}/bin/docker-registry"
    registry="${CACHE_ROOT}/bin/docker-registry"
  fi
fi

cat > "${out}" <<ENV
export OLM_TEST_ASSETS='${assets}'
export OLM_REGISTRY_BIN='${registry}'
export OLM_KUBECTL='${kubectl}'
export OLM_NODE_ASSETS='${node}'
ENV
log "control plane: ${assets}; registry: ${registry}; kubectl: ${kubectl}; node: ${node}"
