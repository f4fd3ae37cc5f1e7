//! The `real` tier's configuration files and command lines.
//!
//! Input: the node's [`Paths`]. Output: text (TOML, YAML, JSON, a Corefile) and argument vectors.
//! No IO.

use std::path::{Path, PathBuf};

/// The node's address, on a veth inside the tier's network namespace.
pub const NODE_IP: &str = "10.200.0.1";
/// Prefix length of [`NODE_IP`]'s network.
pub const NODE_PREFIX: u8 = 24;
/// Service ClusterIPs (kube-proxy routes them, iptables mode).
pub const SERVICE_CIDR: &str = "10.96.0.0/16";
/// The `kubernetes` Service's ClusterIP (the first of [`SERVICE_CIDR`]).
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";
/// Pod addresses (the bridge CNI's host-local range).
pub const POD_CIDR: &str = "10.244.0.0/24";
/// The bridge's address, the Pods' gateway.
pub const POD_GATEWAY: &str = "10.244.0.1";
/// kube-apiserver's port on [`NODE_IP`].
pub const APISERVER_PORT: u16 = 6443;
/// The tier's plain-HTTP registry's port on [`NODE_IP`].
pub const REGISTRY_PORT: u16 = 5000;
/// The Node's name.
pub const NODE_NAME: &str = "olm-real-node";
/// The cluster's DNS domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";
/// The sandbox image's repository in the tier's registry.
pub const PAUSE_REPOSITORY: &str = "olm-real/pause";
/// A PATH with the system directories (iptables, runc and the shims live in sbin directories a
/// test's PATH may lack).
pub const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// `NODE_IP:REGISTRY_PORT`, the registry part of image references every component uses.
pub fn registry_host() -> String {
    format!("{NODE_IP}:{REGISTRY_PORT}")
}

/// The sandbox image's reference (by tag: containerd's configuration names it before it is pushed).
pub fn pause_image() -> String {
    format!("{}/{PAUSE_REPOSITORY}:v1", registry_host())
}

/// `https://NODE_IP:APISERVER_PORT`.
pub fn server_url() -> String {
    format!("https://{NODE_IP}:{APISERVER_PORT}")
}

/// Where each file of one tier instance lives under its scratch directory.
#[derive(Clone, Debug)]
pub struct Paths {
    root: PathBuf,
}

impl Paths {
    pub fn new(root: &Path) -> Paths {
        Paths {
            root: root.to_path_buf(),
        }
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The control plane's layout (PKI, kubeconfig, etcd data).
    pub fn plane(&self) -> PathBuf {
        self.root.join("plane")
    }
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }
    pub fn containerd_config(&self) -> PathBuf {
        self.root.join("containerd/config.toml")
    }
    pub fn containerd_root(&self) -> PathBuf {
        self.root.join("containerd/root")
    }
    pub fn containerd_state(&self) -> PathBuf {
        self.root.join("containerd/state")
    }
    pub fn containerd_socket(&self) -> PathBuf {
        self.root.join("containerd/containerd.sock")
    }
    pub fn containerd_hosts_dir(&self) -> PathBuf {
        self.root.join("containerd/certs.d")
    }
    pub fn runc_root(&self) -> PathBuf {
        self.root.join("runc")
    }
    pub fn cni_conf_dir(&self) -> PathBuf {
        self.root.join("cni/net.d")
    }
    pub fn cni_ipam_dir(&self) -> PathBuf {
        self.root.join("cni/ipam")
    }
    pub fn kubelet_config(&self) -> PathBuf {
        self.root.join("kubelet.yaml")
    }
    pub fn kubelet_root(&self) -> PathBuf {
        self.root.join("kubelet")
    }
    pub fn pod_logs(&self) -> PathBuf {
        self.root.join("pod-logs")
    }
    pub fn resolv_conf(&self) -> PathBuf {
        self.root.join("resolv.conf")
    }
    pub fn kube_proxy_config(&self) -> PathBuf {
        self.root.join("kube-proxy.yaml")
    }
    pub fn corefile(&self) -> PathBuf {
        self.root.join("Corefile")
    }
    pub fn registry_config(&self) -> PathBuf {
        self.root.join("registry.yaml")
    }
    pub fn registry_storage(&self) -> PathBuf {
        self.root.join("registry")
    }
}

