//! `operator-controller render` as a process: the YAML stream in the goldens' order, exit
//! statuses 0/1/2/3, bundles from directories and from images in a real registry on 127.0.0.1
//! (plain, TLS with credentials, warm cache), and hostile bundle images.
#![allow(clippy::unwrap_used)]

// One copy of the fixtures, shared with the pure crate's tests.
#[path = "../core/tests/common/mod.rs"]
mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::testdata;
use olm_e2e::images;
use olm_e2e::registry::{Registry, RegistryOptions};
use olm_image::Platform;
use olm_image::push::{ImageSpec, Layer, Pusher, bundle_labels};
use serde_json::Value;

fn render(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_operator-controller"))
        .arg("render")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn conformance() -> PathBuf {
    testdata("conformance/render")
}

fn bundle(name: &str) -> String {
    conformance()
        .join("bundles")
        .join(name)
        .display()
        .to_string()
}

/// The documents of a YAML stream, each parsed.
fn documents(text: &str) -> Vec<Value> {
    let mut splitter = olm_api::fbc::yaml::DocumentSplitter::new(text.as_bytes(), 1);
    let mut out = Vec::new();
    while let Some(doc) = splitter.next_document().unwrap() {
        if let Some(v) = olm_api::fbc::yaml::document_to_value(&doc).unwrap() {
            out.push(olm_operator_core::bundle::manifest::from_go(v));
        }
    }
    out
}

/// The golden objects of a case, in file (= golden) order.
fn golden(bundle: &str, case: &str) -> Vec<Value> {
    let dir = conformance()
        .join("expected-manifests")
        .join(bundle)
        .join(case);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| documents(&fs::read_to_string(f).unwrap()))
        .collect()
}

fn assert_same_stream(out: &Output, expected: &[Value]) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    let docs = documents(&stdout(out));
    assert_eq!(docs.len(), expected.len());
    for (i, (got, want)) in docs.iter().zip(expected).enumerate() {
        assert_eq!(got, want, "document {i} differs");
    }
}

#[test]
fn a_bundle_directory_renders_to_the_goldens_in_their_order() {
    let out = render(&[
        "--bundle",
        &bundle("webhook-operator.v0.0.5"),
        "--install-namespace",
        "webhook-system",
        "--cert-provider",
        "cert-manager",
    ]);
    assert_same_stream(&out, &golden("webhook-operator.v0.0.5", "cert-manager"));
    assert!(stdout(&out).starts_with("---\napiVersion: cert-manager.io/v1\nkind: Certificate\n"));
}

#[test]
fn config_and_watch_namespace_flags_reach_the_renderer() {
    let out = render(&[
        "--bundle",
        &bundle("multi-sa-operator.v0.1.0"),
        "--install-namespace",
        "multi-system",
        "--config",
        &conformance()
            .join("configs/env-override.yaml")
            .display()
            .to_string(),
    ]);
    assert_same_stream(
        &out,
        &golden("multi-sa-operator.v0.1.0", "deploymentconfig-env-override"),
    );
    let out = render(&[
        "--bundle",
        &bundle("single-only-operator.v0.0.1"),
        "--install-namespace",
        "single-system",
        "--watch-namespace",
        "single-watch",
    ]);
    assert_same_stream(
        &out,
        &golden("single-only-operator.v0.0.1", "single-namespace"),
    );
}

#[test]
fn properties_warnings_go_to_stderr() {
    let out = render(&[
        "--bundle",
        &bundle("argocd-operator-maxocp-unquoted.v0.6.0"),
        "--install-namespace",
        "argocd-system",
    ]);
    assert_same_stream(
        &out,
        &golden("argocd-operator-maxocp-unquoted.v0.6.0", "all-namespaces"),
    );
    let err = stderr(&out);
    assert!(err.starts_with("warning: bundle "), "{err}");
    assert!(
        err.contains("olm.maxOpenShiftVersion") && err.contains("4.10"),
        "{err}"
    );
}

