//! Bundles that upstream's reader judges differently from a plain YAML reader (issue 24 item 4):
//! YAML 1.1 words and numbers as label or annotation values, integers beyond int64, and the
//! wording of parse errors.
//!
//! Every expectation here is upstream's, recorded by running the same files through upstream
//! operator-controller v1.11's `source.FromFS(...).GetBundle()` and `registryv1.Renderer` and
//! printing the objects with sigs.k8s.io/yaml (its golden format) and `json.Marshal` (what its
//! Helm chart stores). Where this project's message differs on purpose (a CSV field's path is
//! added; a YAML syntax error is described by this project's parser), the test says so and the
//! README's "Differences from upstream's renderer" lists it.
#![allow(clippy::unwrap_used)]

use olm_operator_core::bundle::{self, BundleFs};
use olm_operator_core::release::{go_json, go_order};
use olm_operator_core::render::{self, RenderOptions, Rendered, yaml::to_yaml};
use serde_json::{Value, json};

const ANNOTATIONS: &str = "annotations:\n  operators.operatorframework.io.bundle.package.v1: pkg\n  operators.operatorframework.io.bundle.channels.v1: alpha\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n";

const CSV: &str = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: op.v1\nspec:\n  version: 1.0.0\n  installModes:\n  - {type: AllNamespaces, supported: true}\n  install:\n    strategy: deployment\n    spec:\n      permissions:\n      - serviceAccountName: op\n        rules: [{verbs: [get], apiGroups: [''], resources: [pods]}]\n      deployments:\n      - name: op\n        spec:\n          selector: {matchLabels: {app: op}}\n          template:\n            metadata: {labels: {app: op}}\n            spec:\n              serviceAccountName: op\n              containers: [{name: op, image: 'op:1'}]\n";

/// The minimal bundle (one CSV) plus `files`; a file named `manifests/csv.yaml` replaces the CSV.
fn bundle_with(files: &[(&str, &str)]) -> BundleFs {
    let mut fs = BundleFs::new();
    fs.insert_file("metadata/annotations.yaml", ANNOTATIONS.as_bytes().to_vec());
    fs.insert_dir("manifests");
    fs.insert_file("manifests/csv.yaml", CSV.as_bytes().to_vec());
    for (path, content) in files {
        fs.insert_file(*path, content.as_bytes().to_vec());
    }
    fs
}

/// The CSV with `old` replaced by `new` (which must occur).
fn csv_with(old: &str, new: &str) -> String {
    assert!(CSV.contains(old), "{old}");
    CSV.replacen(old, new, 1)
}

fn render(fs: &BundleFs) -> Result<Rendered, String> {
    let parsed = bundle::parse(fs).map_err(|e| e.to_string())?;
    render::render(&parsed, &RenderOptions::new("ns")).map_err(|e| e.to_string())
}

fn parse_error(fs: &BundleFs) -> String {
    match bundle::parse(fs) {
        Ok(_) => panic!("the bundle parsed; upstream refuses it"),
        Err(e) => e.to_string(),
    }
}

