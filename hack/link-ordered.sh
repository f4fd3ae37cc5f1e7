#!/usr/bin/env bash
# The linker cargo runs for x86_64-unknown-linux-gnu (.cargo/config.toml): `cc` with the same
# arguments, except where a binary asks for its code to be ordered.
#
# Input: cc's arguments. A release build of catalogd or operator-controller adds
# `-Wl,--symbol-ordering-file=<crate>/text-order.keys` (hack/release-link.rs): the functions that
# run, named without Rust's per-build hashes. Output: the linked binary, with those functions
# first in its text. Network: none. Needs `nm` (binutils).
#
# Why: the kernel maps an executable's code in windows of at least 64 KiB, so when the few
# functions that run are spread over all of it, most of it is resident (issue 27, twenty-third
# step). The symbol names the linker matches carry hashes that change with the toolchain,
# features and dependency versions, so the keys are matched here, against this very link: link
# once, list the binary's functions, write their exact names in the keys' order, link again.
# A key that matches nothing is skipped; a build without this wrapper links the keys file as an
# ordering file in which only names without a hash (C functions) match, and the linker is told
# not to warn about the rest.
set -euo pipefail
cc="${OLM_LINK_CC:-cc}"

keys="" output="" previous=""
args=()
for arg in "$@"; do
  case "$arg" in
    -Wl,--symbol-ordering-file=*.keys) keys="${arg#-Wl,--symbol-ordering-file=}" ;;
    *) args+=("$arg") ;;
  esac
  [[ "$previous" == "-o" ]] && output="$arg"
  previous="$arg"
done
if [[ -z "$keys" || -z "$output" ]]; then
  exec "$cc" "$@"
fi

key_awk="$(dirname "$0")/lib/text-order-key.awk"
order="$output.text-order"
trap 'rm -f "$order"' EXIT
"$cc" "${args[@]}"
nm --defined-only "$output" | awk '$2 ~ /^[tTwW]$/ { print $3 }' |
  awk -f "$key_awk" -f <(echo 'NR == FNR { key = text_order_key($0); symbols[key] = symbols[key] $0 "\n"; next }
    ($0 in symbols) && !seen[$0]++ { printf "%s", symbols[$0] }') - "$keys" >"$order"
"$cc" "${args[@]}" "-Wl,--symbol-ordering-file=$order"
