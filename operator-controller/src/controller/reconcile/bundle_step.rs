//! The resolved bundle pulled, parsed and rendered, and its objects as upstream's chart holds
//! them.
//!
//! Input: the extension, the resolution. Output: the rendered objects. Network: the bundle's
//! image registry (the digest-keyed cache aside).

use super::*;

pub(super) async fn pull_and_render(
    extension: &ClusterExtension,
    ctx: &Context,
    resolution: &Resolution,
) -> Result<(render::Rendered, BTreeSet<(String, String)>), BundleFailure> {
    let started = Instant::now();
    let puller = ctx.puller();
    let pulled = pull_bundle(
        &puller,
        &extension.name_any(),
        &resolution.bundle.image,
        &ReadLimits::default(),
    )
    .await?;
    if pulled.unpacked.fresh {
        ctx.metrics.observe_unpack(started.elapsed().as_secs_f64());
    }
    let parsed = bundle::parse(&pulled.fs)?;
    let others = bundle_manifests(&parsed);
    let options = render_options(
        extension,
        ctx.settings.cert_provider,
        ctx.settings.single_own_namespace,
        ctx.settings.deployment_config,
    );
    let rendered = render::render(&parsed, &options)?;
    Ok((rendered, others))
}

/// How `extension`'s bundle is rendered: its namespace and `spec.config`, the certificate
/// provider and the SingleOwnNamespaceInstallSupport / DeploymentConfig gates. `preview` renders
/// with the same function, so it shows exactly what the controller would apply.
pub(crate) fn render_options(
    extension: &ClusterExtension,
    cert_provider: CertProvider,
    single_own_namespace: bool,
    deployment_config: bool,
) -> RenderOptions {
    RenderOptions {
        install_namespace: extension.spec.namespace.clone(),
        config: extension
            .spec
            .config
            .as_ref()
            .and_then(|c| c.inline.clone())
            .map(Value::Object),
        cert_provider,
        single_own_namespace,
        deployment_config,
    }
}

/// (kind, name) of the bundle's own manifests other than the CSV and CRDs.
pub fn bundle_manifests(bundle: &bundle::RegistryV1Bundle) -> BTreeSet<(String, String)> {
    bundle
        .others
        .iter()
        .map(|o| (o.kind().to_owned(), o.name().to_owned()))
        .collect()
}

/// Objects as upstream's chart holds them: the bundle's own manifests (other than the CSV and
/// CRDs) as unstructured objects, everything generated as typed ones. A bundle object is
/// recognised by kind and name.
pub fn chart_objects(
    rendered: &render::Rendered,
    others: &BTreeSet<(String, String)>,
) -> Vec<ChartObject> {
    rendered
        .objects
        .iter()
        .map(|object| {
            let key = (
                render::object_kind(object).to_owned(),
                render::object_name(object).to_owned(),
            );
            if others.contains(&key) {
                ChartObject::unstructured(object)
            } else {
                ChartObject::typed(object)
            }
        })
        .collect()
}