fn object<'a>(rendered: &'a Rendered, kind: &str, name: &str) -> &'a Value {
    rendered
        .objects
        .iter()
        .find(|o| render::object_kind(o) == kind && render::object_name(o) == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// `(file name, content, upstream's message)` cases, one bundle each.
fn assert_messages(cases: &[(&str, &str, &str)]) {
    for (file, content, want) in cases {
        let fs = bundle_with(&[(file, content)]);
        assert_eq!(&parse_error(&fs), want, "{file}: {content}");
    }
}

#[test]
fn unquoted_yaml_1_1_words_and_numbers_as_label_or_annotation_values_fail_as_upstream() {
    let prefix =
        "error parsing objects in \"manifests/cm.yaml\": unable to decode \"manifests/cm.yaml\": ";
    for (metadata, want) in [
        (
            "{name: cm, labels: {a: on}}",
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            "{name: cm, labels: {a: Off}}",
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            "{name: cm, annotations: {a: yes}}",
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.annotations of type string",
        ),
        (
            "{name: cm, labels: {a: 1}}",
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            "{name: cm, annotations: {a: 1.5}}",
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string",
        ),
    ] {
        let cm = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {metadata}\ndata: {{x: y}}\n");
        let fs = bundle_with(&[("manifests/cm.yaml", &cm)]);
        assert_eq!(parse_error(&fs), format!("{prefix}{want}"), "{metadata}");
    }

    // The CSV is checked the same way, before its own decoding.
    for (metadata, want) in [
        (
            "  name: op.v1\n  labels: {a: off}\n",
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            "  name: op.v1\n  annotations: {a: 1}\n",
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string",
        ),
    ] {
        let csv = csv_with("  name: op.v1\n", metadata);
        let fs = bundle_with(&[("manifests/csv.yaml", &csv)]);
        assert_eq!(
            parse_error(&fs),
            format!(
                "error parsing objects in \"manifests/csv.yaml\": unable to decode \"manifests/csv.yaml\": {want}"
            )
        );
    }
}

#[test]
fn null_and_quoted_label_values_and_yaml_words_elsewhere_render_as_upstream() {
    let fs = bundle_with(&[(
        "manifests/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {a: null, b: 'on'}\ndata: {x: yes}\n",
    )]);
    let rendered = render(&fs).unwrap();
    let cm = object(&rendered, "ConfigMap", "cm");
    assert_eq!(cm["metadata"]["labels"], json!({"a": null, "b": "on"}));
    assert_eq!(cm["data"], json!({"x": true}), "only metadata is checked");

    // The items of a list are not checked: upstream renders the boolean label.
    let fs = bundle_with(&[(
        "manifests/list.yaml",
        "apiVersion: v1\nkind: List\nitems: [{kind: ConfigMap, apiVersion: v1, metadata: {name: c, labels: {a: on}}}]\n",
    )]);
    let rendered = render(&fs).unwrap();
    assert_eq!(
        object(&rendered, "ConfigMap", "c")["metadata"]["labels"],
        json!({"a": true})
    );
}

/// Numbers in an object upstream keeps unstructured (a ConfigMap), as its golden writer and its
/// Helm chart print them.
const NUMBERS_CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: nums
extra:
  i53p1: 9007199254740993
  i63m1: 9223372036854775807
  i63: 9223372036854775808
  u64max: 18446744073709551615
  u64p1: 18446744073709551616
  neg63m1: -9223372036854775809
  big: 123456789012345678901234567890
  e21: 1e21
  e20: 1e20
  e19: 1e19
  e3: 1e3
  f1: 1.0
  negzero: -0
  negzerof: -0.0
  small: 0.000001
  smaller: 0.0000001
  half: 0.5
  mid: 1234567.5
  mid2: 123456.5
  hex: 0x1F
  oct: 0o17
  oct2: 017
  under: 1_000
  bin: 0b101
  sexa: 190:20:30
  plusint: +12
  dot5: .5
  neg: -1.5e-10
  exp: 6.02e+23
";

const NUMBERS_CONFIGMAP_UPSTREAM_YAML: &str = "apiVersion: v1
extra:
  big: 1.2345678901234568e+29
  bin: 5
  dot5: 0.5
  e3: 1000
  e19: 10000000000000000000
  e20: 1e+20
  e21: 1e+21
  exp: 6.02e+23
  f1: 1
  half: 0.5
  hex: 31
  i53p1: 9007199254740993
  i63: 9223372036854776000
  i63m1: 9223372036854775807
  mid: 1.2345675e+06
  mid2: 123456.5
  neg: -1.5e-10
  neg63m1: -9.223372036854776e+18
  negzero: 0
  negzerof: 0
  oct: 15
  oct2: 15
  plusint: 12
  sexa: \"190:20:30\"
  small: 1e-06
  smaller: 1e-07
  u64max: 1.8446744073709552e+19
  u64p1: 1.8446744073709552e+19
  under: 1000
kind: ConfigMap
metadata:
  name: nums
  namespace: ns
";

const NUMBERS_CONFIGMAP_UPSTREAM_JSON: &str = r#"{"apiVersion":"v1","extra":{"big":1.2345678901234568e+29,"bin":5,"dot5":0.5,"e19":10000000000000000000,"e20":100000000000000000000,"e21":1e+21,"e3":1000,"exp":6.02e+23,"f1":1,"half":0.5,"hex":31,"i53p1":9007199254740993,"i63":9223372036854776000,"i63m1":9223372036854775807,"mid":1234567.5,"mid2":123456.5,"neg":-1.5e-10,"neg63m1":-9223372036854776000,"negzero":0,"negzerof":0,"oct":15,"oct2":15,"plusint":12,"sexa":"190:20:30","small":0.000001,"smaller":1e-7,"u64max":18446744073709552000,"u64p1":18446744073709552000,"under":1000},"kind":"ConfigMap","metadata":{"name":"nums","namespace":"ns"}}"#;

/// Numbers in a CRD: `default` and `enum` are raw JSON in Go's type, `maximum`, `minimum`,
/// `multipleOf` float64, `maxLength` int64.
const NUMBERS_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, kind: Widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          a: {type: integer, default: 9223372036854775808, maximum: 1e21, minimum: -0.0, multipleOf: 0.5, maxLength: 9007199254740993, enum: [1e20, 1.0, 18446744073709551615, 0.0000001]}
";

const NUMBERS_CRD_UPSTREAM_YAML: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    plural: widgets
  scope: Namespaced
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          a:
            default: 9223372036854776000
            enum:
            - 1e+20
            - 1
            - 1.8446744073709552e+19
            - 1e-07
            maxLength: 9007199254740993
            maximum: 1e+21
            minimum: 0
            multipleOf: 0.5
            type: integer
        type: object
    served: true
    storage: true
status:
  acceptedNames:
    kind: \"\"
    plural: \"\"
  conditions: null
  storedVersions: null
";

const NUMBERS_CRD_UPSTREAM_JSON: &str = r#"{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","names":{"plural":"widgets","kind":"Widget"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"a":{"type":"integer","default":9223372036854776000,"maximum":1e+21,"minimum":0,"maxLength":9007199254740993,"multipleOf":0.5,"enum":[100000000000000000000,1,18446744073709552000,1e-7]}}}}}]},"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":null}}"#;

#[test]
fn integers_beyond_int64_and_other_numbers_print_as_upstream_prints_them() {
    let fs = bundle_with(&[
        ("manifests/cm.yaml", NUMBERS_CONFIGMAP),
        ("manifests/crd.yaml", NUMBERS_CRD),
    ]);
    let rendered = render(&fs).unwrap();
    let cm = object(&rendered, "ConfigMap", "nums");
    assert_eq!(to_yaml(cm), NUMBERS_CONFIGMAP_UPSTREAM_YAML);
    assert_eq!(
        String::from_utf8(go_json::value_to_vec(cm)).unwrap(),
        NUMBERS_CONFIGMAP_UPSTREAM_JSON
    );
    let crd = object(&rendered, "CustomResourceDefinition", "widgets.example.com");
    assert_eq!(to_yaml(crd), NUMBERS_CRD_UPSTREAM_YAML);
    assert_eq!(
        String::from_utf8(go_order::typed_json(crd).unwrap()).unwrap(),
        NUMBERS_CRD_UPSTREAM_JSON
    );
    // Kept exactly where upstream keeps an int64; a float64 (as upstream holds it) beyond.
    assert_eq!(cm["extra"]["i63m1"], json!(i64::MAX));
    assert!(cm["extra"]["i63"].is_f64());
}

#[test]
fn numbers_in_json_manifests_decode_as_apimachinery_decodes_them() {
    let fs = bundle_with(&[(
        "manifests/cm.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}, "x": {"a": 1.0, "b": 1e3, "c": 9223372036854775808, "d": -0, "e": -0.0}}"#,
    )]);
    let rendered = render(&fs).unwrap();
    let cm = object(&rendered, "ConfigMap", "a");
    assert!(
        to_yaml(cm).contains("x:\n  a: 1\n  b: 1000\n  c: 9223372036854776000\n  d: 0\n  e: 0\n")
    );
    assert_eq!(
        String::from_utf8(go_json::value_to_vec(&cm["x"])).unwrap(),
        r#"{"a":1,"b":1000,"c":9223372036854776000,"d":0,"e":-0}"#
    );
    assert_eq!(
        parse_error(&bundle_with(&[(
            "manifests/cm.json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}, "x": 1E400}"#,
        )])),
        "error parsing objects in \"manifests/cm.json\": unable to decode \"manifests/cm.json\": json: cannot unmarshal number 1E400 into Go value of type float64"
    );
}

#[test]
fn yaml_conversion_errors_have_sigs_yamls_wording_without_a_line() {
    let p = "error parsing objects in \"manifests/x.yaml\": error parsing manifests/x.yaml: error converting YAML to JSON: ";
    let cases: Vec<(&str, String)> = vec![
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata2: .inf\n",
            format!("{p}json: unsupported value: +Inf"),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata2: [.NaN]\n",
            format!("{p}json: unsupported value: NaN"),
        ),
        // json.Marshal meets `a` before `b`.
        (
            "apiVersion: v1\nkind: ConfigMap\nb: .inf\na: [.nan]\n",
            format!("{p}json: unsupported value: NaN"),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  ~: x\n",
            format!("{p}unsupported map key of type: %!s(<nil>), key: <nil>, value: \"x\""),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  null: x\n",
            format!("{p}unsupported map key of type: %!s(<nil>), key: <nil>, value: \"x\""),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nz:\n  ~: {b: [1, x, 1.5, true, null]}\n",
            format!(
                "{p}unsupported map key of type: %!s(<nil>), key: <nil>, value: map[interface {{}}]interface {{}}{{\"b\":[]interface {{}}{{1, \"x\", 1.5, true, interface {{}}(nil)}}}}"
            ),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nz:\n  ~: [1.0, 1e6, 0.0001, 18446744073709551615, -1]\n",
            format!(
                "{p}unsupported map key of type: %!s(<nil>), key: <nil>, value: []interface {{}}{{1, 1e+06, 0.0001, 0xffffffffffffffff, -1}}"
            ),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nz:\n  ~: \"a\\tb\\u00e9\\u00a0\"\n",
            format!(
                "{p}unsupported map key of type: %!s(<nil>), key: <nil>, value: \"a\\tbé\\u00a0\""
            ),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nz:\n  18446744073709551615: 1\n",
            format!("{p}unsupported map key of type: uint64, key: 0xffffffffffffffff, value: 1"),
        ),
        // A key that is not a string wins over a non-finite number anywhere.
        (
            "apiVersion: v1\nkind: ConfigMap\na: .inf\nz:\n  ~: 1\n",
            format!("{p}unsupported map key of type: %!s(<nil>), key: <nil>, value: 1"),
        ),
        // go-yaml's own decoding problems: `yaml: ` and no line.
        (
            "apiVersion: v1\nkind: ConfigMap\nz:\n  ? [a]\n  : 1\n",
            format!("{p}yaml: invalid map key: []interface {{}}{{\"a\"}}"),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nz:\n  ? {a: 1}\n  : 1\n",
            format!("{p}yaml: invalid map key: map[interface {{}}]interface {{}}{{\"a\":1}}"),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nx: !!int abc\ny:\n  ~: 1\n",
            format!("{p}yaml: cannot decode !!str `abc` as a !!int"),
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nx: {<<: 1}\n",
            format!("{p}yaml: map merge requires map or sequence of maps as the value"),
        ),
        // A `---` line followed by content: apimachinery's splitter, before any YAML.
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n--- {b: 1}\n",
            "error parsing objects in \"manifests/x.yaml\": error parsing manifests/x.yaml: invalid Yaml document separator: {b: 1}".to_owned(),
        ),
    ];
    for (content, want) in &cases {
        assert_eq!(
            &parse_error(&bundle_with(&[("manifests/x.yaml", content)])),
            want,
            "{content}"
        );
    }

    // Replaced by a later duplicate key, a non-finite number is no problem.
    let fs = bundle_with(&[(
        "manifests/x.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nx: .inf\nx: 1\n",
    )]);
    assert_eq!(
        object(&render(&fs).unwrap(), "ConfigMap", "a")["x"],
        json!(1)
    );
}