#[test]
fn invalid_bundles_and_configurations_exit_1_with_upstreams_message() {
    let expected = |bundle: &str, case: &str| {
        fs::read_to_string(
            conformance()
                .join("expected-manifests")
                .join(bundle)
                .join(case)
                .join("expected-error.txt"),
        )
        .unwrap()
    };
    let cases: [(&str, &[&str], &str, &str); 4] = [
        (
            "own-only-operator.v0.0.1",
            &["--install-namespace", "own-system"],
            "own-only-operator.v0.0.1",
            "no-watch-namespace",
        ),
        (
            "webhook-operator-subdir.v0.0.5",
            &[
                "--install-namespace",
                "webhook-system",
                "--cert-provider",
                "cert-manager",
            ],
            "webhook-operator-subdir.v0.0.5",
            "manifests-subdirectory",
        ),
        (
            "webhook-operator.v0.0.5",
            &["--install-namespace", "webhook-system"],
            "webhook-operator.v0.0.5",
            "no-cert-provider",
        ),
        (
            "webhook-operator-forbidden-rule.v0.0.5",
            &[
                "--install-namespace",
                "webhook-system",
                "--cert-provider",
                "cert-manager",
            ],
            "webhook-operator-forbidden-rule.v0.0.5",
            "forbidden-webhook-rules",
        ),
    ];
    for (dir, args, golden_bundle, case) in cases {
        let mut all = vec!["--bundle".to_owned(), bundle(dir)];
        all.extend(args.iter().map(|s| s.to_string()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = render(&all);
        assert_eq!(out.status.code(), Some(1), "{case}: {}", stderr(&out));
        assert_eq!(stderr(&out), expected(golden_bundle, case), "{case}");
        assert!(stdout(&out).is_empty(), "{case}");
    }
}

/// A bundle directory with `manifests/cm.yaml` holding `configmap`, beside a minimal CSV.
fn bundle_dir_with_configmap(configmap: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("metadata")).unwrap();
    fs::create_dir_all(dir.path().join("manifests")).unwrap();
    fs::write(
        dir.path().join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.package.v1: pkg\n  operators.operatorframework.io.bundle.channels.v1: alpha\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("manifests/csv.yaml"),
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: op.v1}\nspec:\n  version: 1.0.0\n  installModes: [{type: AllNamespaces, supported: true}]\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: op\n        spec:\n          selector: {matchLabels: {app: op}}\n          template:\n            metadata: {labels: {app: op}}\n            spec: {containers: [{name: op, image: 'op:1'}]}\n",
    )
    .unwrap();
    fs::write(dir.path().join("manifests/cm.yaml"), configmap).unwrap();
    dir
}

