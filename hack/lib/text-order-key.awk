# A function's text-order key: its mangled name without the parts that change from build to build
# (toolchain, features, dependency versions). Legacy mangling ends in `17h<16 hex digits>E`; v0
# names each crate `Cs<disambiguator>_`. Shared by hack/text-order-keys.sh (writes keys) and
# hack/link-ordered.sh (matches them), so both derive a key the same way.
function text_order_key(name) {
  sub(/17h[0-9a-f]+E$/, "E", name)
  gsub(/Cs[0-9A-Za-z]+_/, "Cs_", name)
  return name
}
