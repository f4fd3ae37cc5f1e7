//! Command lines of the control-plane components.
//!
//! Input: the scratch-directory layout and the ports. Output: argument vectors. No IO.
//!
//! Every address a component listens on or advertises is on 127.0.0.1, and the Service and Pod
//! address ranges are inside 127.0.0.0/8 too: should anything ever dial a Service IP (a webhook
//! registered by a bundle, say) or a Pod IP, the connection stays on this machine.

use std::path::{Path, PathBuf};

/// Loopback address every component binds to and advertises.
pub const LOOPBACK: &str = "127.0.0.1";
/// Service ClusterIPs are allocated from here (inside 127.0.0.0/8, see the module docs).
pub const SERVICE_CIDR: &str = "127.64.0.0/16";
/// kwok hands out Pod IPs from here (`IP/prefix` form, as kwok expects).
pub const POD_CIDR: &str = "127.128.0.1/16";
/// Issuer of service-account tokens (and their default audience).
pub const SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc";
/// The annotation that makes kwok manage a Node, as `key=value`.
pub const KWOK_NODE_SELECTOR: &str = "kwok.x-k8s.io/node=fake";

/// kube-controller-manager controllers the tests rely on: garbage collection by ownerReference,
/// namespace deletion, Deployments becoming Available, service accounts and their tokens, the
/// `kube-root-ca.crt` ConfigMap, ClusterRole aggregation, ValidatingAdmissionPolicy type-checking
/// status (upstream's acceptance suite reads it), and the other workload controllers a bundle may
/// use. Controllers that need a cloud, a kubelet or a CSR signing key are left out.
pub const CONTROLLERS: &[&str] = &[
    "clusterrole-aggregation-controller",
    "cronjob-controller",
    "daemonset-controller",
    "deployment-controller",
    "disruption-controller",
    "garbage-collector-controller",
    "job-controller",
    "namespace-controller",
    "pod-garbage-collector-controller",
    "replicaset-controller",
    "root-ca-certificate-publisher-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
    "validatingadmissionpolicy-status-controller",
];

/// Where each file of a control plane lives inside its scratch directory.
#[derive(Clone, Debug)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    pub fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
        }
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn ca_cert(&self) -> PathBuf {
        self.root.join("pki/ca.crt")
    }
    pub fn serving_cert(&self) -> PathBuf {
        self.root.join("pki/apiserver.crt")
    }
    pub fn serving_key(&self) -> PathBuf {
        self.root.join("pki/apiserver.key")
    }
    pub fn admin_cert(&self) -> PathBuf {
        self.root.join("pki/admin.crt")
    }
    pub fn admin_key(&self) -> PathBuf {
        self.root.join("pki/admin.key")
    }
    pub fn service_account_key(&self) -> PathBuf {
        self.root.join("pki/sa.key")
    }
    pub fn service_account_pub(&self) -> PathBuf {
        self.root.join("pki/sa.pub")
    }
    pub fn kubeconfig(&self) -> PathBuf {
        self.root.join("kubeconfig")
    }
    pub fn etcd_data(&self) -> PathBuf {
        self.root.join("etcd")
    }
    pub fn apiserver_cert_dir(&self) -> PathBuf {
        self.root.join("apiserver-certs")
    }
    pub fn kwok_config(&self) -> PathBuf {
        self.root.join("kwok.yaml")
    }
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// The API server's audit policy: every mutating request, at metadata level.
    pub fn audit_policy(&self) -> PathBuf {
        self.root.join("audit-policy.yaml")
    }
    /// The API server's audit log (JSON lines), which tests read to prove who wrote what.
    pub fn audit_log(&self) -> PathBuf {
        self.logs().join("audit.log")
    }
}

fn p(path: PathBuf) -> String {
    path.display().to_string()
}

/// etcd: client and peer URLs on loopback, no fsync (the data is thrown away).
pub fn etcd(layout: &Layout, client_port: u16, peer_port: u16) -> Vec<String> {
    let client = format!("http://{LOOPBACK}:{client_port}");
    let peer = format!("http://{LOOPBACK}:{peer_port}");
    vec![
        "--name=default".into(),
        format!("--data-dir={}", p(layout.etcd_data())),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=default={peer}"),
        "--initial-cluster-state=new".into(),
        "--unsafe-no-fsync=true".into(),
        "--log-level=warn".into(),
    ]
}

/// The audit policy: mutating requests at `Metadata` level (who, what, when), nothing else, so
/// tests can count and attribute writes.
pub const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  verbs: [create, update, patch, delete, deletecollection]\n- level: None\n";