/// Syntax errors keep upstream's prefix; the rest is this parser's: the file's line (go-yaml
/// counts from the document's first line, and from 0 for most parser errors) and its own words
/// (see README, "Differences from upstream's renderer").
#[test]
fn yaml_syntax_errors_keep_upstreams_prefix_and_name_the_files_line() {
    let p = "error parsing objects in \"manifests/x.yaml\": error parsing manifests/x.yaml: error converting YAML to JSON: yaml: ";
    for (content, ours, upstream) in [
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n bad: x\n",
            "line 9: while parsing a block mapping, did not find expected key",
            "line 4: did not find expected key",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n",
            "line 4: tabs disallowed within this context (block indentation)",
            "line 4: found character that cannot start any token",
        ),
        // A syntax error wins over a problem of a later step earlier in the document.
        (
            "apiVersion: v1\nkind: ConfigMap\nx: .inf\nmetadata: {name: a\n",
            "line 4: unclosed bracket '{'",
            "line 4: did not find expected ',' or '}'",
        ),
        (
            "a: b: c\n",
            "line 1: mapping values are not allowed in this context",
            "mapping values are not allowed in this context",
        ),
    ] {
        let got = parse_error(&bundle_with(&[("manifests/x.yaml", content)]));
        assert_eq!(got, format!("{p}{ours}"), "upstream: {p}{upstream}");
    }
}

