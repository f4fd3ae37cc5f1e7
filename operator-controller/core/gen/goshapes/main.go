// Command goshapes writes the wire shape of the Go API types that upstream OLM v1 decodes bundle
// manifests into: for every struct, its JSON field names, `omitempty`/`omitzero` flags, inlined
// (embedded) fields and field types, found by reflection over the exact module versions upstream
// builds with (see go.mod). The Rust renderer reads the result (`../../src/gotype/shapes.json`) to
// reproduce Go's decode (runtime.DefaultUnstructuredConverter.FromUnstructured, encoding/json)
// followed by json.Marshal: unknown fields dropped, zero-valued fields without omitempty emitted,
// nil slices as null, custom-marshalled types (Quantity, IntOrString, Time, ...) named.
//
// Usage (from this directory):
//
//	go run . > ../../src/gotype/shapes.json
//	go run . config-schema $(go env GOMODCACHE)/k8s.io/kubernetes@v1.36.3/api/openapi-spec/v3/api__v1_openapi.json \
//	    > ../../src/render/config_schema.json
//
// The second form writes the Kubernetes schemas `deploymentConfig` refers to (the fields of
// v1alpha1.SubscriptionConfig except `selector`, as upstream's schema-generator picks them),
// keeping only validation keywords: descriptions and defaults do not change a verdict.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/lib/release"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Field is one struct field as encoding/json and the unstructured converter see it.
type Field struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	OmitEmpty bool   `json:"omitempty,omitempty"`
	OmitZero  bool   `json:"omitzero,omitempty"`
	Inline    bool   `json:"inline,omitempty"`
}

// Struct is a struct type's fields in declaration order.
type Struct struct {
	GoName string  `json:"go"`
	Fields []Field `json:"fields"`
}

// Output is the whole file.
type Output struct {
	Comment string            `json:"comment"`
	Roots   map[string]string `json:"roots"`
	Structs map[string]Struct `json:"structs"`
}

var (
	marshalerType   = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// special lists every type with its own JSON form; the Rust side implements each by name.
var special = map[reflect.Type]string{
	reflect.TypeOf(resource.Quantity{}):                            "%Quantity",
	reflect.TypeOf(intstr.IntOrString{}):                           "%IntOrString",
	reflect.TypeOf(metav1.Time{}):                                  "%Time",
	reflect.TypeOf(metav1.MicroTime{}):                             "%MicroTime",
	reflect.TypeOf(metav1.Duration{}):                              "%Duration",
	reflect.TypeOf(runtime.RawExtension{}):                         "%RawExtension",
	reflect.TypeOf(apiextensionsv1.JSON{}):                         "%JSON",
	reflect.TypeOf(apiextensionsv1.JSONSchemaPropsOrArray{}):       "%JSONSchemaPropsOrArray",
	reflect.TypeOf(apiextensionsv1.JSONSchemaPropsOrBool{}):        "%JSONSchemaPropsOrBool",
	reflect.TypeOf(apiextensionsv1.JSONSchemaPropsOrStringArray{}): "%JSONSchemaPropsOrStringArray",
	reflect.TypeOf(metav1.FieldsV1{}):                              "%FieldsV1",
	reflect.TypeOf(json.RawMessage{}):                              "%RawMessage",
	reflect.TypeOf(release.OperatorRelease{}):                      "%OperatorRelease",
	reflect.TypeOf(version.OperatorVersion{}):                      "%OperatorVersion",
}

type gen struct {
	structs map[string]Struct
}

func structName(t reflect.Type) string {
	return t.PkgPath() + "." + t.Name()
}

func (g *gen) typeExpr(t reflect.Type) string {
	if s, ok := special[t]; ok {
		return s
	}
	if t.Kind() == reflect.Pointer {
		return "*" + g.typeExpr(t.Elem())
	}
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		fmt.Fprintf(os.Stderr, "type %s has its own JSON form but no Rust implementation is named for it\n", t)
		os.Exit(1)
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		kind := t.Kind().String()
		if t.Kind() == reflect.Int {
			kind = "int64"
		}
		if t.Kind() == reflect.Uint {
			kind = "uint64"
		}
		if t.String() != t.Kind().String() {
			return kind + "/" + t.String()
		}
		return kind
	case reflect.Pointer:
		return "*" + g.typeExpr(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "[]" + g.typeExpr(t.Elem())
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			fmt.Fprintf(os.Stderr, "map with non-string keys: %s\n", t)
			os.Exit(1)
		}
		return "map[string]" + g.typeExpr(t.Elem())
	case reflect.Interface:
		return "any"
	case reflect.Struct:
		name := structName(t)
		if _, done := g.structs[name]; !done {
			g.structs[name] = Struct{} // placeholder: recursive types
			g.structs[name] = g.structOf(t)
		}
		return "@" + name
	default:
		fmt.Fprintf(os.Stderr, "unsupported kind %s in %s\n", t.Kind(), t)
		os.Exit(1)
	}
	return ""
}

