#!/usr/bin/env bash
# Builds what the `real` test tier's node needs beside the Debian packages (containerd, runc, the CNI
# plugins): kubelet and kube-proxy at the test control plane's Kubernetes version, crictl, a CoreDNS
# with only the plugins the tier uses, `pause`, the Pod sandbox's process (a static binary the
# tier packs into the sandbox image it pushes to its own registry; no public registry is reachable),
# `webhook`, the admission webhook server a test bundle's Pod runs (standard library only), and
# cert-manager's controller and cainjector with its CRDs (for the release manifest's cert-manager
# variant). cert-manager v1.11.5 is the newest release whose commands live in its main Go module:
# from v1.12 they are modules of their own (github.com/cert-manager/cert-manager/cmd/controller),
# which the Go module proxy does not serve. Everything is compiled from Go modules into a cache
# directory outside the clone, as hack/build-control-plane.sh compiles the control plane (the wrapper
# Go modules are written into the cache at build time, never committed). Prints the directory holding
# the binaries on its last line of stdout.
#
# kubelet and kube-proxy share most packages with the control plane, so after that build they mostly
# link. CoreDNS is a module of its own (other library versions), built at the same time.
#
# Environment:
#   OLM_NODE_ASSETS  if it holds all four binaries, those are used and nothing is built
#   OLM_CACHE_DIR    cache root (default: $XDG_CACHE_HOME/olm-rs or ~/.cache/olm-rs)
set -euo pipefail

K8S_VERSION=v1.34.4
K8S_STAGING_VERSION=v0.34.4
CRICTL_VERSION=v1.34.0
COREDNS_VERSION=v1.12.4
CERT_MANAGER_VERSION=v1.11.5

log() { echo "build-node: $*" >&2; }

wanted=(kubelet kube-proxy crictl coredns pause webhook cert-manager-controller cert-manager-cainjector)

if [[ -n "${OLM_NODE_ASSETS:-}" ]]; then
  have_all=true
  for b in "${wanted[@]}"; do [[ -x "${OLM_NODE_ASSETS}/${b}" ]] || have_all=false; done
  if ${have_all}; then
    log "using existing binaries from OLM_NODE_ASSETS=${OLM_NODE_ASSETS}"
    echo "${OLM_NODE_ASSETS}"
    exit 0
  fi
fi

CACHE_ROOT="${OLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/olm-rs}"
OUT="${CACHE_ROOT}/node/${K8S_VERSION}-crictl${CRICTL_VERSION}-coredns${COREDNS_VERSION}"
BIN="${OUT}/bin"
STAMP="${OUT}/.complete"
WANT="k8s=${K8S_VERSION} crictl=${CRICTL_VERSION} coredns=${COREDNS_VERSION} pause=1 webhook=1 cert-manager=${CERT_MANAGER_VERSION}"

TIMINGS_FILE="${OUT}/build-times"
# Until this machine records its own: the 2-core development machine with an empty Go build cache
# (1,899 packages in 474 s at load 6-16). After the control plane's build most of kubelet's
# packages are cached and it takes about half that.
TIMING_DEFAULTS="modules_s 30 compile_s 480 compile_pkgs 1900 link_s 10 nproc 2"
# shellcheck source=hack/lib/go-build.sh
source "$(dirname "$0")/lib/go-build.sh"

all_built() {
  [[ "$(cat "${STAMP}" 2>/dev/null)" == "${WANT}" ]] || return 1
  local b v
  for b in "${wanted[@]}"; do [[ -x "${BIN}/${b}" ]] || return 1; done
  [[ -s "${BIN}/cert-manager-crds.yaml" ]] || return 1
  v="$("${BIN}/kubelet" --version 2>/dev/null)" || return 1
  [[ "${v}" == *"Kubernetes ${K8S_VERSION}"* ]]
}

if all_built; then
  log "binaries for ${WANT} already built in ${BIN}"
  echo "${BIN}"
  exit 0
fi

command -v go >/dev/null || { log "go is required to build the node's binaries"; exit 1; }
mkdir -p "${OUT}" "${BIN}"
exec 9>"${OUT}/.lock"
if ! flock -n 9; then
  log "another build is writing ${OUT}; waiting for it"
  flock 9
  if all_built; then
    log "binaries for ${WANT} built meanwhile in ${BIN}"
    echo "${BIN}"
    exit 0
  fi
fi
rm -f "${STAMP}"

# Same policy as hack/build-control-plane.sh.
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