#[test]
fn documents_that_are_no_kubernetes_object_fail_as_upstream() {
    let d =
        |file: &str| format!("error parsing objects in \"{file}\": unable to decode \"{file}\": ");
    let y = d("manifests/x.yaml");
    let j = d("manifests/x.json");
    let cases: Vec<(&str, &str, String)> = vec![
        (
            "manifests/x.yaml",
            "apiVersion: v1\nmetadata:\n  name: a\ndata: {b: \"<x>\", a: 1}\n",
            format!(
                "{y}Object 'Kind' is missing in '{{\"apiVersion\":\"v1\",\"data\":{{\"a\":1,\"b\":\"\\u003cx\\u003e\"}},\"metadata\":{{\"name\":\"a\"}}}}'"
            ),
        ),
        (
            "manifests/x.json",
            "{\"apiVersion\":\"v1\",  \"metadata\":{\"name\":\"a\", \"x\": 1.0, \"y\": \"<>\"}}\n",
            format!(
                "{j}Object 'Kind' is missing in '{{\"apiVersion\":\"v1\",  \"metadata\":{{\"name\":\"a\", \"x\": 1.0, \"y\": \"<>\"}}}}'"
            ),
        ),
        (
            "manifests/x.yaml",
            "apiVersion: v1\nkind: 5\nmetadata: {name: a}\n",
            format!(
                "{y}Object 'Kind' is missing in '{{\"apiVersion\":\"v1\",\"kind\":5,\"metadata\":{{\"name\":\"a\"}}}}'"
            ),
        ),
        (
            "manifests/x.yaml",
            "apiVersion: a/b/c\nkind: ConfigMap\nmetadata: {name: a}\n",
            format!(
                "{y}Object 'Kind' is missing in '{{\"apiVersion\":\"a/b/c\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"a\"}}}}'"
            ),
        ),
        (
            "manifests/x.yaml",
            "hello\n",
            format!("{y}json: cannot unmarshal string into Go value of type unstructured.detector"),
        ),
        (
            "manifests/x.yaml",
            "- a\n- b\n",
            format!("{y}json: cannot unmarshal array into Go value of type unstructured.detector"),
        ),
        (
            "manifests/x.yaml",
            "---\n42\n",
            format!("{y}json: cannot unmarshal number into Go value of type unstructured.detector"),
        ),
        (
            "manifests/x.yaml",
            "---\ntrue\n",
            format!("{y}json: cannot unmarshal bool into Go value of type unstructured.detector"),
        ),
        (
            "manifests/x.json",
            "\"hello\"\n",
            format!("{j}json: cannot unmarshal string into Go value of type unstructured.detector"),
        ),
        (
            "manifests/x.json",
            "[1]\n",
            format!("{j}json: cannot unmarshal array into Go value of type unstructured.detector"),
        ),
    ];
    for (file, content, want) in &cases {
        assert_eq!(
            &parse_error(&bundle_with(&[(file, content)])),
            want,
            "{content}"
        );
    }
}