func (g *gen) structOf(t reflect.Type) Struct {
	s := Struct{GoName: t.String(), Fields: []Field{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		field := Field{Name: parts[0]}
		for _, opt := range parts[1:] {
			switch opt {
			case "omitempty":
				field.OmitEmpty = true
			case "omitzero":
				field.OmitZero = true
			case "inline", "":
			default:
				fmt.Fprintf(os.Stderr, "unknown json option %q on %s.%s\n", opt, t, f.Name)
				os.Exit(1)
			}
		}
		if field.Name == "" {
			if f.Anonymous {
				field.Inline = true
			} else {
				field.Name = f.Name
			}
		}
		field.Type = g.typeExpr(f.Type)
		s.Fields = append(s.Fields, field)
	}
	return s
}

// validationKeywords are the JSON Schema keywords kept in the configuration schema.
var validationKeywords = map[string]bool{
	"type": true, "format": true, "properties": true, "additionalProperties": true, "items": true,
	"required": true, "allOf": true, "anyOf": true, "oneOf": true, "$ref": true, "enum": true,
	"pattern": true, "minLength": true, "maxLength": true, "minimum": true, "maximum": true,
}

// stripSchema keeps the validation keywords of a schema, recursively.
func stripSchema(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, val := range m {
		if !validationKeywords[k] {
			continue
		}
		switch k {
		case "properties":
			props := map[string]any{}
			for name, sub := range val.(map[string]any) {
				props[name] = stripSchema(sub)
			}
			out[k] = props
		case "items", "additionalProperties":
			out[k] = stripSchema(val)
		case "allOf", "anyOf", "oneOf":
			var list []any
			for _, sub := range val.([]any) {
				list = append(list, stripSchema(sub))
			}
			out[k] = list
		default:
			out[k] = val
		}
	}
	return out
}

// collectRefs adds every schema name reachable from v to seen.
func collectRefs(v any, all map[string]any, seen map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/components/schemas/")
			if !seen[name] {
				seen[name] = true
				collectRefs(all[name], all, seen)
			}
		}
		for _, sub := range t {
			collectRefs(sub, all, seen)
		}
	case []any:
		for _, sub := range t {
			collectRefs(sub, all, seen)
		}
	}
}

func configSchema(openAPIPath string) {
	data, err := os.ReadFile(openAPIPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var spec struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	all := spec.Components.Schemas
	seen := map[string]bool{}
	for _, root := range []string{"Affinity", "EnvVar", "EnvFromSource", "ResourceRequirements", "Toleration", "Volume", "VolumeMount"} {
		name := "io.k8s.api.core.v1." + root
		if _, ok := all[name]; !ok {
			fmt.Fprintf(os.Stderr, "schema %s not found\n", name)
			os.Exit(1)
		}
		seen[name] = true
		collectRefs(all[name], all, seen)
	}
	schemas := map[string]any{}
	for name := range seen {
		schemas[name] = stripSchema(all[name])
	}
	out := map[string]any{
		"comment": "Generated by operator-controller/core/gen/goshapes from " + filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(openAPIPath))))) + ". Do not edit.",
		"schemas": schemas,
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "config-schema" {
		configSchema(os.Args[2])
		return
	}
	g := &gen{structs: map[string]Struct{}}
	roots := map[string]reflect.Type{
		"ClusterServiceVersion":          reflect.TypeOf(v1alpha1.ClusterServiceVersion{}),
		"SubscriptionConfig":             reflect.TypeOf(v1alpha1.SubscriptionConfig{}),
		"CustomResourceDefinition":       reflect.TypeOf(apiextensionsv1.CustomResourceDefinition{}),
		"Deployment":                     reflect.TypeOf(appsv1.Deployment{}),
		"Service":                        reflect.TypeOf(corev1.Service{}),
		"ServiceAccount":                 reflect.TypeOf(corev1.ServiceAccount{}),
		"Role":                           reflect.TypeOf(rbacv1.Role{}),
		"RoleBinding":                    reflect.TypeOf(rbacv1.RoleBinding{}),
		"ClusterRole":                    reflect.TypeOf(rbacv1.ClusterRole{}),
		"ClusterRoleBinding":             reflect.TypeOf(rbacv1.ClusterRoleBinding{}),
		"ValidatingWebhookConfiguration": reflect.TypeOf(admissionregistrationv1.ValidatingWebhookConfiguration{}),
		"MutatingWebhookConfiguration":   reflect.TypeOf(admissionregistrationv1.MutatingWebhookConfiguration{}),
		"Volume":                         reflect.TypeOf(corev1.Volume{}),
		"VolumeMount":                    reflect.TypeOf(corev1.VolumeMount{}),
	}
	out := Output{
		Comment: "Generated by operator-controller/core/gen/goshapes from the Go modules in its go.mod. Do not edit.",
		Roots:   map[string]string{},
		Structs: g.structs,
	}
	names := make([]string, 0, len(roots))
	for name := range roots {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out.Roots[name] = g.typeExpr(roots[name])
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
