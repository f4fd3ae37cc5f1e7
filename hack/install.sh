#!/usr/bin/env bash
# Installs OLM v1 from a release manifest (`make release-manifest`) into the cluster kubectl talks
# to, and waits until it is ready: both CRDs Established, both Deployments rolled out and
# Available.
#
#   hack/install.sh MANIFEST        (make deploy MANIFEST=... runs this)
#
# The standalone manifest needs two serving certificates: catalogd's, the Secret
# olmv1-system/catalogd-service-cert, and operator-controller's for its metrics, the Secret
# olmv1-system/operator-controller-cert (each tls.crt, tls.key, ca.crt). When one does not exist,
# this script makes it with openssl: a self-signed CA and a certificate for that component's
# Service, valid ten years. An existing Secret is kept, so re-running the script (an upgrade)
# changes no certificate. The cert-manager manifest needs cert-manager installed first; cert-manager
# then issues both Secrets.
#
# Environment: KUBECTL (default kubectl), OLM_INSTALL_TIMEOUT (default 300s, per wait).
set -euo pipefail

manifest="${1:?usage: install.sh MANIFEST}"
kubectl="${KUBECTL:-kubectl}"
timeout="${OLM_INSTALL_TIMEOUT:-300s}"
namespace=olmv1-system

log() { echo "install: $*" >&2; }

[[ -r "${manifest}" ]] || { log "cannot read ${manifest}"; exit 1; }
command -v "${kubectl}" >/dev/null || { log "kubectl not found (set KUBECTL)"; exit 1; }

cert_manager=false
if grep -q '^apiVersion: cert-manager.io/' "${manifest}"; then
  cert_manager=true
  "${kubectl}" get crd certificates.cert-manager.io >/dev/null || {
    log "this manifest needs cert-manager; install it first (https://cert-manager.io/docs/installation/)"
    exit 1
  }
fi

# Server-side apply: the CRDs are too large for client-side apply's last-applied annotation.
log "applying ${manifest}"
"${kubectl}" apply --server-side --force-conflicts --field-manager=olm-install -f "${manifest}"

# make_certificate SECRET SERVICE: a self-signed CA and a serving certificate for SERVICE, stored
# as SECRET, unless SECRET exists.
make_certificate() {
  local secret="$1" service="$2" tmp
  "${kubectl}" -n "${namespace}" get secret "${secret}" >/dev/null 2>&1 && return 0
  command -v openssl >/dev/null || { log "openssl is needed to make ${secret}"; exit 1; }
  log "creating ${namespace}/${secret} (self-signed CA and serving certificate)"
  tmp="${keys}/${secret}"
  mkdir -m 700 "${tmp}"
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -days 3650 -subj "/CN=olmv1-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "${tmp}/ca.key" -out "${tmp}/ca.crt" 2>/dev/null
  openssl req "${ec[@]}" -subj "/CN=${service}.${namespace}.svc" \
    -keyout "${tmp}/tls.key" -out "${tmp}/tls.csr" 2>/dev/null
  cat > "${tmp}/ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:${service}.${namespace}.svc,DNS:${service}.${namespace}.svc.cluster.local,DNS:localhost
EXT
  openssl x509 -req -in "${tmp}/tls.csr" -CA "${tmp}/ca.crt" -CAkey "${tmp}/ca.key" \
    -CAcreateserial -days 3650 -extfile "${tmp}/ext" -out "${tmp}/tls.crt" 2>/dev/null
  "${kubectl}" -n "${namespace}" create secret generic "${secret}" --type=kubernetes.io/tls \
    --from-file=tls.crt="${tmp}/tls.crt" --from-file=tls.key="${tmp}/tls.key" \
    --from-file=ca.crt="${tmp}/ca.crt"
}

if [[ "${cert_manager}" == false ]]; then
  # The private keys exist on disk only while this script runs.
  keys="$(mktemp -d)"
  trap 'rm -rf "${keys}"' EXIT
  make_certificate catalogd-service-cert catalogd-service
  make_certificate operator-controller-cert operator-controller-service
fi

log "waiting for the CRDs and Deployments"
"${kubectl}" wait --for=condition=Established --timeout="${timeout}" \
  crd/clustercatalogs.olm.operatorframework.io crd/clusterextensions.olm.operatorframework.io
for deployment in catalogd-controller-manager operator-controller-controller-manager; do
  "${kubectl}" -n "${namespace}" rollout status "deployment/${deployment}" --timeout="${timeout}"
  "${kubectl}" -n "${namespace}" wait --for=condition=Available --timeout="${timeout}" "deployment/${deployment}"
done
log "OLM v1 is installed in ${namespace}"