#[test]
fn json_streams_fall_back_to_yaml_and_report_gos_json_errors() {
    // Not JSON (a trailing comma) but YAML: upstream reads it.
    let fs = bundle_with(&[(
        "manifests/x.json",
        "{\"kind\": \"ConfigMap\", \"apiVersion\": \"v1\", \n \"metadata\": {\"name\": \"a\",}}\n",
    )]);
    object(&render(&fs).unwrap(), "ConfigMap", "a");
    // One JSON object, then YAML.
    let fs = bundle_with(&[(
        "manifests/x.json",
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
    )]);
    let rendered = render(&fs).unwrap();
    object(&rendered, "ConfigMap", "a");
    object(&rendered, "ConfigMap", "b");

    let p = "error parsing objects in \"manifests/x.json\": error parsing manifests/x.json: ";
    assert_messages(&[
        (
            "manifests/x.json",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\", \"metadata\":{\"name\":\"a\"}}}\n",
            &format!("{p}json: offset 64: invalid character '}}' looking for beginning of value"),
        ),
        (
            "manifests/x.json",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\", \"metadata\":{\"name\":\"a\"}, @}\n",
            &format!(
                "{p}json: offset 65: invalid character '@' looking for beginning of object key string"
            ),
        ),
        (
            "manifests/x.json",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}\n{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\"}}\n{garbage\n",
            &format!("{p}invalid character 'g' looking for beginning of object key string"),
        ),
        (
            "manifests/x.json",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}\n",
            &format!("{p}unexpected EOF"),
        ),
    ]);
}

