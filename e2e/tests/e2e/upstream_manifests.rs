//! Our images under upstream v1.11's own release manifest (issue 24 item 3): `standard.yaml` with
//! only its two image references replaced by ours is applied server-side to a control plane of
//! its own (`full` tier, upstream's CRDs, nothing of ours pre-installed), and each Deployment's
//! `manager` container runs as a pod would run it: the image pulled from the registry as its
//! root, read-only; the manifest's command and args unchanged; its emptyDirs and Secret volumes
//! at the manifest's paths; the ServiceAccount's token where client libraries find it; its own
//! network namespace (both containers listen on `:8081`), with `catalogd-service` reachable from
//! operator-controller as the Service would route it. A ClusterCatalog becomes Serving at the
//! Service's address, the sample extension is installed, upgraded and deleted, the probes answer
//! on the manifest's ports, metrics answer only an authorized ServiceAccount, and catalogd's
//! labelling webhook answers an AdmissionReview. `experimental.yaml`'s command lines refuse to
//! start, naming the gates we do not implement.
//!
//! What the test plane cannot do and is done by the test instead: cert-manager does not run, so
//! the Secrets its Certificates would issue are made here (same names, DNS names and keys); the
//! API server cannot route a call through a Service to a process, so the ClusterCatalog is
//! created with the name label the webhook would set (the webhook's `matchConditions` then skip
//! the call) and the webhook is called directly.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use olm_api::v1::{ClusterCatalog, ClusterExtension, ConditionType, find_condition};
use olm_e2e::control_plane::{ControlPlane, Tier};
use olm_e2e::eventually::eventually;
use olm_e2e::pod_sandbox::{Pod, PodNet, PodSpec, volume_files};
use olm_e2e::upstream_manifest::{command_line, deployments, manager, objects};
use olm_image::{ExtractFilter, Puller};
use serde_json::{Value, json};

use crate::release_manifest::apply;

const SYSTEM: &str = "olmv1-system";
const CATALOGD_SERVICE: &str = "catalogd-service.olmv1-system.svc";
const NAME_LABEL: &str = "olm.operatorframework.io/metadata.name";

/// A CA and, per cert-manager Certificate of the manifest, the Secret it would issue.
fn certificate_secrets(objects: &[Value]) -> (String, Vec<Value>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_pem = ca_params.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let mut secrets = Vec::new();
    for cert in objects.iter().filter(|o| o["kind"] == "Certificate") {
        if cert["spec"]["isCA"] == true {
            continue;
        }
        let names: Vec<String> = cert["spec"]["dnsNames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_owned())
            .collect();
        let key = KeyPair::generate().unwrap();
        let issued = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        secrets.push(json!({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": cert["spec"]["secretName"], "namespace": cert["metadata"]["namespace"]},
            "stringData": {"tls.crt": issued.pem(), "tls.key": key.serialize_pem(), "ca.crt": ca_pem},
        }));
    }
    (ca_pem, secrets)
}

/// The data of every Secret in `namespace`.
async fn secret_data(client: &kube::Client) -> BTreeMap<String, BTreeMap<String, Vec<u8>>> {
    let api: Api<Secret> = Api::namespaced(client.clone(), SYSTEM);
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|s| {
            let name = s.metadata.name.clone().unwrap_or_default();
            let data = s
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            (name, data)
        })
        .collect()
}

/// An HTTPS client trusting `ca_pem` that reaches `catalogd-service…` at `addr`.
fn service_client(ca_pem: &str, host: &str, addr: SocketAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes()).unwrap())
        .resolve(host, addr)
        .build()
        .unwrap()
}

async fn probe(addr: SocketAddr, path: &str) -> Option<()> {
    let response = reqwest::get(format!("http://{addr}{path}")).await.ok()?;
    (response.status() == 200).then_some(())
}

fn condition(c: &ClusterExtension, type_: ConditionType) -> Option<(String, String)> {
    let status = c.status.as_ref()?;
    find_condition(&status.conditions, type_)
        .map(|c| (c.status.as_str().to_owned(), c.reason.clone()))
}