# kubelet and kube-proxy: the control plane's wrapper module shape, so its build cache is reused.
WORK="${OUT}/wrapper"
mkdir -p "${WORK}"
{
  echo "module olm-rs.local/nodebins"
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
} >"${WORK}/go.mod"
cat >"${WORK}/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO

# crictl: its own module's versions.
CRICTL_WORK="${OUT}/crictl-wrapper"
mkdir -p "${CRICTL_WORK}"
printf 'module olm-rs.local/crictl\n\ngo 1.24.0\n\nrequire sigs.k8s.io/cri-tools %s\n' "${CRICTL_VERSION}" >"${CRICTL_WORK}/go.mod"
printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/cri-tools/cmd/crictl"\n' >"${CRICTL_WORK}/tools.go"

# CoreDNS with the few plugins the tier's Corefile names, not the whole plugin set (which pulls in
# every cloud provider's SDK): a main package of our own, written here.
DNS_WORK="${OUT}/coredns-wrapper"
mkdir -p "${DNS_WORK}"
printf 'module olm-rs.local/coredns\n\ngo 1.24.0\n\nrequire github.com/coredns/coredns %s\n' "${COREDNS_VERSION}" >"${DNS_WORK}/go.mod"
cat >"${DNS_WORK}/main.go" <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{"log", "errors", "health", "ready", "cache", "kubernetes"}
}

func main() { coremain.Run() }
GO

# pause: sleeps until SIGINT or SIGTERM, then exits 0 (what a sandbox container has to do).
PAUSE_WORK="${OUT}/pause"
mkdir -p "${PAUSE_WORK}"
printf 'module olm-rs.local/pause\n\ngo 1.24.0\n' >"${PAUSE_WORK}/go.mod"
cat >"${PAUSE_WORK}/main.go" <<'GO'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
GO

# webhook: HTTPS on :9443 with the certificate the built-in provider mounts, re-read for every
# handshake (so a rotated certificate is served once the kubelet updates the volume).
#   /mutate   adds the annotation olm-real/served-by-cert: the SHA-256 of the certificate this
#             connection was served (proof of which certificate the API server accepted)
#   /validate refuses an object whose data has the key `forbidden`
WEBHOOK_WORK="${OUT}/webhook"
mkdir -p "${WEBHOOK_WORK}"
printf 'module olm-rs.local/webhook\n\ngo 1.24.0\n' >"${WEBHOOK_WORK}/go.mod"
cat >"${WEBHOOK_WORK}/main.go" <<'GO'
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"log"
	"net"
	"net/http"
	"sync"
)

const dir = "/tmp/k8s-webhook-server/serving-certs/"

type ctxKey struct{}

var served sync.Map // net.Conn -> fingerprint of the certificate served on it

type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID    string `json:"uid"`
		Object struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
		} `json:"object"`
	} `json:"request"`
	Response map[string]any `json:"response,omitempty"`
}

func handle(mutate bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in review
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		resp := map[string]any{"uid": in.Request.UID, "allowed": true}
		if mutate {
			fp := ""
			if c, ok := r.Context().Value(ctxKey{}).(*tls.Conn); ok {
				if v, ok := served.Load(c.NetConn()); ok {
					fp = v.(string)
				}
			}
			var patch []map[string]any
			if in.Request.Object.Metadata.Annotations == nil {
				patch = append(patch, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{}})
			}
			patch = append(patch, map[string]any{"op": "add", "path": "/metadata/annotations/olm-real~1served-by-cert", "value": fp})
			body, _ := json.Marshal(patch)
			resp["patchType"] = "JSONPatch"
			resp["patch"] = body
		} else if _, ok := in.Request.Object.Data["forbidden"]; ok {
			resp["allowed"] = false
			resp["status"] = map[string]any{"code": 403, "message": "olm-real webhook: the key forbidden is not allowed"}
		}
		out := review{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Response: resp}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
}

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", handle(true))
	mux.HandleFunc("/validate", handle(false))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	server := &http.Server{
		Addr:        ":9443",
		Handler:     mux,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, ctxKey{}, c) },
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				if t, ok := c.(*tls.Conn); ok {
					served.Delete(t.NetConn())
				}
			}
		},
		TLSConfig: &tls.Config{GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(dir+"tls.crt", dir+"tls.key")
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256(cert.Certificate[0])
			served.Store(hello.Conn, hex.EncodeToString(sum[:]))
			return &cert, nil
		}},
	}
	log.Fatal(server.ListenAndServeTLS("", ""))
}
GO