/// kube-apiserver with client-certificate authentication, RBAC, and service-account tokens
/// (so the TokenRequest API works), auditing every mutating request ([`AUDIT_POLICY`]).
///
/// Admission plugins turned off, and why:
/// - `TaintNodesByCondition` always: it taints every new Node `not-ready`, and only the
///   node-lifecycle controller (which we do not run: it would evict kwok's Pods whenever a
///   heartbeat is late) lifts the taint.
/// - `ServiceAccount` when `with_controllers` is false: without kube-controller-manager nothing
///   creates `default` ServiceAccounts, and the plugin rejects Pods whose service account is missing.
pub fn apiserver(
    layout: &Layout,
    secure_port: u16,
    etcd_port: u16,
    with_controllers: bool,
) -> Vec<String> {
    let mut args = vec![
        format!("--etcd-servers=http://{LOOPBACK}:{etcd_port}"),
        format!("--bind-address={LOOPBACK}"),
        format!("--advertise-address={LOOPBACK}"),
        format!("--secure-port={secure_port}"),
        format!("--cert-dir={}", p(layout.apiserver_cert_dir())),
        format!("--tls-cert-file={}", p(layout.serving_cert())),
        format!("--tls-private-key-file={}", p(layout.serving_key())),
        format!("--client-ca-file={}", p(layout.ca_cert())),
        format!("--service-account-issuer={SERVICE_ACCOUNT_ISSUER}"),
        format!(
            "--service-account-key-file={}",
            p(layout.service_account_pub())
        ),
        format!(
            "--service-account-signing-key-file={}",
            p(layout.service_account_key())
        ),
        "--authorization-mode=RBAC".into(),
        format!("--service-cluster-ip-range={SERVICE_CIDR}"),
        "--allow-privileged=true".into(),
        // Endpoints may not hold loopback addresses, so the apiserver's own endpoints cannot be
        // published; nothing in the tests reaches the API through the `kubernetes` Service.
        "--endpoint-reconciler-type=none".into(),
        "--enable-priority-and-fairness=false".into(),
        // Off unless a benchmark asks for the API server's CPU profile (`/debug/pprof`).
        format!("--profiling={}", apiserver_profiling()),
        format!("--audit-policy-file={}", p(layout.audit_policy())),
        format!("--audit-log-path={}", p(layout.audit_log())),
        "--audit-log-format=json".into(),
        "--audit-log-mode=blocking".into(),
    ];
    args.push(if with_controllers {
        "--disable-admission-plugins=TaintNodesByCondition".into()
    } else {
        "--disable-admission-plugins=TaintNodesByCondition,ServiceAccount".into()
    });
    args
}

/// Set to `1`, kube-apiserver serves Go's profiles at `/debug/pprof` (to the admin
/// credentials), so a benchmark can see where the API server's CPU goes.
pub const APISERVER_PROFILING_ENV: &str = "OLM_APISERVER_PROFILING";

fn apiserver_profiling() -> bool {
    std::env::var(APISERVER_PROFILING_ENV).is_ok_and(|v| v == "1")
}

/// kube-controller-manager: no serving port, no leader election, admin credentials.
pub fn controller_manager(layout: &Layout) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", p(layout.kubeconfig())),
        "--leader-elect=false".into(),
        format!("--bind-address={LOOPBACK}"),
        "--secure-port=0".into(),
        format!("--controllers={}", CONTROLLERS.join(",")),
        format!("--root-ca-file={}", p(layout.ca_cert())),
        format!(
            "--service-account-private-key-file={}",
            p(layout.service_account_key())
        ),
        "--use-service-account-credentials=false".into(),
    ]
}

/// kube-scheduler: no serving port, no leader election, admin credentials.
pub fn scheduler(layout: &Layout) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", p(layout.kubeconfig())),
        "--leader-elect=false".into(),
        format!("--bind-address={LOOPBACK}"),
        "--secure-port=0".into(),
    ]
}

/// kwok, managing only Nodes annotated with [`KWOK_NODE_SELECTOR`], giving them a loopback
/// address and Pod IPs from [`POD_CIDR`]. Its own server stays off (no `--server-address`).
pub fn kwok(layout: &Layout) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", p(layout.kubeconfig())),
        format!("--config={}", p(layout.kwok_config())),
        "--manage-all-nodes=false".into(),
        format!("--manage-nodes-with-annotation-selector={KWOK_NODE_SELECTOR}"),
        format!("--node-ip={LOOPBACK}"),
        format!("--cidr={POD_CIDR}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_flags() -> Vec<String> {
        let layout = Layout::new(Path::new("/scratch"));
        [
            etcd(&layout, 1, 2),
            apiserver(&layout, 3, 1, true),
            controller_manager(&layout),
            scheduler(&layout),
            kwok(&layout),
        ]
        .concat()
    }

    #[test]
    fn every_address_flag_names_loopback() {
        for flag in all_flags() {
            let (name, value) = flag.split_once('=').unwrap();
            let is_address = name.contains("url")
                || name.contains("address")
                || name.contains("servers")
                || name.contains("cidr")
                || name.contains("ip-range")
                || name == "--node-ip"
                || name == "--initial-cluster";
            if is_address {
                assert!(
                    value.contains("127."),
                    "{flag} does not point at 127.0.0.0/8"
                );
                assert!(!value.contains("0.0.0.0"), "{flag} binds every interface");
            }
        }
    }

    #[test]
    fn components_without_a_port_do_not_serve() {
        let layout = Layout::new(Path::new("/scratch"));
        assert!(controller_manager(&layout).contains(&"--secure-port=0".to_string()));
        assert!(scheduler(&layout).contains(&"--secure-port=0".to_string()));
        assert!(
            !kwok(&layout)
                .iter()
                .any(|f| f.starts_with("--server-address"))
        );
    }

    #[test]
    fn service_account_admission_is_off_only_without_controllers() {
        let layout = Layout::new(Path::new("/scratch"));
        let disabled = |with_controllers| {
            apiserver(&layout, 1, 2, with_controllers)
                .into_iter()
                .find_map(|f| {
                    f.strip_prefix("--disable-admission-plugins=")
                        .map(str::to_owned)
                })
                .unwrap()
        };
        assert!(disabled(false).split(',').any(|p| p == "ServiceAccount"));
        assert!(!disabled(true).split(',').any(|p| p == "ServiceAccount"));
        assert!(
            disabled(true)
                .split(',')
                .any(|p| p == "TaintNodesByCondition")
        );
    }

    #[test]
    fn every_file_lives_in_the_scratch_directory() {
        for flag in all_flags() {
            if let Some((_, value)) = flag.split_once('=')
                && value.starts_with('/')
            {
                assert!(value.starts_with("/scratch/"), "{flag}");
            }
        }
    }
}
