//! The `real` tier (issue 29): the project's images as real Pods on a real kubelet, in a network
//! namespace of the test's own (`olm_e2e::real_node`).
//!
//! One test drives the whole tier, because a Node's mounts, cgroups and namespace do not die
//! with the test process: it starts the tier, runs each part in turn, tears the tier down and then
//! asserts nothing of it is left. The parts (each a function below; docs/TESTING.md has the table):
//!
//! - release: the release manifest (`make images` output pushed to the tier's registry) installs
//!   with `hack/install.sh`; both controllers become Available as Pods that the kubelet probed,
//!   with the manifest's security context as the runtime applied it;
//! - metrics: catalogd's metrics scraped through its Service over HTTPS with a ServiceAccount token
//!   bound to `catalogd-metrics-reader`, refused without a token and with a token lacking the role;
//! - ha: catalogd's leader Pod deleted while a client reads the catalog through the Service;
//! - webhooks: a bundle's validating and mutating webhooks served by its own Pod, called by the API
//!   server, across a rotation of the built-in provider's certificate;
//! - upgrade: OLM's own images replaced under an installed extension, which stays untouched;
//! - certmanager: the cert-manager variant over it, with cert-manager running
//!   ([`cert_manager`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use olm_api::v1::{ClusterCatalog, ClusterExtension};
use olm_e2e::eventually::{eventually, eventually_explained};
use olm_e2e::real_node::config::{self as node, POD_CIDR};
use olm_e2e::real_node::{RealCluster, RealError};
use olm_e2e::release::image::{self, HOST_CA_BUNDLE, ImageInput};
use olm_e2e::release::kustomize::parse_objects;
use olm_e2e::release::manifest::{self, COMPONENTS, Variant};
use olm_e2e::scenario::{ExtensionSpec, ObjectKey, Package, Snapshot};
use olm_e2e::skip::skip;
use serde_json::{Value, json};

use crate::support::unique_name;

mod cert_manager;

const NAMESPACE: &str = "olmv1-system";
const CATALOGD_SERVICE: &str = "catalogd-service";
const CATALOGD_SERVICE_HOST: &str = "catalogd-service.olmv1-system.svc";
const OPERATOR_CONTROLLER_SERVICE: &str = "operator-controller-service";
const OPERATOR_CONTROLLER_SERVICE_HOST: &str = "operator-controller-service.olmv1-system.svc";