# cert-manager: its controller and cainjector, each a main of our own calling the command the
# release's main package builds (the v1.11 module has no replace directive we could not repeat).
CM_WORK="${OUT}/cert-manager-wrapper"
mkdir -p "${CM_WORK}/controller" "${CM_WORK}/cainjector"
cat >"${CM_WORK}/go.mod" <<MOD
module olm-rs.local/certmanager

go 1.24.0

require github.com/cert-manager/cert-manager ${CERT_MANAGER_VERSION}

replace github.com/miekg/dns v1.1.41 => github.com/miekg/dns v1.1.34
MOD
cat >"${CM_WORK}/controller/main.go" <<'GO'
package main

import (
	"flag"

	"github.com/cert-manager/cert-manager/cmd/controller/app"
	"github.com/cert-manager/cert-manager/cmd/util"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

func main() {
	stop, exit := util.SetupExitHandler(util.GracefulShutdown)
	defer exit()
	logf.InitLogs(flag.CommandLine)
	defer logf.FlushLogs()
	cmd := app.NewCommandStartCertManagerController(stop)
	cmd.Flags().AddGoFlagSet(flag.CommandLine)
	_ = flag.CommandLine.Parse([]string{})
	if err := cmd.Execute(); err != nil {
		logf.Log.Error(err, "error while executing")
		util.SetExitCode(err)
	}
}
GO
cat >"${CM_WORK}/cainjector/main.go" <<'GO'
package main

import (
	"context"
	"flag"
	"os"

	"github.com/cert-manager/cert-manager/cmd/cainjector/app"
	"github.com/cert-manager/cert-manager/cmd/util"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	stop, exit := util.SetupExitHandler(util.GracefulShutdown)
	defer exit()
	logf.InitLogs(flag.CommandLine)
	defer logf.FlushLogs()
	ctrl.SetLogger(logf.Log)
	ctx := util.ContextWithStopCh(context.Background(), stop)
	cmd := app.NewCommandStartInjectorController(ctx, os.Stdout, os.Stderr)
	cmd.Flags().AddGoFlagSet(flag.CommandLine)
	_ = flag.CommandLine.Parse([]string{})
	if err := cmd.Execute(); err != nil {
		cmd.PrintErrln(err)
		util.SetExitCode(err)
	}
}
GO

log "building kubelet, kube-proxy ${K8S_VERSION}, crictl ${CRICTL_VERSION}, coredns ${COREDNS_VERSION} and cert-manager ${CERT_MANAGER_VERSION} on ${CORES} cores, with a progress line every ${PROGRESS_EVERY} s"
resolve_modules "step 1 of 2" "${WORK}" "${CRICTL_WORK}" "${DNS_WORK}" "${CM_WORK}"

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean"
done
mkdir -p "${WORK}/out"
add_build "${WORK}" "kubelet, kube-proxy ${K8S_VERSION}" "${WORK}/out/" "${ldflags}" \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
add_build "${CRICTL_WORK}" "crictl ${CRICTL_VERSION}" "${BIN}/crictl" \
  "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL_VERSION}" sigs.k8s.io/cri-tools/cmd/crictl
add_build "${DNS_WORK}" "coredns ${COREDNS_VERSION}" "${BIN}/coredns" "-s -w" olm-rs.local/coredns
add_build "${PAUSE_WORK}" "pause" "${BIN}/pause" "-s -w" olm-rs.local/pause
add_build "${WEBHOOK_WORK}" "webhook" "${BIN}/webhook" "-s -w" olm-rs.local/webhook
cm_ldflags="-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=${CERT_MANAGER_VERSION}"
add_build "${CM_WORK}" "cert-manager controller ${CERT_MANAGER_VERSION}" "${BIN}/cert-manager-controller" \
  "${cm_ldflags}" olm-rs.local/certmanager/controller
add_build "${CM_WORK}" "cert-manager cainjector ${CERT_MANAGER_VERSION}" "${BIN}/cert-manager-cainjector" \
  "${cm_ldflags}" olm-rs.local/certmanager/cainjector
run_builds "step 2 of 2, compiling the node's binaries"

# cert-manager's CRDs from the module (they carry Helm label templates, dropped here).
cm_dir="$(cd "${CM_WORK}" && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)"
for f in "${cm_dir}"/deploy/crds/crd-*.yaml; do
  echo "---"
  grep -v '{{' "${f}"
done >"${BIN}/cert-manager-crds.yaml"
record_timings

mv -f "${WORK}/out/kubelet" "${WORK}/out/kube-proxy" "${BIN}/"
echo "${WANT}" >"${STAMP}"
all_built || { log "built binaries do not report the expected versions"; exit 1; }
log "done in $(fmt_duration "${SECONDS}"): ${BIN}"
echo "${BIN}"