fn p(path: PathBuf) -> String {
    path.display().to_string()
}

/// containerd 1.6: its own root, state and socket; overlayfs; runc with the cgroupfs driver and its
/// own state root; the bridge CNI; the plain-HTTP registry through `hosts.toml`; oom_score_adj
/// restricted (runc cannot lower it without `CAP_SYS_RESOURCE`); nothing that writes outside
/// the scratch directory (the `opt` plugin) or needs other hosts.
pub fn containerd(paths: &Paths, cni_bin_dir: &Path, runc: &Path) -> String {
    format!(
        r#"version = 2
root = "{root}"
state = "{state}"
disabled_plugins = [
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  disable_hugetlb_controller = true
  tolerate_missing_hugetlb_controller = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        Root = "{runc_root}"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{hosts}"
"#,
        root = p(paths.containerd_root()),
        state = p(paths.containerd_state()),
        socket = p(paths.containerd_socket()),
        pause = pause_image(),
        runc = runc.display(),
        runc_root = p(paths.runc_root()),
        cni_bin = cni_bin_dir.display(),
        cni_conf = p(paths.cni_conf_dir()),
        hosts = p(paths.containerd_hosts_dir()),
    )
}

/// `certs.d/HOST/hosts.toml`: the tier's registry over plain HTTP.
pub fn registry_hosts_toml() -> String {
    let host = registry_host();
    format!(
        "server = \"http://{host}\"\n\n[host.\"http://{host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
    )
}

/// The bridge network: one bridge `cni0`, host-local addresses from [`POD_CIDR`] kept in the
/// scratch directory, hairpin on (a Pod reaching its own Service).
pub fn cni_conflist(paths: &Paths) -> String {
    serde_json::json!({
        "cniVersion": "0.4.0",
        "name": "olm-real",
        "plugins": [{
            "type": "bridge",
            "bridge": "cni0",
            "isGateway": true,
            "ipMasq": false,
            "hairpinMode": true,
            "ipam": {
                "type": "host-local",
                "dataDir": p(paths.cni_ipam_dir()),
                "ranges": [[{"subnet": POD_CIDR, "gateway": POD_GATEWAY}]],
                "routes": [{"dst": "0.0.0.0/0"}],
            },
        }],
    })
    .to_string()
}

/// kubelet: cgroupfs under its own root cgroup (cgroup v1 allowed), containerd's socket, every
/// directory in the scratch directory, DNS at CoreDNS on the node address, Pods synced (and
/// mounted Secrets refreshed) every 3 s rather than every minute, eviction effectively
/// off (a shared build machine's disk must not evict the tier's Pods), webhook authentication and
/// authorization against the API server.
pub fn kubelet(paths: &Paths, cgroup_root: &str, ca_file: &Path) -> String {
    format!(
        r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: /{cgroup_root}
cgroupsPerQOS: true
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://{socket}
address: {NODE_IP}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
clusterDomain: {CLUSTER_DOMAIN}
clusterDNS: [{NODE_IP}]
resolvConf: {resolv}
podLogsDir: {pod_logs}
localStorageCapacityIsolation: false
syncFrequency: 3s
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: true}}
  x509: {{clientCAFile: {ca}}}
authorization:
  mode: Webhook
"#,
        socket = p(paths.containerd_socket()),
        resolv = p(paths.resolv_conf()),
        pod_logs = p(paths.pod_logs()),
        ca = ca_file.display(),
    )
}

/// kubelet's command line (the rest is in [`kubelet`]'s file).
pub fn kubelet_args(paths: &Paths, kubeconfig: &Path) -> Vec<String> {
    vec![
        format!("--config={}", p(paths.kubelet_config())),
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--hostname-override={NODE_NAME}"),
        format!("--node-ip={NODE_IP}"),
        format!("--root-dir={}", p(paths.kubelet_root())),
        format!("--cert-dir={}", p(paths.kubelet_root().join("pki"))),
        "--v=1".into(),
    ]
}

/// kube-proxy in iptables mode for [`POD_CIDR`], touching no host-wide sysctl (conntrack limits
/// and timeouts left alone).
pub fn kube_proxy(kubeconfig: &Path) -> String {
    format!(
        r#"apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: {kubeconfig}
hostnameOverride: {NODE_NAME}
bindAddress: {NODE_IP}
clusterCIDR: {POD_CIDR}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
"#,
        kubeconfig = kubeconfig.display(),
    )
}