#[test]
fn real_tier_release_metrics_ha_webhooks_upgrade_as_real_pods_then_nothing_left() {
    let cluster = match RealCluster::create() {
        Ok(cluster) => cluster,
        Err(RealError::Unavailable(reason)) => {
            skip(&format!("the real tier: {reason}"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let id = cluster.id().to_owned();
    let dir = cluster.paths().root().to_path_buf();
    let outcome = cluster.run(async |c| {
        let started = std::time::Instant::now();
        let timings = c.start().await.unwrap_or_else(|e| panic!("{e}"));
        eprintln!(
            "real tier {id} ready in {:.1}s: {}",
            started.elapsed().as_secs_f64(),
            timings
                .iter()
                .map(|(n, d)| format!("{n} {:.1}s", d.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        // The release is installed first: every other part runs on it. OLM_REAL_PARTS (a comma
        // list of the names below) runs only some of the others, for working on one.
        let only = std::env::var("OLM_REAL_PARTS").ok();
        let wanted = |part: &str| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|p| p == part))
        };
        let part = std::time::Instant::now();
        release_manifest_installs_as_real_pods(c).await;
        eprintln!("real tier: release {:.1}s", part.elapsed().as_secs_f64());
        if let Some(command) = std::env::var("OLM_REAL_EXEC")
            .ok()
            .filter(|c| !c.is_empty())
        {
            let part = std::time::Instant::now();
            a_command_of_the_developer_runs_against_the_installed_release(c, &command).await;
            eprintln!("real tier: exec {:.1}s", part.elapsed().as_secs_f64());
        }
        if wanted("metrics") {
            let part = std::time::Instant::now();
            metrics_through_the_service_need_a_metrics_reader_token(c).await;
            eprintln!("real tier: metrics {:.1}s", part.elapsed().as_secs_f64());
        }
        if wanted("ha") {
            let part = std::time::Instant::now();
            catalogd_leader_pod_deleted_while_a_client_reads_through_the_service(c).await;
            eprintln!("real tier: ha {:.1}s", part.elapsed().as_secs_f64());
        }
        if wanted("webhooks") {
            let part = std::time::Instant::now();
            bundle_webhooks_served_by_its_pod_are_called_by_the_api_server_across_a_rotation(c)
                .await;
            eprintln!("real tier: webhooks {:.1}s", part.elapsed().as_secs_f64());
        }
        every_socket_of_the_tier_stays_in_its_namespace_ranges(c);
        if wanted("upgrade") {
            let part = std::time::Instant::now();
            olm_upgraded_to_new_images_leaves_an_installed_extension_untouched(c).await;
            eprintln!("real tier: upgrade {:.1}s", part.elapsed().as_secs_f64());
        }
        if wanted("certmanager") {
            let part = std::time::Instant::now();
            cert_manager::the_cert_manager_variant_installs_and_cert_manager_issues_every_certificate(c).await;
            eprintln!("real tier: certmanager {:.1}s", part.elapsed().as_secs_f64());
        }
    });
    if outcome.is_err() || std::env::var_os("OLM_TEST_KEEP").is_some() {
        eprintln!("real tier: logs kept in {}", cluster.keep_logs().display());
    }
    let torn = std::time::Instant::now();
    let left = cluster.teardown();
    eprintln!("real tier: teardown {:.1}s", torn.elapsed().as_secs_f64());
    if let Err(panic) = outcome {
        eprintln!(
            "real tier: left after teardown of {}: {left:?}",
            dir.display()
        );
        std::panic::resume_unwind(panic);
    }
    assert!(
        left.is_empty(),
        "the real tier left something behind after teardown: {left:#?}"
    );
}

fn kubectl() -> PathBuf {
    std::env::var_os("OLM_KUBECTL")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("OLM_KUBECTL is not set (make tools builds kubectl)"))
}

fn product_input(name: &str) -> ImageInput {
    let bin_dir = olm_e2e::assets::Assets::products().unwrap_or_else(|e| panic!("{e}"));
    ImageInput {
        name: name.to_string(),
        binary: bin_dir.binary(name).unwrap_or_else(|e| panic!("{e}")),
        version: "1.2.3-test".to_string(),
        revision: "0123456789abcdef0123456789abcdef01234567".to_string(),
        source: "https://example.invalid/olm-rs".to_string(),
        ca_bundle: Path::new(HOST_CA_BUNDLE)
            .is_file()
            .then(|| PathBuf::from(HOST_CA_BUNDLE)),
        platform: olm_image::Platform::host(),
        strip_debug: true,
    }
}

/// `make images` for the binaries under test at `version`, pushed to the tier's registry:
/// component → pinned reference.
async fn push_product_images(c: &RealCluster, version: &str) -> BTreeMap<String, String> {
    let pusher = c.pusher();
    let mut out = BTreeMap::new();
    for name in COMPONENTS {
        let mut input = product_input(name);
        input.version = version.to_owned();
        let built = tokio::task::spawn_blocking(move || image::build(&input))
            .await
            .unwrap()
            .unwrap();
        let repository = c.image(&unique_name(name));
        let reference = image::push(&pusher, &repository, "v1", &built)
            .await
            .unwrap();
        out.insert(name.to_string(), reference);
    }
    out
}

/// The controllers' Pods all run `image` and are Ready, and there are `replicas` of them.
async fn wait_rolled_out(client: &kube::Client, component: &str, image: &str, replicas: usize) {
    eventually(
        &format!("{replicas} Ready {component} Pods running {image}"),
        || async {
            let pods = pods_of(client, component).await;
            let all_new_and_ready = pods.iter().all(|p| {
                p.spec
                    .as_ref()
                    .is_some_and(|s| s.containers[0].image.as_deref() == Some(image))
                    && p.status
                        .as_ref()
                        .and_then(|s| s.container_statuses.as_ref())
                        .is_some_and(|cs| cs.iter().all(|c| c.ready))
            });
            (pods.len() == replicas && all_new_and_ready).then_some(())
        },
    )
    .await;
}

/// The release manifest for `images`, with the settings this cluster needs beyond it: the
/// tier's registry is plain HTTP (`--insecure-registries`, a flag of both controllers), and
/// operator-controller's built-in certificates are short-lived (`--builtin-cert-validity`).
fn manifest_for(images: &BTreeMap<String, String>) -> String {
    manifest_for_variant(Variant::Standalone, images)
}

/// [`manifest_for`], for either variant.
fn manifest_for_variant(variant: Variant, images: &BTreeMap<String, String>) -> String {
    let root = olm_e2e::repo_root();
    let text = manifest::release_manifest(&root, variant, images).unwrap();
    let mut objects = parse_objects(Path::new("release manifest"), &text).unwrap();
    for object in objects.iter_mut().filter(|o| o["kind"] == "Deployment") {
        let operator_controller =
            object["metadata"]["name"] == "operator-controller-controller-manager";
        let args = object["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array_mut()
            .unwrap();
        args.push(json!(format!(
            "--insecure-registries={}",
            node::registry_host()
        )));
        if operator_controller {
            // The built-in provider's certificates live 90 s (a test flag), so the webhook test
            // sees a rotation; every other lifetime scales with it.
            args.push(json!("--builtin-cert-validity=90s"));
        }
    }
    objects
        .iter()
        .map(|o| serde_saphyr::to_string(o).unwrap())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

async fn run_install(c: &RealCluster, manifest: &str) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), manifest).unwrap();
    let output = tokio::process::Command::new(olm_e2e::repo_root().join("hack/install.sh"))
        .arg(file.path())
        .env("KUBECTL", kubectl())
        .env("KUBECONFIG", c.kubeconfig_path())
        .env("OLM_INSTALL_TIMEOUT", "180s")
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "hack/install.sh failed:\n{}\n{}\n--- kubelet ---\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        c.log_tail("kubelet", 40)
    );
}

/// `OLM_REAL_EXEC`: a shell command run inside the tier's namespace once the release is
/// installed, for tools that live outside this repository (docs/TESTING.md: upstream's acceptance
/// suite is run this way). It gets the tier's kubeconfig, registry, containerd `certs.d`
/// directory and kubectl in its environment; its output goes to the test's, and a non-zero exit
/// fails the test (the tier is torn down either way).
async fn a_command_of_the_developer_runs_against_the_installed_release(
    c: &RealCluster,
    command: &str,
) {
    let status = tokio::process::Command::new(&c.tools().nsenter)
        .arg(format!("--net={}", c.netns_file().display()))
        .args(["sh", "-c", command])
        .env("KUBECONFIG", c.kubeconfig_path())
        .env("KUBECTL", kubectl())
        .env("OLM_REAL_REGISTRY", node::registry_host())
        .env(
            "OLM_REAL_CONTAINERD_HOSTS",
            c.paths().containerd_hosts_dir(),
        )
        .status()
        .await
        .unwrap_or_else(|e| panic!("OLM_REAL_EXEC: cannot run sh: {e}"));
    assert!(
        status.success(),
        "OLM_REAL_EXEC {command:?} failed: {status}"
    );
}

async fn pods_of(client: &kube::Client, component: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/name={component}")))
        .await
        .unwrap()
        .items
}

fn in_pod_cidr(ip: &str) -> bool {
    let prefix = POD_CIDR.rsplit_once('.').unwrap().0;
    ip.starts_with(&format!("{prefix}."))
}

/// (a) The release manifest installs and both controllers run as real Pods.
async fn release_manifest_installs_as_real_pods(c: &RealCluster) {
    let client = c.client().await;
    let images = push_product_images(c, "1.2.3-test").await;
    run_install(c, &manifest_for(&images)).await;

    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    for (component, deployment, replicas) in [
        ("catalogd", "catalogd-controller-manager", 2),
        (
            "operator-controller",
            "operator-controller-controller-manager",
            1,
        ),
    ] {
        let d = deployments.get(deployment).await.unwrap();
        let status = d.status.unwrap();
        assert_eq!(status.available_replicas, Some(replicas), "{deployment}");
        let pods = pods_of(&client, component).await;
        let running: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        assert_eq!(running.len(), replicas as usize, "{component} Pods");
        for pod in running {
            let name = pod.metadata.name.as_deref().unwrap();
            let status = pod.status.as_ref().unwrap();
            let ip = status.pod_ip.as_deref().unwrap_or_default();
            assert!(
                in_pod_cidr(ip),
                "{name} has address {ip}, not one of {POD_CIDR}"
            );
            let container = &status.container_statuses.as_ref().unwrap()[0];
            // Ready only after the kubelet's readiness probe against /readyz succeeded.
            assert!(container.ready, "{name}: {container:?}");
            assert!(!container.image_id.is_empty(), "{name}: no image id");
            let id = container
                .container_id
                .as_deref()
                .unwrap()
                .trim_start_matches("containerd://")
                .to_owned();
            // What the runtime applied (the OCI spec runc ran): the image's user, a read-only
            // root, no capabilities, no privilege escalation.
            let output = c.crictl(&["inspect", &id]).await.unwrap();
            assert!(output.status.success(), "crictl inspect {id}: {output:?}");
            let inspect: Value = serde_json::from_slice(&output.stdout).unwrap();
            let spec = &inspect["info"]["runtimeSpec"];
            assert_eq!(spec["root"]["readonly"], true, "{name}: {spec}");
            assert_eq!(spec["process"]["user"]["uid"], 65532, "{name}");
            assert_eq!(spec["process"]["noNewPrivileges"], true, "{name}");
            let caps = &spec["process"]["capabilities"];
            for set in ["bounding", "effective", "permitted"] {
                assert!(
                    caps[set].as_array().is_none_or(|a| a.is_empty()),
                    "{name}: {set} capabilities {caps}"
                );
            }
            assert!(
                spec["linux"]["seccomp"].is_object(),
                "{name}: no seccomp profile (RuntimeDefault)"
            );
        }
    }
    // The certificate install.sh made is the one catalogd serves: the Service answers over
    // HTTPS for its DNS name (through kube-proxy), verified with the Secret's CA.
    let ca = catalogd_ca(&client).await;
    let service_ip = service_ip(&client, CATALOGD_SERVICE).await;
    let https = https_client(&ca, service_ip, 443);
    eventually("catalogd's Service to answer over HTTPS", || async {
        https
            .get(format!("https://{CATALOGD_SERVICE_HOST}/healthz"))
            .send()
            .await
            .ok()
            .map(|_| ())
    })
    .await;
}

async fn catalogd_ca(client: &kube::Client) -> Vec<u8> {
    let secret = Api::<Secret>::namespaced(client.clone(), NAMESPACE)
        .get("catalogd-service-cert")
        .await
        .unwrap();
    secret.data.unwrap()["ca.crt"].0.clone()
}

async fn service_ip(client: &kube::Client, name: &str) -> std::net::IpAddr {
    let service = Api::<Service>::namespaced(client.clone(), NAMESPACE)
        .get(name)
        .await
        .unwrap();
    service.spec.unwrap().cluster_ip.unwrap().parse().unwrap()
}

/// An HTTPS client trusting `ca` that sends `CATALOGD_SERVICE_HOST` to the Service's ClusterIP.
fn https_client(ca: &[u8], ip: std::net::IpAddr, port: u16) -> reqwest::Client {
    https_client_builder(ca, ip, port).build().unwrap()
}

fn https_client_builder(ca: &[u8], ip: std::net::IpAddr, port: u16) -> reqwest::ClientBuilder {
    https_client_builder_for(CATALOGD_SERVICE_HOST, ca, ip, port)
}

/// As [`https_client_builder`], for the Service whose DNS name is `host`.
fn https_client_builder_for(
    host: &str,
    ca: &[u8],
    ip: std::net::IpAddr,
    port: u16,
) -> reqwest::ClientBuilder {
    olm_e2e::install_crypto_provider();
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca).unwrap())
        .resolve(host, SocketAddr::new(ip, port))
        .timeout(Duration::from_secs(10))
        .no_proxy()
}

