#!/usr/bin/env bash
# Writes a binary's text-order keys (read by hack/link-ordered.sh) from callgrind profiles of it.
#
# Usage: hack/text-order-keys.sh BINARY_NAME CALLGRIND_OUT... > <crate>/text-order.keys
# Input: `valgrind --tool=callgrind --demangle=no --compress-strings=no` output of the release
# binary doing its work (several files are fine: `--dump-every-bb` splits a long run). Output, on
# stdout: every function of BINARY_NAME's own object that ran, in the order first seen, with
# Rust's per-build hashes removed, then the assembly callgrind cannot run (valgrind has no
# AVX-512, so aws-lc's AVX-512 AES-GCM never shows in a profile). No network.
#
# How the profiles for catalogd were made (issue 27, twenty-third step): the benchmark's P1 with
# OLM_BIN_DIR naming a directory whose `catalogd` runs the release binary under callgrind (with
# MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072 set, so it does
# not execute itself again, runtime/src/allocator.rs), then `catalogd serve --dir` of the derived
# community catalog over TLS answering /all, /all gzip, /metas queries, /metrics and /healthz.
set -euo pipefail
name="${1:?binary name}"
shift
awk -v name="$name" -v quote="'" -f "$(dirname "$0")/lib/text-order-key.awk" -f <(echo '
  /^ob=/ { object = substr($0, 4); next }
  /^fn=/ {
    fn = substr($0, 4); sub(quote "[0-9]+$", "", fn)
    n = split(object, parts, "/")
    if (parts[n] == name && fn !~ /^0x/ && fn !~ /^\(/) {
      fn = text_order_key(fn)
      if (!seen[fn]++) print fn
    }
  }') "$@"
# Run on AVX-512 CPUs, where valgrind cannot follow.
for fn in aes_gcm_encrypt_avx512 aes_gcm_decrypt_avx512 gcm_init_avx512 gcm_gmult_avx512 \
  gcm_ghash_avx512 gcm_setiv_avx512; do
  echo "aws_lc_0_47_0_$fn"
done
