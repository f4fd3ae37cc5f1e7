//! The committed CRDs in `config/crd/` and `config/openshift/` must be exactly what the Rust types
//! generate.

mod common;

#[test]
fn committed_crds_match_the_rust_types() {
    let dir = common::manifest_dir().join("../config/crd");
    for (file, crd) in olm_api::crd::all() {
        let generated = olm_api::crd::to_yaml(&crd).expect("CRD renders as YAML");
        let committed = std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("config/crd/{file} is missing ({e}); run `make manifests`"));
        assert!(
            generated == committed,
            "config/crd/{file} differs from the Rust types; run `make manifests`"
        );
    }
}

#[test]
fn committed_openshift_crds_match_the_rust_types() {
    let dir = common::manifest_dir().join("../config/openshift");
    for (file, crd) in olm_api::crd::openshift() {
        let generated = olm_api::crd::openshift_to_yaml(&crd).expect("CRD renders as YAML");
        let committed = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| {
            panic!("config/openshift/{file} is missing ({e}); run `make manifests`")
        });
        assert!(
            generated == committed,
            "config/openshift/{file} differs from the Rust types; run `make manifests`"
        );
    }
}

#[test]
fn generated_crds_round_trip_through_yaml() {
    for (file, crd) in olm_api::crd::all()
        .into_iter()
        .chain(olm_api::crd::openshift())
    {
        let yaml = olm_api::crd::to_yaml(&crd).expect("CRD renders as YAML");
        let back: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
            serde_saphyr::from_str(yaml.split_once("---\n").expect("document marker").1)
                .unwrap_or_else(|e| panic!("{file} does not parse back: {e}"));
        assert_eq!(back, crd, "{file} changes when parsed back");
    }
}