/// Upstream's text for these numbers was recorded with its renderer and sigs.k8s.io/yaml.
#[test]
fn numbers_print_as_upstream_prints_them_and_yaml_1_1_label_values_fail_as_upstream() {
    let dir = bundle_dir_with_configmap(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nums}\ndata: {a: b}\nextra:\n  i63: 9223372036854775808\n  e3: 1e3\n  e19: 1e19\n  e20: 1e20\n  e21: 1e21\n  small: 0.000001\n  mid: 1234567.5\n  f1: 1.0\n",
    );
    let out = render(&[
        "--bundle",
        &dir.path().display().to_string(),
        "--install-namespace",
        "ns",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let configmap = "---\napiVersion: v1\ndata:\n  a: b\nextra:\n  e3: 1000\n  e19: 10000000000000000000\n  e20: 1e+20\n  e21: 1e+21\n  f1: 1\n  i63: 9223372036854776000\n  mid: 1.2345675e+06\n  small: 1e-06\nkind: ConfigMap\nmetadata:\n  name: nums\n  namespace: ns\n";
    assert!(text.contains(configmap), "{text}");

    let dir = bundle_dir_with_configmap(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {enabled: yes}\n",
    );
    let out = render(&[
        "--bundle",
        &dir.path().display().to_string(),
        "--install-namespace",
        "ns",
    ]);
    assert_eq!(out.status.code(), Some(1), "stdout: {}", stdout(&out));
    assert_eq!(
        stderr(&out),
        "error parsing objects in \"manifests/cm.yaml\": unable to decode \"manifests/cm.yaml\": json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string\n"
    );
}

#[test]
fn usage_errors_exit_2() {
    let b = bundle("argocd-operator.v0.6.0");
    let missing = tempfile::tempdir().unwrap();
    let missing_config = missing.path().join("nope.yaml").display().to_string();
    let cases: [&[&str]; 5] = [
        &["--install-namespace", "x"],
        &["--bundle", &b],
        &[
            "--bundle",
            &b,
            "--install-namespace",
            "x",
            "--cert-provider",
            "vault",
        ],
        &[
            "--bundle",
            &b,
            "--install-namespace",
            "x",
            "--config",
            &missing_config,
        ],
        &["--bundle", "Not A Reference!", "--install-namespace", "x"],
    ];
    for args in cases {
        let out = render(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty());
        assert!(stdout(&out).is_empty());
    }
}

async fn registry_with(options: RegistryOptions) -> Registry {
    Registry::start_with(options)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn a_bundle_image_renders_like_its_directory_and_a_second_run_reads_no_layer() {
    let registry = registry_with(RegistryOptions::default()).await;
    let pushed = images::push_bundle(
        &registry,
        "bundles/webhook-operator:v0.0.5",
        Path::new(&bundle("webhook-operator.v0.0.5")),
        "webhook-operator",
        &["alpha"],
    )
    .await
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let image = registry.image("bundles/webhook-operator:v0.0.5");
    let args = [
        "--bundle",
        &image,
        "--install-namespace",
        "webhook-system",
        "--cert-provider",
        "openshift-service-ca",
        "--insecure-registries",
        &registry.host(),
        "--cache-dir",
        &cache.path().display().to_string(),
    ];
    let expected = golden("webhook-operator.v0.0.5", "openshift-service-ca");
    let cold = render(&args);
    assert_same_stream(&cold, &expected);
    let blob_gets = registry
        .access_log()
        .iter()
        .filter(|e| e.is_blob_get())
        .count();
    assert!(blob_gets >= 2, "config and layer were downloaded");

    let warm = render(&args);
    assert_same_stream(&warm, &expected);
    let after = registry
        .access_log()
        .iter()
        .filter(|e| e.is_blob_get())
        .count();
    assert_eq!(after, blob_gets, "the warm run downloads no blob");

    // By digest, the warm cache answers without any request.
    let requests = registry.access_log().len();
    let by_digest = [
        "--bundle",
        &pushed.digest_ref,
        "--install-namespace",
        "webhook-system",
        "--cert-provider",
        "openshift-service-ca",
        "--insecure-registries",
        &registry.host(),
        "--cache-dir",
        &cache.path().display().to_string(),
    ];
    assert_same_stream(&render(&by_digest), &expected);
    assert_eq!(registry.access_log().len(), requests);
}

#[tokio::test]
async fn tls_registries_with_credentials_use_the_ca_dir_and_pull_secret_flags() {
    let registry = registry_with(RegistryOptions {
        htpasswd: Some(("alice".into(), "s3cret".into())),
        tls: true,
    })
    .await;
    images::push_bundle(
        &registry,
        "bundles/argocd:v0.6.0",
        Path::new(&bundle("argocd-operator.v0.6.0")),
        "argocd-operator",
        &["alpha"],
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cas = dir.path().join("cas");
    fs::create_dir(&cas).unwrap();
    fs::write(cas.join("registry.pem"), registry.ca_pem().unwrap()).unwrap();
    let secret = dir.path().join("config.json");
    let auth = base64_encode("alice:s3cret");
    fs::write(
        &secret,
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    let image = registry.image("bundles/argocd:v0.6.0");
    let cache = dir.path().join("cache").display().to_string();
    let base = [
        "--bundle",
        &image,
        "--install-namespace",
        "argocd-system",
        "--cache-dir",
        &cache,
    ];

    let anonymous = render(&[&base[..], &["--pull-cas-dir", &cas.display().to_string()]].concat());
    assert_eq!(anonymous.status.code(), Some(3), "{}", stderr(&anonymous));
    assert!(
        stderr(&anonymous).contains("failed to pull image"),
        "{}",
        stderr(&anonymous)
    );

    let untrusted =
        render(&[&base[..], &["--pull-secret", &secret.display().to_string()]].concat());
    assert_eq!(untrusted.status.code(), Some(3), "{}", stderr(&untrusted));

    let ok = render(
        &[
            &base[..],
            &[
                "--pull-cas-dir",
                &cas.display().to_string(),
                "--pull-secret",
                &secret.display().to_string(),
            ],
        ]
        .concat(),
    );
    assert_same_stream(&ok, &golden("argocd-operator.v0.6.0", "all-namespaces"));
}

fn base64_encode(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// One raw tar entry: name, type, link target, content.
type RawEntry<'a> = (&'a str, tar::EntryType, &'a str, &'a [u8]);

/// A tar with raw entry names (the tar crate's builder refuses hostile ones): (name, type,
/// link target, content).
fn raw_tar(entries: &[RawEntry<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, kind, link, data) in entries {
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        header.set_entry_type(*kind);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    builder.into_inner().unwrap()
}

#[tokio::test]
async fn hostile_bundle_images_fail_clearly_and_write_nothing_outside_the_cache() {
    use tar::EntryType::{Directory, Fifo, Regular, Symlink};
    let annotations: &[u8] =
        b"annotations:\n  operators.operatorframework.io.bundle.package.v1: evil\n";
    let csv: &[u8] = b"apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: evil.v1}\nspec: {installModes: [{type: AllNamespaces, supported: true}]}\n";
    let huge = vec![b'#'; 100 << 20];
    let base = |extra: Vec<RawEntry<'static>>| {
        let mut entries: Vec<RawEntry<'static>> = vec![
            ("metadata/", Directory, "", b""),
            ("metadata/annotations.yaml", Regular, "", annotations),
            ("manifests/", Directory, "", b""),
            ("manifests/csv.yaml", Regular, "", csv),
        ];
        entries.extend(extra);
        entries
    };
    let huge_static: &'static [u8] = Box::leak(huge.into_boxed_slice());
    let cases: Vec<(&str, Vec<RawEntry<'static>>, &str)> = vec![
        (
            "dotdot",
            base(vec![(
                "manifests/../../../escaped.yaml",
                Regular,
                "",
                b"kind: X\n",
            )]),
            "path contains a \"..\" component",
        ),
        (
            "symlink-out",
            base(vec![(
                "manifests/link.yaml",
                Symlink,
                "../../../../../etc/passwd",
                b"",
            )]),
            "resolves outside the image root",
        ),
        (
            "fifo",
            base(vec![("manifests/pipe.yaml", Fifo, "", b"")]),
            "unsupported entry type fifo",
        ),
        (
            "huge-manifest",
            base(vec![("manifests/huge.yaml", Regular, "", huge_static)]),
            "manifests/huge.yaml: file is larger than the limit of 33554432 bytes (104857600 bytes)",
        ),
        (
            "bad-yaml",
            base(vec![(
                "manifests/bad.yaml",
                Regular,
                "",
                b"kind: [unclosed\n",
            )]),
            "error parsing objects in \"manifests/bad.yaml\": error parsing manifests/bad.yaml: error converting YAML to JSON: yaml: line",
        ),
        (
            "no-kind",
            base(vec![(
                "manifests/nokind.yaml",
                Regular,
                "",
                b"metadata: {name: x}\n",
            )]),
            "error parsing objects in \"manifests/nokind.yaml\": unable to decode \"manifests/nokind.yaml\": Object 'Kind' is missing in",
        ),
    ];
    let registry = registry_with(RegistryOptions::default()).await;
    let pusher = Pusher::new(registry.pusher_config()).unwrap();
    for (name, entries, reason) in cases {
        let spec = ImageSpec {
            layers: vec![Layer::gzip_tar(&raw_tar(&entries)).unwrap()],
            labels: bundle_labels("evil", &["alpha"], Some("alpha")),
            platform: Platform::default(),
        };
        let image = registry.image(&format!("hostile/{name}:v1"));
        pusher.push_image(&image, &spec).await.unwrap();

        let parent = tempfile::tempdir().unwrap();
        fs::write(parent.path().join("sentinel"), "untouched").unwrap();
        let cache = parent.path().join("cache");
        let out = render(&[
            "--bundle",
            &image,
            "--install-namespace",
            "evil-system",
            "--insecure-registries",
            &registry.host(),
            "--cache-dir",
            &cache.display().to_string(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains(reason), "{name}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{name}");
        let names: Vec<String> = fs::read_dir(parent.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let mut names = names;
        names.sort();
        assert!(
            names == ["cache", "sentinel"] || names == ["sentinel"],
            "{name}: {names:?}"
        );
        assert_eq!(
            fs::read_to_string(parent.path().join("sentinel")).unwrap(),
            "untouched"
        );
        assert!(!Path::new("/etc/passwd.yaml").exists());
    }
}