#[test]
fn metadata_of_the_wrong_type_fails_with_encoding_jsons_message() {
    let p =
        "error parsing objects in \"manifests/x.yaml\": unable to decode \"manifests/x.yaml\": ";
    let head = "apiVersion: v1\nkind: ConfigMap\n";
    let cases: Vec<(String, String)> = [
        ("metadata: {name: 5}", "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"),
        ("metadata: {name: a, uid: 5}", "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.uid of type types.UID"),
        ("metadata: {name: a, generation: 1.5}", "json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64"),
        ("metadata: {name: a, generation: 9223372036854775808}", "json: cannot unmarshal number 9223372036854775808 into Go struct field ObjectMeta.metadata.generation of type int64"),
        ("metadata: {name: a, generation: \"1\"}", "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.generation of type int64"),
        ("metadata: {name: a, deletionGracePeriodSeconds: x}", "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.deletionGracePeriodSeconds of type int64"),
        ("metadata: {name: a, labels: [a]}", "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"),
        ("metadata: {name: a, annotations: {a: {b: c}}}", "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.annotations of type string"),
        ("metadata: {name: a, finalizers: [1]}", "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.finalizers of type string"),
        ("metadata: {name: a, finalizers: x}", "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.finalizers of type []string"),
        ("metadata: {name: a, finalizers: {a: b}}", "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.finalizers of type []string"),
        ("metadata: {name: a, ownerReferences: [5]}", "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.ownerReferences of type v1.OwnerReference"),
        ("metadata: {name: a, ownerReferences: [{name: 1, controller: \"yes\"}]}", "json: cannot unmarshal string into Go struct field OwnerReference.metadata.ownerReferences.controller of type bool"),
        ("metadata: {name: a, managedFields: [{operation: 5}]}", "json: cannot unmarshal number into Go struct field ManagedFieldsEntry.metadata.managedFields.operation of type v1.ManagedFieldsOperationType"),
        ("metadata: {name: a, managedFields: [{manager: 1, fieldsV1: 5, time: 3}]}", "json: cannot unmarshal number into Go struct field ManagedFieldsEntry.metadata.managedFields.time of type string"),
        ("metadata: {name: a, ownerReferences: [{kind: 5}], generation: x}", "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.generation of type int64"),
        ("metadata: hello", "json: cannot unmarshal string into Go struct field metadataOnlyObject.metadata of type v1.ObjectMeta"),
        ("metadata: [a]", "json: cannot unmarshal array into Go struct field metadataOnlyObject.metadata of type v1.ObjectMeta"),
        ("metadata: 5", "json: cannot unmarshal number into Go struct field metadataOnlyObject.metadata of type v1.ObjectMeta"),
        ("metadata: {name: a, creationTimestamp: 5}", "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"),
        ("metadata: {name: a, deletionTimestamp: {}}", "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.deletionTimestamp of type string"),
        // A time that does not parse stops the decoder: it wins over the earlier `name`.
        ("metadata: {name: 5, labels: {a: on}, creationTimestamp: 5}", "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"),
        ("metadata: {name: 5, creationTimestamp: \"x\"}", "parsing time \"x\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"x\" as \"2006\""),
        ("metadata: {name: a, creationTimestamp: \"2021-13-01T00:00:00Z\"}", "parsing time \"2021-13-01T00:00:00Z\": month out of range"),
        ("metadata: {name: a, creationTimestamp: \"yesterday\"}", "parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\""),
        ("metadata: {name: a, creationTimestamp: 2021-01-01}", "parsing time \"2021-01-01\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"\" as \"T\""),
        ("metadata: {name: a, creationTimestamp: \"2021-01-01T00:00:00+25:61\"}", "parsing time \"2021-01-01T00:00:00+25:61\": time zone offset minute out of range"),
        ("metadata: {name: a, creationTimestamp: \"2021-01-01T00:00:00.Z\"}", "parsing time \"2021-01-01T00:00:00.Z\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \".Z\" as \"Z07:00\""),
        ("metadata: {name: a, creationTimestamp: \"2021-01-01t00:00:00z\"}", "parsing time \"2021-01-01t00:00:00z\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"t00:00:00z\" as \"T\""),
        ("metadata: {name: a, creationTimestamp: \"2021-01-01T00:00:60Z\"}", "parsing time \"2021-01-01T00:00:60Z\": second out of range"),
        ("metadata: {name: a, creationTimestamp: \"2100-02-29T00:00:00Z\"}", "parsing time \"2100-02-29T00:00:00Z\": day out of range"),
        ("metadata: {name: a, creationTimestamp: \"2021-01-01T00:00:00+0100\"}", "parsing time \"2021-01-01T00:00:00+0100\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"+0100\" as \"Z07:00\""),
        ("metadata: {name: a, creationTimestamp: \"a\\\"b\\u00e9\"}", "parsing time \"a\\\"b\\xc3\\xa9\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"a\\\"b\\xc3\\xa9\" as \"2006\""),
    ]
    .iter()
    .map(|(meta, want)| (format!("{head}{meta}\n"), format!("{p}{want}")))
    .collect();
    for (content, want) in &cases {
        assert_eq!(
            &parse_error(&bundle_with(&[("manifests/x.yaml", content)])),
            want,
            "{content}"
        );
    }
    let cases = [
        (
            "apiVersion: 1\nkind: ConfigMap\nmetadata: {name: a}\n",
            "json: cannot unmarshal number into Go struct field metadataOnlyObject.TypeMeta.apiVersion of type string",
        ),
        // A list's own metadata is checked (as ObjectMeta), its items' metadata is not.
        (
            "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: 5}\nitems: []\n",
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.resourceVersion of type string",
        ),
    ];
    for (content, want) in cases {
        assert_eq!(
            parse_error(&bundle_with(&[("manifests/x.yaml", content)])),
            format!("{p}{want}")
        );
    }

    for meta in [
        "metadata: {name: a, creationTimestamp: \"2021-01-01T10:00:00+01:00\"}",
        "metadata: {name: a, creationTimestamp: \"2021-01-01T00:00:00.5+01:00\"}",
        "metadata: {name: a, creationTimestamp: null, generation: 1e3}",
        "metadata: {name: a, managedFields: [{fieldsV1: 5, manager: x}]}",
        "metadata: {name: a, Labels: {a: on}}",
    ] {
        let fs = bundle_with(&[("manifests/x.yaml", &format!("{head}{meta}\n"))]);
        let rendered = render(&fs).unwrap_or_else(|e| panic!("{meta}: {e}"));
        object(&rendered, "ConfigMap", "a");
    }
}