/// CoreDNS answering for the cluster domain from the API server, on every address of the node's
/// namespace (Pods reach it at [`NODE_IP`]); other names get no answer (nothing is forwarded).
pub fn corefile(kubeconfig: &Path, context: &str) -> String {
    format!(
        ".:53 {{\n    errors\n    health 127.0.0.1:8080\n    ready 127.0.0.1:8181\n    \
         kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{\n        kubeconfig {} {context}\n        \
         pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n    }}\n    cache 5\n}}\n",
        kubeconfig.display()
    )
}

/// docker-registry on the node address, plain HTTP, storage in the scratch directory.
pub fn registry(paths: &Paths) -> String {
    format!(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  \
         delete:\n    enabled: true\nhttp:\n  addr: {}\n  secret: olm-real-fixed-secret\n",
        p(paths.registry_storage()),
        registry_host()
    )
}

/// The kube-apiserver flags of the shared plane, changed for a node: listening and advertising on
/// the node address (the `kubernetes` Service's endpoint), Service IPs from [`SERVICE_CIDR`], the
/// endpoint reconciler on, and a client certificate for the kubelet (logs, exec).
pub fn apiserver(mut args: Vec<String>, kubelet_cert: &Path, kubelet_key: &Path) -> Vec<String> {
    args.retain(|a| {
        !a.starts_with("--bind-address=")
            && !a.starts_with("--advertise-address=")
            && !a.starts_with("--service-cluster-ip-range=")
            && !a.starts_with("--endpoint-reconciler-type=")
    });
    args.extend([
        format!("--bind-address={NODE_IP}"),
        format!("--advertise-address={NODE_IP}"),
        format!("--service-cluster-ip-range={SERVICE_CIDR}"),
        format!("--kubelet-client-certificate={}", kubelet_cert.display()),
        format!("--kubelet-client-key={}", kubelet_key.display()),
        "--kubelet-preferred-address-types=InternalIP".into(),
    ]);
    args
}

/// The kube-controller-manager flags of the shared plane plus the controllers a real node needs
/// (Service endpoints).
pub fn controller_manager(mut args: Vec<String>) -> Vec<String> {
    let mut controllers: Vec<&str> = crate::control_plane::flags::CONTROLLERS.to_vec();
    controllers.extend([
        "endpoints-controller",
        "endpointslice-controller",
        "endpointslice-mirroring-controller",
    ]);
    for a in &mut args {
        if a.starts_with("--controllers=") {
            *a = format!("--controllers={}", controllers.join(","));
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_in_the_files_is_in_the_scratch_directory_or_a_system_binary_directory() {
        let paths = Paths::new(Path::new("/scratch"));
        let texts = [
            containerd(
                &paths,
                Path::new("/usr/lib/cni"),
                Path::new("/usr/sbin/runc"),
            ),
            cni_conflist(&paths),
            kubelet(&paths, "olm-real-1", Path::new("/scratch/plane/pki/ca.crt")),
            kube_proxy(Path::new("/scratch/plane/kubeconfig")),
            registry(&paths),
        ];
        for text in texts {
            for word in text.split(|c: char| c.is_whitespace() || c == '"' || c == ',') {
                if word.starts_with('/') && word.len() > 1 {
                    assert!(
                        word.starts_with("/scratch/")
                            || word.starts_with("/usr/")
                            || word == "/olm-real-1",
                        "{word} in\n{text}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_apiserver_listens_and_advertises_on_the_node_address_only() {
        let args = apiserver(
            vec![
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                "--endpoint-reconciler-type=none".into(),
                "--service-cluster-ip-range=127.64.0.0/16".into(),
            ],
            Path::new("/k.crt"),
            Path::new("/k.key"),
        );
        assert!(args.contains(&format!("--bind-address={NODE_IP}")));
        assert!(args.contains(&format!("--advertise-address={NODE_IP}")));
        assert!(!args.iter().any(|a| a.contains("127.")));
        assert!(!args.iter().any(|a| a.starts_with("--endpoint-reconciler")));
    }
}
