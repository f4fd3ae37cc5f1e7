#!/usr/bin/env bash
# Keeps the build cache under $OLM_CACHE_DIR from filling the disk. Input: the cache directory and
# OLM_MIN_FREE_GB (default 20). Output: deleted files, one summary line. No network.
#
# Run it between builds, not during one: an output cargo considers fresh keeps its old mtime, so
# a test binary another build configuration superseded may be the one a running `cargo test` is
# about to execute (cargo rebuilds a missing output on its next run).
#
# Everything under the cache is rebuildable, so this only ever costs build time:
#   1. executables in target*/debug/{deps,examples} superseded by a newer build of the same name
#      (cargo leaves one per hash; a test binary is hundreds of MiB);
#   2. incremental state not touched for 30 minutes;
#   3. if free space is still under the floor, whole target directories, other profiles first.
set -euo pipefail
cache="${OLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/olm-rs}"
floor_gb="${OLM_MIN_FREE_GB:-20}"
[[ -d "$cache" ]] || exit 0
shopt -s nullglob

free_gb() { df -Pk "$cache" | awk 'NR==2 { print int($4 / 1048576) }'; }
before=$(free_gb)

for dir in "$cache"/target*/debug/deps "$cache"/target*/debug/examples; do
  # name-hash files: keep the newest per name, delete the rest if older than 10 minutes (a build
  # running right now may still be writing them).
  find "$dir" -maxdepth 1 -type f -perm -u+x ! -name '*.so' ! -name '*.rlib' ! -name '*.rmeta' ! -name '*.d' -printf '%T@ %p\n' |
    awk '{ n = $2; sub(/.*\//, "", n); if (!match(n, /-[0-9a-f]+$/) || RLENGTH != 17) next; n = substr(n, 1, RSTART - 1); print n, $1, $2 }' |
    sort -k1,1 -k2,2nr | awk 'prev == $1 { print $3 } { prev = $1 }' |
    while read -r f; do find "$f" -mmin +10 -delete 2>/dev/null || true; done
done
for inc in "$cache"/target*/*/incremental; do
  find "$inc" -mindepth 1 -maxdepth 1 -type d -mmin +30 -exec rm -rf {} + 2>/dev/null || true
done

if (( $(free_gb) < floor_gb )); then
  # Worktree and fuzz target dirs and release builds go before the dev build `make test` reuses.
  for victim in "$cache"/target-* "$cache"/target/release "$cache"/target/bench "$cache"/target; do
    (( $(free_gb) < floor_gb )) || break
    [[ -e "$victim" ]] || continue
    echo "prune-cache: under ${floor_gb} GiB free, removing ${victim}"
    rm -rf "$victim"
  done
fi
echo "prune-cache: ${before} GiB free before, $(free_gb) GiB after (floor ${floor_gb} GiB)"