#[test]
fn lists_flatten_and_fail_as_upstreams_flattening_visitor() {
    let p = "error parsing objects in \"manifests/x.yaml\": ";
    let u = "unable to decode \"manifests/x.yaml\": ";
    let no_kind = "unable to get type info from the object \"*unstructured.Unstructured\": Object 'Kind' is missing in 'object has no kind field '";
    let no_version = "unable to get type info from the object \"*unstructured.Unstructured\": Object 'apiVersion' is missing in 'object has no apiVersion field'";
    let cases: Vec<(&str, String)> = vec![
        (
            "apiVersion: v1\nkind: ConfigMapList\nitems: {a: 1}\n",
            format!(
                "{p}{u}json: cannot unmarshal object into Go struct field decodeList.items of type []json.RawMessage"
            ),
        ),
        (
            "apiVersion: v1\nkind: ConfigMapList\nitems: [hello]\n",
            format!(
                "{p}{u}json: cannot unmarshal string into Go value of type map[string]interface {{}}"
            ),
        ),
        (
            "apiVersion: v1\nitems: [{kind: ConfigMap, apiVersion: v1, metadata: {name: b}}]\n",
            format!(
                "{p}{u}Object 'Kind' is missing in '{{\"apiVersion\":\"v1\",\"items\":[{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"b\"}}}}]}}'"
            ),
        ),
        (
            "apiVersion: v1\nkind: List\nitems: [{metadata: {name: b}}]\n",
            format!("{p}{no_kind}"),
        ),
        (
            "apiVersion: v1\nkind: ConfigMapList\nitems: [{apiVersion: v2, metadata: {name: b}}]\n",
            format!("{p}{no_kind}"),
        ),
        (
            "apiVersion: v1\nkind: List\nitems: [{kind: ConfigMap, metadata: {name: b}}]\n",
            format!("{p}{no_version}"),
        ),
        (
            "apiVersion: v1\nkind: List\nitems: [{kind: ConfigMap, metadata: {name: b}}, {metadata: {name: c}}, {kind: ConfigMap, apiVersion: v1, metadata: {name: d}}, {kind: ConfigMap, metadata: {name: e}}]\n",
            format!("{p}[{no_version}, {no_kind}]"),
        ),
        (
            "apiVersion: v1\nkind: List\nitems: [{kind: ClusterServiceVersion, apiVersion: operators.coreos.com/v1alpha1, metadata: {name: b}, spec: {displayName: 5}}, {kind: ConfigMap, metadata: {name: e}}]\n",
            format!("{p}[cannot convert int64 to string (field spec.displayName), {no_version}]"),
        ),
        (
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: SecretList\n  items: [{metadata: {name: s}}]\n",
            format!("{p}*unstructured.Unstructured is not a list: no Items field in this object"),
        ),
    ];
    for (content, want) in &cases {
        assert_eq!(
            &parse_error(&bundle_with(&[("manifests/x.yaml", content)])),
            want,
            "{content}"
        );
    }

    // `items: null` makes an empty list; a `null` item an empty object of the list's kind.
    let fs = bundle_with(&[(
        "manifests/x.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nitems: null\n---\napiVersion: v1\nkind: ConfigMapList\nitems: [null, {metadata: {name: b}}]\n",
    )]);
    let parsed = bundle::parse(&fs).unwrap();
    let names: Vec<(&str, &str)> = parsed.others.iter().map(|o| (o.kind(), o.name())).collect();
    assert_eq!(names, [("ConfigMap", ""), ("ConfigMap", "b")]);
}