#[tokio::test]
async fn our_images_run_under_upstreams_standard_manifest() {
    if !rustix::process::geteuid().is_root() {
        olm_e2e::skip::skip(
            "running upstream's manifest as pods needs namespaces and mounts (root; CI runs tests as root)",
        );
        return;
    }
    let shared = olm_e2e::shared().await;
    let registry = &shared.registry;
    let images = crate::release_images::product_images().await;
    olm_e2e::dev_env::push_sample_bundle_images(registry)
        .await
        .unwrap();
    let (catalog_image, _) = olm_e2e::dev_env::push_sample_catalog_image(registry)
        .await
        .unwrap();

    // A plane of its own: upstream's CRDs and cluster-wide objects, controllers that manage
    // every ClusterCatalog and ClusterExtension, undisturbed by the other tests.
    let plane = ControlPlane::builder()
        .tier(Tier::Full)
        .crd_dirs(Vec::new())
        .start()
        .await
        .unwrap();
    let client = plane.client().await;
    let api_port: u16 = plane
        .server_url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap();

    // Only the two image references change.
    let mut manifest = objects("standard.yaml");
    for object in manifest.iter_mut().filter(|o| o["kind"] == "Deployment") {
        for container in object["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap()
        {
            let image = container["image"].as_str().unwrap().to_owned();
            let ours = if image.contains("/catalogd:") {
                &images["catalogd"].reference
            } else {
                &images["operator-controller"].reference
            };
            container["image"] = json!(ours);
        }
    }
    // cert-manager's kinds are not served here (see the module header); everything else applies.
    let applied: Vec<&Value> = manifest
        .iter()
        .filter(|o| {
            !o["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .starts_with("cert-manager.io/")
        })
        .collect();
    let order = |o: &&Value| match o["kind"].as_str() {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    };
    let mut applied = applied;
    applied.sort_by_key(order);
    for object in applied.iter().filter(|o| order(o) < 2) {
        apply(&client, object, false)
            .await
            .unwrap_or_else(|e| panic!("apply of {}: {e}", object["metadata"]["name"]));
    }
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ["clustercatalogs", "clusterextensions"] {
        let name = format!("{crd}.olm.operatorframework.io");
        eventually(&format!("CRD {name} established"), || async {
            let crd = crds.get(&name).await.ok()?;
            crd.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        })
        .await;
    }
    for object in applied.iter().filter(|o| order(o) == 2) {
        apply(&client, object, true).await.unwrap_or_else(|e| {
            panic!("server-side dry-run of {}: {e}", object["metadata"]["name"])
        });
        apply(&client, object, false)
            .await
            .unwrap_or_else(|e| panic!("apply of {}: {e}", object["metadata"]["name"]));
    }
    let (ca_pem, secrets) = certificate_secrets(&manifest);
    for secret in &secrets {
        apply(&client, secret, false).await.unwrap();
    }
    let secrets = secret_data(&client).await;

    // The pods, catalogd first (operator-controller's Service route needs its network).
    let cache = tempfile::tempdir().unwrap();
    let puller = Puller::new(registry.puller_config(cache.path())).unwrap();
    let logs = tempfile::tempdir().unwrap();
    let registry_port = registry.host().rsplit(':').next().unwrap().parse().unwrap();
    let registry_addr = SocketAddr::from(([127, 0, 0, 1], registry_port));
    let registries_conf = format!(
        "[[registry]]\nlocation = \"{}\"\ninsecure = true\n",
        registry.host()
    );
    let mut deployments_by_name: Vec<&Value> = deployments(&manifest);
    deployments_by_name.sort_by_key(|d| d["metadata"]["name"] != "catalogd-controller-manager");
    let mut pods: BTreeMap<String, Pod> = BTreeMap::new();
    for deployment in deployments_by_name {
        let name = deployment["metadata"]["name"].as_str().unwrap().to_owned();
        let pod_spec = &deployment["spec"]["template"]["spec"];
        let container = manager(deployment);
        let component = if name.starts_with("catalogd") {
            "catalogd"
        } else {
            "operator-controller"
        };
        let unpacked = puller
            .pull(
                &format!("pod-{component}"),
                container["image"].as_str().unwrap(),
                ExtractFilter::Everything,
            )
            .await
            .unwrap();
        let image_root = unpacked.dir.clone();
        let stage = move |root: &Path| -> Result<(), String> {
            let status = std::process::Command::new("cp")
                .arg("-a")
                .arg(format!("{}/.", image_root.display()))
                .arg(root)
                .status()
                .map_err(|e| e.to_string())?;
            status
                .success()
                .then_some(())
                .ok_or(format!("cp: {status}"))
        };
        let mut files = volume_files(container, pod_spec, &secrets).unwrap();
        let account = pod_spec["serviceAccountName"].as_str().unwrap();
        let token = olm_e2e::metrics::service_account_token(&client, SYSTEM, account).await;
        let sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
        files
            .files
            .insert(format!("{sa_dir}/token"), token.into_bytes());
        files.files.insert(
            format!("{sa_dir}/ca.crt"),
            plane.ca_pem().as_bytes().to_vec(),
        );
        files
            .files
            .insert(format!("{sa_dir}/namespace"), SYSTEM.as_bytes().to_vec());
        files.files.insert(
            "/etc/hosts".into(),
            format!("127.0.0.1 localhost {CATALOGD_SERVICE}\n").into_bytes(),
        );
        files
            .files
            .insert("/etc/nsswitch.conf".into(), b"hosts: files dns\n".to_vec());
        files.files.insert(
            "/etc/containers/registries.conf".into(),
            registries_conf.clone().into_bytes(),
        );
        let mut net = PodNet::new().unwrap();
        net.expose_outside(api_port, SocketAddr::from(([127, 0, 0, 1], api_port)))
            .unwrap();
        net.expose_outside(registry_port, registry_addr).unwrap();
        if component == "operator-controller" {
            // catalogd-service:443 → catalogd's pod, port 8443 (the manifest's Service).
            net.expose_pod(443, &pods["catalogd"].net, 8443).unwrap();
        }
        let env = vec![
            ("KUBERNETES_SERVICE_HOST".to_owned(), "127.0.0.1".to_owned()),
            ("KUBERNETES_SERVICE_PORT".to_owned(), api_port.to_string()),
            ("HOSTNAME".to_owned(), format!("{name}-pod")),
        ];
        let pod = Pod::start(
            PodSpec {
                name: component,
                stage_image: &stage,
                files,
                env,
                command: command_line(container),
                logs: logs.path(),
            },
            net,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        pods.insert(component.to_owned(), pod);
    }

    // The manifest's probes answer on its ports.
    let mut probe_ports = BTreeMap::new();
    for (component, pod) in pods.iter_mut() {
        let addr = pod.net.expose_inside(8081).unwrap();
        probe_ports.insert(component.clone(), addr);
    }
    for (component, addr) in &probe_ports {
        let log = pods[component].process.log_path().to_path_buf();
        olm_e2e::eventually::eventually_explained(
            &format!("{component}'s readiness probe on :8081"),
            || std::fs::read_to_string(&log).unwrap_or_default(),
            || async { probe(*addr, "/readyz").await },
        )
        .await;
        probe(*addr, "/healthz").await.expect("healthz");
    }

    // A ClusterCatalog becomes Serving at the Service's address.
    let catalogs: Api<ClusterCatalog> = Api::all(client.clone());
    let catalog: ClusterCatalog = serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
        "metadata": {"name": "example-catalog", "labels": {NAME_LABEL: "example-catalog"}},
        "spec": {"source": {"type": "Image", "image": {"ref": catalog_image}}},
    }))
    .unwrap();
    catalogs
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    let catalogd_log = pods["catalogd"].process.log_path().to_path_buf();
    let served = olm_e2e::eventually::eventually_explained(
        "the catalog to be Serving",
        || std::fs::read_to_string(&catalogd_log).unwrap_or_default(),
        || async {
            let c = catalogs.get("example-catalog").await.ok()?;
            let status = c.status.clone()?;
            let serving = find_condition(&status.conditions, ConditionType::Serving)?;
            (serving.status.as_str() == "True").then_some(status)
        },
    )
    .await;
    assert_eq!(
        served.urls.unwrap().base,
        format!("https://{CATALOGD_SERVICE}/catalogs/example-catalog")
    );
    // Served over HTTPS with the manifest's certificate; /metas is off (APIV1MetasHandler=false).
    let content = pods
        .get_mut("catalogd")
        .unwrap()
        .net
        .expose_inside(8443)
        .unwrap();
    let https = service_client(&ca_pem, CATALOGD_SERVICE, content);
    let base = format!(
        "https://{CATALOGD_SERVICE}:{}/catalogs/example-catalog/api/v1",
        content.port()
    );
    let all = https.get(format!("{base}/all")).send().await.unwrap();
    assert_eq!(all.status(), 200);
    assert!(all.text().await.unwrap().contains("example-operator"));
    let metas = https
        .get(format!("{base}/metas?schema=olm.package"))
        .send()
        .await
        .unwrap();
    assert_eq!(metas.status(), 404);

    // The sample extension: installed, upgraded, deleted.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "example-operator"}})).unwrap(),
        )
        .await
        .unwrap();
    let extensions: Api<ClusterExtension> = Api::all(client.clone());
    let extension = |version: &str| {
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
            "metadata": {"name": "example-operator"},
            "spec": {"namespace": "example-operator",
                "source": {"sourceType": "Catalog",
                    "catalog": {"packageName": "example-operator", "version": version}}},
        })
    };
    let oc_log = pods["operator-controller"].process.log_path().to_path_buf();
    for version in ["1.1.0", "1.2.0"] {
        extensions
            .patch(
                "example-operator",
                &PatchParams::apply("upstream-manifest-test").force(),
                &Patch::Apply(extension(version)),
            )
            .await
            .unwrap();
        olm_e2e::eventually::eventually_explained(
            &format!("the extension to be installed at {version}"),
            || std::fs::read_to_string(&oc_log).unwrap_or_default(),
            || async {
                let e = extensions.get("example-operator").await.ok()?;
                let installed = e.status.as_ref()?.install.as_ref()?.bundle.version.clone();
                (condition(&e, ConditionType::Installed)
                    == Some(("True".into(), "Succeeded".into()))
                    && installed == version)
                    .then_some(())
            },
        )
        .await;
    }
    let sample: Api<Deployment> = Api::namespaced(client.clone(), "example-operator");
    assert!(sample.get("example-operator-controller").await.is_ok());
    extensions
        .delete("example-operator", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the extension and its Deployment to be gone", || async {
        (extensions.get("example-operator").await.is_err()
            && sample.get("example-operator-controller").await.is_err())
        .then_some(())
    })
    .await;

    // Metrics: HTTPS on the manifest's ports, only for a ServiceAccount bound to the manifest's
    // metrics-reader role.
    let reader = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "test-metrics-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
            "name": "catalogd-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "example-operator"}]});
    apply(&client, &reader, false).await.unwrap();
    let token =
        olm_e2e::metrics::service_account_token(&client, "example-operator", "default").await;
    let metrics_addr = pods
        .get_mut("catalogd")
        .unwrap()
        .net
        .expose_inside(7443)
        .unwrap();
    let url = format!("https://{CATALOGD_SERVICE}:{}/metrics", metrics_addr.port());
    let https = service_client(&ca_pem, CATALOGD_SERVICE, metrics_addr);
    let anonymous = https.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let authorized = https.get(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(authorized.status(), 200);
    assert!(authorized.text().await.unwrap().contains("catalogd_"));

    // catalogd's labelling webhook, called as the API server would call it.
    let webhook_addr = pods
        .get_mut("catalogd")
        .unwrap()
        .net
        .expose_inside(9443)
        .unwrap();
    let https = service_client(&ca_pem, CATALOGD_SERVICE, webhook_addr);
    let review = https
        .post(format!(
            "https://{CATALOGD_SERVICE}:{}/mutate-olm-operatorframework-io-v1-clustercatalog",
            webhook_addr.port()
        ))
        .json(
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "object": {"metadata": {"name": "new-catalog"}}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(review.status(), 200);
    let review: Value = review.json().await.unwrap();
    assert_eq!(review["response"]["allowed"], true);
    assert_eq!(review["response"]["patchType"], "JSONPatch");

    for (component, pod) in pods.iter_mut() {
        assert!(
            pod.process.try_exit_status().is_none(),
            "{component} exited: {}",
            pod.process.log_tail(40)
        );
        pod.process.stop(std::time::Duration::from_secs(10));
    }
    catalogs
        .delete("example-catalog", &DeleteParams::default())
        .await
        .ok();
}

/// `experimental.yaml` turns on gates we do not implement: each binary refuses to start with
/// exit status 1, naming the gate, instead of running with a different storage or API.
#[test]
fn upstreams_experimental_manifest_is_refused_by_gate_name() {
    let bins = olm_e2e::assets::Assets::products().unwrap_or_else(|e| panic!("{e}"));
    let manifest = objects("experimental.yaml");
    let mut refused = Vec::new();
    for deployment in deployments(&manifest) {
        let line = command_line(manager(deployment));
        let name = olm_e2e::upstream_manifest::binary_name(&line).to_owned();
        let output = std::process::Command::new(bins.binary(&name).unwrap())
            .args(&line[1..])
            .env_remove("KUBECONFIG")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        let gate = if name == "catalogd" {
            "GraphQLCatalogQueries"
        } else {
            "BoxcutterRuntime"
        };
        assert!(
            stderr.contains(&format!(
                "Error: feature gate {gate}=true is not supported: "
            )),
            "{name}: {stderr}"
        );
        refused.push(name);
    }
    refused.sort();
    assert_eq!(refused, ["catalogd", "operator-controller"]);
}