async fn service_account_token(client: &kube::Client, namespace: &str, name: &str) -> String {
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), namespace);
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
        .unwrap();
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![],
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

/// (d) catalogd's and operator-controller's metrics through their Services: HTTPS, a token bound
/// to the component's metrics-reader role gets them; no token is 401, a token without the role
/// 403.
async fn metrics_through_the_service_need_a_metrics_reader_token(c: &RealCluster) {
    let client = c.client().await;
    let ns = unique_name("metrics");
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .unwrap();
    let reader = service_account_token(&client, &ns, "scraper").await;
    let stranger = service_account_token(&client, &ns, "stranger").await;
    let binding = unique_name("real-metrics-reader");
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": binding},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "catalogd-metrics-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}],
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let ca = catalogd_ca(&client).await;
    let https = https_client(&ca, service_ip(&client, CATALOGD_SERVICE).await, 7443);
    let url = format!("https://{CATALOGD_SERVICE_HOST}/metrics");
    // Each replica answers (the Service spreads connections); a few requests reach both.
    for _ in 0..6 {
        let response = eventually_explained(
            "catalogd's metrics through the Service with the reader's token",
            || c.log_tail("kube-proxy", 10),
            || async {
                let response = https.get(&url).bearer_auth(&reader).send().await.ok()?;
                (response.status() != reqwest::StatusCode::FORBIDDEN).then_some(response)
            },
        )
        .await;
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        let body = response.text().await.unwrap();
        assert!(body.contains("# TYPE "), "not Prometheus text: {body:.300}");
        let anonymous = https.get(&url).send().await.unwrap();
        assert_eq!(anonymous.status(), reqwest::StatusCode::UNAUTHORIZED);
        let forbidden = https.get(&url).bearer_auth(&stranger).send().await.unwrap();
        assert_eq!(forbidden.status(), reqwest::StatusCode::FORBIDDEN);
    }
    // operator-controller's metrics, through its Service on 8443 with the certificate
    // hack/install.sh made, to a token bound to its own metrics-reader role.
    let oc_binding = unique_name("real-oc-metrics-reader");
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": oc_binding},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "operator-controller-metrics-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}],
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let oc_ca = Api::<Secret>::namespaced(client.clone(), NAMESPACE)
        .get("operator-controller-cert")
        .await
        .unwrap()
        .data
        .unwrap()["ca.crt"]
        .0
        .clone();
    let oc_https = https_client_builder_for(
        OPERATOR_CONTROLLER_SERVICE_HOST,
        &oc_ca,
        service_ip(&client, OPERATOR_CONTROLLER_SERVICE).await,
        8443,
    )
    .build()
    .unwrap();
    let oc_url = format!("https://{OPERATOR_CONTROLLER_SERVICE_HOST}/metrics");
    let response = eventually_explained(
        "operator-controller's metrics through the Service with the reader's token",
        || c.log_tail("kube-proxy", 10),
        || async {
            let response = oc_https
                .get(&oc_url)
                .bearer_auth(&reader)
                .send()
                .await
                .ok()?;
            (response.status() != reqwest::StatusCode::FORBIDDEN).then_some(response)
        },
    )
    .await;
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let body = response.text().await.unwrap();
    assert!(
        body.contains("operator_controller_"),
        "not operator-controller's metrics: {body:.300}"
    );
    let anonymous = oc_https.get(&oc_url).send().await.unwrap();
    assert_eq!(anonymous.status(), reqwest::StatusCode::UNAUTHORIZED);
    let forbidden = oc_https
        .get(&oc_url)
        .bearer_auth(&stranger)
        .send()
        .await
        .unwrap();
    assert_eq!(forbidden.status(), reqwest::StatusCode::FORBIDDEN);

    // Plain HTTP on the metrics port is not served.
    let plain = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
        .get(format!(
            "http://{}:7443/metrics",
            service_ip(&client, CATALOGD_SERVICE).await
        ))
        .send()
        .await;
    assert!(
        plain.as_ref().map_or(true, |r| !r.status().is_success()),
        "catalogd's metrics answered plain HTTP: {plain:?}"
    );
}