/// Upstream's unstructured converter gives these messages without saying where; this project
/// adds ` (field <path>)` (README, "Differences from upstream's renderer").
#[test]
fn mistyped_csv_fields_keep_upstreams_message_and_name_the_field() {
    let p = "error parsing objects in \"manifests/csv.yaml\": ";
    let containers = "containers: [{name: op, image: 'op:1'}]";
    let deployment = "spec.install.spec.deployments[0].spec";
    let container = format!("{deployment}.template.spec.containers[0]");
    let cases: Vec<(String, String, String)> = vec![
        ("version: 1.0.0".into(), "version: [1]".into(), "json: cannot unmarshal array into Go value of type string (field spec.version)".into()),
        ("version: 1.0.0".into(), "version: 1.0".into(), "json: cannot unmarshal number into Go value of type string (field spec.version)".into()),
        ("version: 1.0.0".into(), "version: bad.version".into(), "Invalid character(s) found in major number \"0bad\" (field spec.version)".into()),
        ("version: 1.0.0".into(), "version: 1.0.0\n  displayName: 5".into(), "cannot convert int64 to string (field spec.displayName)".into()),
        ("version: 1.0.0".into(), "version: 1.0.0\n  maturity: true".into(), "unrecognized type: string (field spec.maturity)".into()),
        ("version: 1.0.0".into(), "version: 1.0.0\n  keywords: a".into(), "cannot restore slice from string (field spec.keywords)".into()),
        ("version: 1.0.0".into(), "version: 1.0.0\n  minKubeVersion: 1.20".into(), "unrecognized type: string (field spec.minKubeVersion)".into()),
        ("  installModes:\n  - {type: AllNamespaces, supported: true}".into(), "  installModes: AllNamespaces".into(), "cannot restore slice from string (field spec.installModes)".into()),
        ("{type: AllNamespaces, supported: true}".into(), "{type: AllNamespaces, supported: yes}\n  - {type: OwnNamespace, supported: 'true'}".into(), "unrecognized type: bool (field spec.installModes[1].supported)".into()),
        ("selector:".into(), "replicas: two\n          selector:".into(), format!("unrecognized type: int32 (field {deployment}.replicas)")),
        ("selector:".into(), "replicas: 1.5\n          selector:".into(), format!("cannot convert float64 to int32 (field {deployment}.replicas)")),
        (containers.into(), "containers: [{name: op, image: 'op:1', ports: [{containerPort: x}]}]".into(), format!("unrecognized type: int32 (field {container}.ports[0].containerPort)")),
        (containers.into(), "containers: [{name: op, image: 'op:1', env: [{name: A, value: 1}]}]".into(), format!("cannot convert int64 to string (field {container}.env[0].value)")),
        (containers.into(), "containers: [{name: op, image: 'op:1', env: [{name: A, value: yes}]}]".into(), format!("unrecognized type: string (field {container}.env[0].value)")),
        (containers.into(), "containers: [{name: op, image: 'op:1', resources: {limits: {cpu: abc}}}]".into(), format!("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (field {container}.resources.limits.cpu)")),
        (containers.into(), "containers: [{name: op, image: 'op:1', readinessProbe: {httpGet: {port: 1.5}}}]".into(), format!("json: cannot unmarshal number 1.5 into Go value of type int32 (field {container}.readinessProbe.httpGet.port)")),
        ("metadata: {labels: {app: op}}".into(), "metadata: {labels: {app: op, on: on}}".into(), "unrecognized type: string (field spec.install.spec.deployments[0].spec.template.metadata.labels.true)".into()),
        ("spec:\n  version: 1.0.0".into(), "spec: hello\nxspec:\n  version: 1.0.0".into(), "cannot restore struct from: string (field spec)".into()),
    ];
    for (old, new, want) in &cases {
        let csv = csv_with(old, new);
        let got = parse_error(&bundle_with(&[("manifests/csv.yaml", &csv)]));
        assert_eq!(got, format!("{p}{want}"), "{new}");
    }

    // Large numbers where Go's types take them: a replica count beyond int64 wraps to 0 as Go's
    // conversion does, and quantities are read from Go's float text.
    let csv = csv_with(
        "selector:",
        "replicas: 9223372036854775808\n          selector:",
    );
    let rendered = render(&bundle_with(&[("manifests/csv.yaml", &csv)])).unwrap();
    assert_eq!(
        object(&rendered, "Deployment", "op")["spec"]["replicas"],
        json!(0)
    );
    let csv = csv_with(
        containers,
        "containers: [{name: op, image: 'op:1', resources: {limits: {cpu: 9223372036854775808, memory: 1e3}}}]",
    );
    let rendered = render(&bundle_with(&[("manifests/csv.yaml", &csv)])).unwrap();
    assert_eq!(
        object(&rendered, "Deployment", "op")["spec"]["template"]["spec"]["containers"][0]["resources"]
            ["limits"],
        json!({"cpu": "9223372036854776k", "memory": "1k"})
    );
}
