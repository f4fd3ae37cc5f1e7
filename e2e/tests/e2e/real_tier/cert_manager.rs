//! The `real` tier's cert-manager part: the release manifest's cert-manager variant, with
//! cert-manager itself running (`RealCluster::start_cert_manager`).
//!
//! Installed over the standalone release, as an admin who moves to cert-manager does: cert-manager
//! issues the CA, catalogd's serving certificate and operator-controller's metrics certificate;
//! catalogd's Service is then served with the certificate cert-manager issued; operator-controller
//! runs with `--cert-provider=cert-manager`, so a bundle's webhook gets its certificate from a
//! cert-manager Certificate and its CA bundle from cert-manager's cainjector, and the API server
//! calls it.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use olm_api::v1::ClusterExtension;
use olm_e2e::eventually::eventually;
use olm_e2e::release::manifest::Variant;
use olm_e2e::scenario::ExtensionSpec;
use serde_json::json;

use super::{
    CATALOGD_SERVICE, CATALOGD_SERVICE_HOST, NAMESPACE, catalogd_ca, create_namespace,
    https_client, manifest_for_variant, push_bundles, push_webhook_image, run_install,
    serve_catalog, service_ip, wait_condition, webhook_package,
};
use olm_e2e::real_node::RealCluster;

use crate::support::unique_name;

const CERTIFICATES: [(&str, &str); 3] = [
    ("cert-manager", "olmv1-ca"),
    (NAMESPACE, "catalogd-service-cert"),
    (NAMESPACE, "operator-controller-cert"),
];

fn certificates(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "cert-manager.io",
        "v1",
        "Certificate",
    ));
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// The images the cluster runs now, per component (the cert-manager variant keeps them).
async fn installed_images(client: &kube::Client) -> BTreeMap<String, String> {
    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    let mut images = BTreeMap::new();
    for (component, deployment) in [
        ("catalogd", "catalogd-controller-manager"),
        (
            "operator-controller",
            "operator-controller-controller-manager",
        ),
    ] {
        let d = deployments.get(deployment).await.unwrap();
        let image = d.spec.unwrap().template.spec.unwrap().containers[0]
            .image
            .clone()
            .unwrap();
        images.insert(component.to_owned(), image);
    }
    images
}

pub(super) async fn the_cert_manager_variant_installs_and_cert_manager_issues_every_certificate(
    c: &RealCluster,
) {
    let client = c.client().await;
    c.start_cert_manager()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let images = installed_images(&client).await;
    let standalone_ca = catalogd_ca(&client).await;
    run_install(c, &manifest_for_variant(Variant::CertManager, &images)).await;

    // cert-manager adopts a Secret that already holds a valid certificate for the Certificate's
    // names and key type (it adds its labels and annotations and keeps the certificate until its
    // renewal): the ones hack/install.sh made for the standalone variant stay. Deleted, as README
    // tells an admin moving to cert-manager, they are issued by cert-manager at once.
    let secrets = Api::<Secret>::namespaced(client.clone(), NAMESPACE);
    for name in ["catalogd-service-cert", "operator-controller-cert"] {
        secrets.delete(name, &Default::default()).await.unwrap();
    }
    let ca = eventually("cert-manager's CA", || async {
        let secret = Api::<Secret>::namespaced(client.clone(), "cert-manager")
            .get("olmv1-ca")
            .await
            .ok()?;
        Some(secret.data?.get("tls.crt")?.0.clone())
    })
    .await;

    // Every Certificate of the variant Ready, its Secret issued by cert-manager from that CA.
    for (namespace, name) in CERTIFICATES {
        let api = certificates(&client, namespace);
        let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
        let ca = &ca;
        eventually(
            &format!("Certificate {namespace}/{name} Ready, its Secret from cert-manager's CA"),
            || async {
                let certificate = api.get(name).await.ok()?;
                let ready = certificate.data["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                let secret = secrets.get(name).await.ok()?;
                let issued = secret
                    .metadata
                    .annotations
                    .as_ref()?
                    .get("cert-manager.io/certificate-name")
                    .is_some_and(|n| n == name);
                let from_ca = secret.data?.get("ca.crt")?.0 == *ca;
                (ready && issued && from_ca).then_some(())
            },
        )
        .await;
    }
    assert_ne!(catalogd_ca(&client).await, standalone_ca);

    // catalogd serves the certificate cert-manager issued: its Service verifies with that CA.
    let ip = service_ip(&client, CATALOGD_SERVICE).await;
    let https = https_client(&ca, ip, 443);
    eventually(
        "catalogd's Service to serve cert-manager's certificate",
        || async {
            https
                .get(format!("https://{CATALOGD_SERVICE_HOST}/healthz"))
                .send()
                .await
                .ok()
                .map(|_| ())
        },
    )
    .await;

    // A bundle's webhooks with cert-manager as operator-controller's provider: the serving
    // Secret comes from a Certificate, the CA bundle from the cainjector; the API server calls
    // the Pod.
    let webhook_image = push_webhook_image(c).await;
    let package = webhook_package("real-cm-hooks", &webhook_image);
    let label = package.name.clone();
    let bundles = push_bundles(c, &package).await;
    let (catalog, _) = serve_catalog(c, &package, &bundles).await;
    let ns = create_namespace(&client, "real-cm-hooks").await;
    let extensions = Api::<ClusterExtension>::all(client.clone());
    let extension = ExtensionSpec::of_package(&package.name, &catalog, &ns)
        .create(&extensions, "real-cm")
        .await
        .name;
    wait_condition(c, &extensions, &extension, "Installed").await;
    wait_condition(c, &extensions, &extension, "Available").await;
    let serving_secret = format!("{}-service-cert", package.rows[0].bundle.deployment_name());
    let issued = certificates(&client, &ns)
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert!(
        issued
            .iter()
            .any(|c| c.data["spec"]["secretName"] == serving_secret.as_str()),
        "no cert-manager Certificate for {serving_secret}: {issued:?}"
    );
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let create = |name: &str, data: serde_json::Value| {
        let configmaps = configmaps.clone();
        let object = json!({
            "metadata": {"name": name, "labels": {"olm-real-webhook": label}},
            "data": data,
        });
        async move {
            configmaps
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(object).unwrap(),
                )
                .await
        }
    };
    // Until the cainjector has written the CA bundle and kube-proxy routes the Service, calls fail.
    let mutated = eventually("the API server to call the webhook Pod", || async {
        create(&unique_name("cm"), json!({"a": "b"})).await.ok()
    })
    .await;
    let served =
        mutated.metadata.annotations.unwrap_or_default()["olm-real/served-by-cert"].clone();
    let secret = Api::<Secret>::namespaced(client.clone(), &ns)
        .get(&serving_secret)
        .await
        .unwrap();
    assert_eq!(
        served,
        super::fingerprint(&secret.data.unwrap()["tls.crt"].0)
    );
    let refused = create("cm-forbidden", json!({"forbidden": "x"}))
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("olm-real webhook: the key forbidden is not allowed"),
        "{refused}"
    );
}