/// Pushes `package`'s catalog (bundle images named, not pushed) and has catalogd serve it; returns
/// (ClusterCatalog name, base URL).
async fn serve_catalog(
    c: &RealCluster,
    package: &Package,
    images: &BTreeMap<String, String>,
) -> (String, String) {
    let client = c.client().await;
    let dir = tempfile::tempdir().unwrap();
    package.write_fbc(dir.path(), images);
    let reference = c.image(&format!("{}:latest", unique_name("catalog")));
    c.pusher()
        .push_catalog_dir(&reference, dir.path())
        .await
        .unwrap();
    let name = unique_name("real");
    let catalogs = Api::<ClusterCatalog>::all(client.clone());
    catalogs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "olm.operatorframework.io/v1",
                "kind": "ClusterCatalog",
                "metadata": {"name": name},
                "spec": {"source": {"type": "Image", "image": {"ref": reference}}},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let base = eventually_explained(
        &format!("ClusterCatalog {name} to be Serving"),
        || c.log_tail("containerd", 20),
        || async {
            let catalog = catalogs.get(&name).await.ok()?;
            let status = catalog.status?;
            let serving = status
                .conditions
                .iter()
                .any(|c| c.type_ == "Serving" && c.status.as_str() == "True");
            serving.then(|| status.urls.map(|u| u.base))?
        },
    )
    .await;
    (name, base)
}

/// The Pod holding catalogd's leader Lease.
async fn catalogd_leader(client: &kube::Client) -> Option<String> {
    let lease = Api::<Lease>::namespaced(client.clone(), NAMESPACE)
        .get("catalogd-operator-lock")
        .await
        .ok()?;
    let holder = lease.spec?.holder_identity?;
    pods_of(client, "catalogd")
        .await
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .find(|name| holder.starts_with(name.as_str()))
}

/// (b) catalogd HA: the leader Pod is deleted while a client keeps reading the catalog through
/// the Service. Every read returns the whole catalog; the other replica takes the Lease; the
/// Deployment replaces the Pod and the catalog stays Serving.
async fn catalogd_leader_pod_deleted_while_a_client_reads_through_the_service(c: &RealCluster) {
    let client = c.client().await;
    let package = Package::new("real-ha").versions(&["1.0.0", "1.1.0"]);
    let images: BTreeMap<String, String> = ["1.0.0", "1.1.0"]
        .iter()
        .map(|v| (v.to_string(), c.image(&format!("olm-real/ha-bundle:v{v}"))))
        .collect();
    let (name, base) = serve_catalog(c, &package, &images).await;
    let ca = catalogd_ca(&client).await;
    let https = https_client(&ca, service_ip(&client, CATALOGD_SERVICE).await, 443);
    let url = format!("{base}/api/v1/all");
    let expected = https.get(&url).send().await.unwrap().text().await.unwrap();
    assert!(expected.contains(package.name.as_str()), "{expected:.300}");

    let leader = eventually("catalogd's leader Lease held by one of its Pods", || {
        catalogd_leader(&client)
    })
    .await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // A new connection for every read, so kube-proxy spreads them over both replicas, the
    // terminating one included.
    let fresh = https_client_builder(&ca, service_ip(&client, CATALOGD_SERVICE).await, 443)
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let reader = {
        let (stop, https, url, expected) = (stop.clone(), fresh, url.clone(), expected.clone());
        tokio::spawn(async move {
            let (mut ok, mut failures) = (0u32, Vec::new());
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match https.get(&url).send().await {
                    Ok(r) if r.status().is_success() => match r.text().await {
                        Ok(body) if body == expected => ok += 1,
                        Ok(body) => failures.push(format!("different content: {body:.200}")),
                        Err(e) => failures.push(format!("body: {e}")),
                    },
                    Ok(r) => failures.push(format!("status {}", r.status())),
                    Err(e) => failures.push(format!("request: {e:?}")),
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (ok, failures)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pods = Api::<Pod>::namespaced(client.clone(), NAMESPACE);
    pods.delete(&leader, &DeleteParams::default())
        .await
        .unwrap();
    let new_leader = eventually("another catalogd Pod to take the leader Lease", || async {
        catalogd_leader(&client).await.filter(|l| *l != leader)
    })
    .await;
    eventually(
        "the deleted Pod to be gone and two catalogd Pods Ready again",
        || async {
            let pods = pods_of(&client, "catalogd").await;
            let ready = pods
                .iter()
                .filter(|p| {
                    p.status
                        .as_ref()
                        .and_then(|s| s.container_statuses.as_ref())
                        .is_some_and(|cs| cs.iter().all(|c| c.ready))
                })
                .count();
            (pods.len() == 2
                && ready == 2
                && pods
                    .iter()
                    .all(|p| p.metadata.name.as_deref() != Some(leader.as_str())))
            .then_some(())
        },
    )
    .await;
    // A few more reads with both replicas (the new one too) behind the Service.
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ok, failures) = reader.await.unwrap();
    eprintln!(
        "real tier: catalogd failover {leader} -> {new_leader}: {ok} reads, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "reads through the Service failed during the failover ({ok} succeeded): {failures:#?}"
    );
    assert!(ok > 10, "only {ok} reads");
    let catalog = Api::<ClusterCatalog>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    assert!(
        catalog
            .status
            .unwrap()
            .conditions
            .iter()
            .any(|c| c.type_ == "Serving" && c.status.as_str() == "True"),
        "{name} is no longer Serving"
    );
}

/// A bundle whose Deployment runs a real Pod: the tier's sandbox image (a process that waits for
/// SIGTERM), as the bundle's own user.
fn runnable_bundle(package: &mut Package) {
    for row in &mut package.rows {
        let app = format!("{}-op", row.bundle.package);
        row.bundle.csv_spec.insert(
            "install".into(),
            json!({"strategy": "deployment", "spec": {
                "clusterPermissions": [{"serviceAccountName": format!("{}-sa", row.bundle.package), "rules": [
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
                ]}],
                "deployments": [{
                    "name": row.bundle.deployment_name(),
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": app}},
                        "template": {
                            "metadata": {"labels": {"app": app}},
                            "spec": {
                                "serviceAccountName": format!("{}-sa", row.bundle.package),
                                "containers": [{"name": "manager", "image": node::pause_image()}],
                            },
                        },
                    },
                }],
            }}),
        );
    }
}

/// Pushes every bundle of `package` to the tier's registry; version → reference.
async fn push_bundles(c: &RealCluster, package: &Package) -> BTreeMap<String, String> {
    let repo = c.image(&unique_name("bundles"));
    let mut images = BTreeMap::new();
    for row in &package.rows {
        let dir = tempfile::tempdir().unwrap();
        row.bundle.write(dir.path());
        let reference = format!("{repo}:v{}", row.bundle.version);
        c.pusher()
            .push_bundle_dir(&reference, dir.path(), &package.name, &["stable"])
            .await
            .unwrap();
        images.insert(row.bundle.version.clone(), reference);
    }
    images
}

async fn create_namespace(client: &kube::Client, prefix: &str) -> String {
    let name = unique_name(prefix);
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
        .unwrap();
    name
}

/// The ClusterExtension once `type_` is True for its current generation.
async fn wait_condition(
    c: &RealCluster,
    api: &Api<ClusterExtension>,
    name: &str,
    type_: &str,
) -> ClusterExtension {
    eventually_explained(
        &format!("ClusterExtension {name} {type_}=True"),
        || c.log_tail("kubelet", 10),
        || async {
            let ext = api.get(name).await.ok()?;
            let generation = ext.metadata.generation;
            let status = ext.status.as_ref()?;
            status
                .conditions
                .iter()
                .any(|c| {
                    c.type_ == type_
                        && c.status.as_str() == "True"
                        && c.observed_generation == generation
                })
                .then_some(ext.clone())
        },
    )
    .await
}

/// (e) OLM upgraded in place: new images of both controllers rolled out by `hack/install.sh`
/// while an extension is installed and its workload runs. The extension's status, its installed
/// objects, its release records and its running Pod are untouched.
async fn olm_upgraded_to_new_images_leaves_an_installed_extension_untouched(c: &RealCluster) {
    let client = c.client().await;
    let mut package = Package::new("real-up").versions(&["1.0.0"]);
    runnable_bundle(&mut package);
    let bundles = push_bundles(c, &package).await;
    let (catalog, _) = serve_catalog(c, &package, &bundles).await;
    let ns = create_namespace(&client, "real-up").await;
    let extensions = Api::<ClusterExtension>::all(client.clone());
    let extension = ExtensionSpec::of_package(&package.name, &catalog, &ns)
        .create(&extensions, "real")
        .await
        .name;
    wait_condition(c, &extensions, &extension, "Installed").await;
    let before = wait_condition(c, &extensions, &extension, "Available").await;
    let deployment_name = package.rows[0].bundle.deployment_name();
    let workload_pods = |client: kube::Client, ns: String| async move {
        Api::<Pod>::namespaced(client, &ns)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
    };
    let pods_before = workload_pods(client.clone(), ns.clone()).await;
    assert_eq!(
        pods_before.len(),
        1,
        "the extension's Pods: {pods_before:?}"
    );
    let pod_before = &pods_before[0];
    assert!(
        pod_before
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|cs| cs[0].ready),
        "the extension's Pod is not running"
    );
    let configmap = Snapshot::of(
        &client,
        ObjectKey::namespaced("v1", "ConfigMap", &ns, "test-configmap"),
    )
    .await;
    let deployment = Snapshot::of(
        &client,
        ObjectKey::namespaced("apps/v1", "Deployment", &ns, &deployment_name),
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    // The release records (every Secret of the system namespace but catalogd's certificate).
    let release_secrets = || async {
        secrets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|s| {
                !matches!(
                    s.metadata.name.as_deref(),
                    Some("catalogd-service-cert" | "operator-controller-cert")
                )
            })
            .map(|s| {
                (
                    s.metadata.name.unwrap(),
                    s.metadata.resource_version.unwrap(),
                )
            })
            .collect::<BTreeMap<_, _>>()
    };
    let records_before = release_secrets().await;
    assert!(
        !records_before.is_empty(),
        "no release record in {NAMESPACE}"
    );

    // The upgrade: new images (another version label, so other digests) for both controllers.
    let new_images = push_product_images(c, "1.2.4-test").await;
    run_install(c, &manifest_for(&new_images)).await;
    wait_rolled_out(&client, "catalogd", &new_images["catalogd"], 2).await;
    wait_rolled_out(
        &client,
        "operator-controller",
        &new_images["operator-controller"],
        1,
    )
    .await;
    // The new operator-controller has reconciled the extension (its log, read through the API
    // server from the kubelet, names it) before anything is compared.
    let new_oc = pods_of(&client, "operator-controller").await[0]
        .metadata
        .name
        .clone()
        .unwrap();
    let pod_api = Api::<Pod>::namespaced(client.clone(), NAMESPACE);
    eventually(
        &format!("the new operator-controller {new_oc} to reconcile {extension}"),
        || async {
            let log = pod_api.logs(&new_oc, &LogParams::default()).await.ok()?;
            log.contains(&format!("\"{extension}\"")).then_some(())
        },
    )
    .await;
    let after = wait_condition(c, &extensions, &extension, "Installed").await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after_settled = extensions.get(&extension).await.unwrap();
    assert_eq!(
        after.status, before.status,
        "the extension's status changed across the upgrade"
    );
    assert_eq!(
        after_settled.status, before.status,
        "the extension's status changed after the upgrade"
    );
    configmap
        .assert_unchanged_at(
            &["/metadata/resourceVersion"],
            "an installed object was written again",
        )
        .await;
    deployment
        .assert_unchanged_at(
            &["/metadata/generation", "/spec"],
            "the extension's Deployment was changed",
        )
        .await;
    let pods_after = workload_pods(client.clone(), ns.clone()).await;
    assert_eq!(pods_after.len(), 1);
    assert_eq!(
        pods_after[0].metadata.uid, pod_before.metadata.uid,
        "the extension's Pod was replaced"
    );
    assert_eq!(
        pods_after[0]
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .map(|cs| cs[0].restart_count),
        Some(0),
        "the extension's container restarted"
    );
    assert_eq!(
        release_secrets().await,
        records_before,
        "the release records were written again"
    );
}

/// The webhook server's image (`hack/build-node.sh`), pushed to the tier's registry.
async fn push_webhook_image(c: &RealCluster) -> String {
    let binary = c.tools().webhook.clone();
    let input = ImageInput {
        name: "webhook".into(),
        binary,
        version: "1".into(),
        revision: "0".repeat(40),
        source: "https://example.invalid/olm-rs".into(),
        ca_bundle: None,
        platform: olm_image::Platform::host(),
        strip_debug: false,
    };
    let built = tokio::task::spawn_blocking(move || image::build(&input))
        .await
        .unwrap()
        .unwrap();
    image::push(&c.pusher(), &c.image(&unique_name("webhook")), "v1", &built)
        .await
        .unwrap()
}

/// SHA-256 (hex) of the first certificate in `pem`.
fn fingerprint(pem: &[u8]) -> String {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use sha2::Digest;
    let der = CertificateDer::from_pem_slice(pem).unwrap();
    hex::encode(sha2::Sha256::digest(der.as_ref()))
}

/// (c) A bundle declaring a validating and a mutating webhook, served by its own Pod with the
/// built-in provider's certificate, called by the API server: the mutation is applied (it names
/// the certificate the API server accepted), the validation refuses; after the provider rotates
/// the certificate (90 s lifetime) the API server calls the Pod serving the new one, and no call
/// fails meanwhile (`failurePolicy: Fail`).
/// A package of one bundle whose CSV declares a validating (`/validate`) and a mutating
/// (`/mutate`) webhook for ConfigMaps labelled `olm-real-webhook=<package name>`, served by a
/// Deployment running `webhook_image` (`hack/build-node.sh`'s `webhook`).
pub(crate) fn webhook_package(name: &str, webhook_image: &str) -> Package {
    let mut package = Package::new(name);
    let label = package.name.clone();
    package = package.bundle_with("1.0.0", |b| {
        let app = format!("{}-op", b.package);
        let sa = format!("{}-sa", b.package);
        b.csv_spec.insert(
            "install".into(),
            json!({"strategy": "deployment", "spec": {
                "clusterPermissions": [{"serviceAccountName": sa, "rules": [
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
                ]}],
                "deployments": [{
                    "name": b.deployment_name(),
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": app}},
                        "template": {
                            "metadata": {"labels": {"app": app}},
                            "spec": {
                                "serviceAccountName": sa,
                                "containers": [{
                                    "name": "webhook",
                                    "image": webhook_image,
                                    "ports": [{"containerPort": 9443}],
                                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 9443, "scheme": "HTTPS"}},
                                }],
                            },
                        },
                    },
                }],
            }}),
        );
        let common = |type_: &str, name: &str, path: &str| {
            json!({"type": type_, "generateName": format!("{name}.{}.olm-real.test", b.package),
                "deploymentName": b.deployment_name(), "containerPort": 443, "targetPort": 9443,
                "sideEffects": "None", "admissionReviewVersions": ["v1"], "webhookPath": path,
                "failurePolicy": "Fail",
                "objectSelector": {"matchLabels": {"olm-real-webhook": label}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}]})
        };
        b.csv_spec.insert(
            "webhookdefinitions".into(),
            json!([
                common("ValidatingAdmissionWebhook", "vcm", "/validate"),
                common("MutatingAdmissionWebhook", "mcm", "/mutate"),
            ]),
        );
    });
    package
}

async fn bundle_webhooks_served_by_its_pod_are_called_by_the_api_server_across_a_rotation(
    c: &RealCluster,
) {
    let client = c.client().await;
    let webhook_image = push_webhook_image(c).await;
    let package = webhook_package("real-hooks", &webhook_image);
    let label = package.name.clone();
    let bundles = push_bundles(c, &package).await;
    let (catalog, _) = serve_catalog(c, &package, &bundles).await;
    let ns = create_namespace(&client, "real-hooks").await;
    let extensions = Api::<ClusterExtension>::all(client.clone());
    let extension = ExtensionSpec::of_package(&package.name, &catalog, &ns)
        .create(&extensions, "real")
        .await
        .name;
    wait_condition(c, &extensions, &extension, "Installed").await;
    wait_condition(c, &extensions, &extension, "Available").await;

    let serving_secret = format!("{}-service-cert", package.rows[0].bundle.deployment_name());
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns);
    let current_cert = || async {
        let secret = secrets.get(&serving_secret).await.unwrap();
        fingerprint(&secret.data.unwrap()["tls.crt"].0)
    };
    let configmaps = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), &ns);
    let mut created = 0u32;
    let mut create = |data: Value| {
        created += 1;
        let name = format!("cm-{created}");
        let configmaps = configmaps.clone();
        let label = label.clone();
        async move {
            configmaps
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(json!({
                        "metadata": {"name": name, "labels": {"olm-real-webhook": label}},
                        "data": data,
                    }))
                    .unwrap(),
                )
                .await
        }
    };
    let first_cert = current_cert().await;
    // The Deployment is Available once its Pod is Ready; the Service's endpoints reach kube-proxy's
    // rules a moment later (until then connections to the Service are refused or unroutable).
    let start = std::time::Instant::now();
    let mutated = loop {
        match create(json!({"a": "b"})).await {
            Ok(object) => break object,
            Err(e)
                if start.elapsed() < Duration::from_secs(60)
                    && e.to_string().contains("failed to call webhook") =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("the first webhook call: {e}"),
        }
    };
    let served =
        mutated.metadata.annotations.unwrap_or_default()["olm-real/served-by-cert"].clone();
    assert_eq!(
        served, first_cert,
        "the webhook Pod did not serve the provider's certificate"
    );
    let refused = create(json!({"forbidden": "x"})).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("olm-real webhook: the key forbidden is not allowed"),
        "{refused}"
    );

    // Rotation: the provider re-issues the certificate; the kubelet refreshes the mounted Secret;
    // the Pod serves the new certificate; the API server (with the CA bundle OLM keeps current)
    // accepts it. Every call meanwhile succeeds.
    let mut seen = std::collections::BTreeSet::from([first_cert.clone()]);
    let mut calls = 0u32;
    let start = std::time::Instant::now();
    let served_new = loop {
        seen.insert(current_cert().await);
        let object = create(json!({"n": calls.to_string()}))
            .await
            .unwrap_or_else(|e| {
                panic!("a webhook call failed during the rotation after {calls} calls: {e}")
            });
        calls += 1;
        let served =
            object.metadata.annotations.unwrap_or_default()["olm-real/served-by-cert"].clone();
        assert!(
            seen.contains(&served),
            "the Pod served a certificate the Secret never held: {served}"
        );
        if served != first_cert {
            break served;
        }
        if start.elapsed() > Duration::from_secs(300) {
            let secret = secrets.get(&serving_secret).await.unwrap();
            let mut openssl = std::process::Command::new("openssl")
                .args(["x509", "-noout", "-dates"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write as _;
            openssl
                .stdin
                .take()
                .unwrap()
                .write_all(&secret.data.unwrap()["tls.crt"].0)
                .unwrap();
            let dates = openssl.wait_with_output().unwrap();
            let oc = pods_of(&client, "operator-controller").await;
            let log = Api::<Pod>::namespaced(client.clone(), NAMESPACE)
                .logs(
                    oc[0].metadata.name.as_deref().unwrap(),
                    &LogParams::default(),
                )
                .await
                .unwrap_or_default();
            panic!(
                "no rotated certificate served within 300 s ({} certificates seen in the Secret); \
                 the serving certificate: {}; operator-controller's args: {:?}; its log:\n{log}",
                seen.len(),
                String::from_utf8_lossy(&dates.stdout),
                oc[0].spec.as_ref().unwrap().containers[0].args
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!(
        "real tier: webhook certificate rotated after {:.0}s: {calls} calls through the API server, none failed; {} certificates seen",
        start.elapsed().as_secs_f64(),
        seen.len()
    );
    assert_ne!(served_new, first_cert);
}

/// Whether `ip` is one of the tier's own ranges: loopback, the node's network, Pods, Services, or
/// unspecified (a listener, or a socket not connected).
fn in_tier_ranges(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            v4.is_loopback()
                || v4.is_unspecified()
                || (a, b, c) == (10, 200, 0)
                || (a, b, c) == (10, 244, 0)
                || (a, b) == (10, 96)
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| in_tier_ranges(IpAddr::V4(v4)))
        }
    }
}

/// Every socket of every component of the tier (read from `/proc/PID/net`, which shows the
/// namespace the process is in) is on an address of the tier's own ranges.
fn every_socket_of_the_tier_stays_in_its_namespace_ranges(c: &RealCluster) {
    let mut violations = Vec::new();
    let components = c.component_pids();
    assert!(components.len() >= 9, "components: {components:?}");
    let mut seen = 0;
    for (name, pid) in components {
        let sockets = olm_e2e::sockets::of_process(pid)
            .unwrap_or_else(|e| panic!("the sockets of {name} (pid {pid}): {e}"));
        seen += sockets.len();
        for socket in sockets {
            if !in_tier_ranges(socket.local.ip()) || !in_tier_ranges(socket.remote.ip()) {
                violations.push(format!("{name} (pid {pid}): {socket:?}"));
            }
        }
    }
    assert!(seen > 20, "only {seen} sockets found");
    assert!(
        violations.is_empty(),
        "sockets outside the tier's ranges:\n{}",
        violations.join("\n")
    );
}
