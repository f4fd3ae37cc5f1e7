#!/usr/bin/env bash
# Runs a command in a fresh network namespace whose only interface is loopback, so nothing it
# starts can reach another host: a connection to any non-loopback address fails at once.
#
# Needs `unshare --net` (root, or unprivileged user namespaces) and `ip` (iproute2). When they are
# not available the command runs unisolated, with a notice. OLM_NETNS=off skips the namespace;
# OLM_NETNS=require fails instead of falling back.
set -euo pipefail
(( $# )) || { echo "usage: netns-run.sh COMMAND [ARG...]" >&2; exit 2; }

mode="${OLM_NETNS:-auto}"
log() { echo "netns-run: $*" >&2; }

if [[ "${mode}" == off ]]; then
  exec "$@"
fi

unshare_cmd=()
if command -v ip >/dev/null && unshare --net true 2>/dev/null; then
  unshare_cmd=(unshare --net)
elif command -v ip >/dev/null && unshare --net --map-root-user true 2>/dev/null; then
  unshare_cmd=(unshare --net --map-root-user)
fi

if (( ${#unshare_cmd[@]} == 0 )); then
  if [[ "${mode}" == require ]]; then
    log "cannot create a network namespace (need root or user namespaces, and iproute2)"
    exit 1
  fi
  log "network namespaces are unavailable here; running without network isolation"
  exec "$@"
fi

log "running in a network namespace with only loopback"
exec "${unshare_cmd[@]}" -- bash -c 'ip link set lo up && exec "$@"' netns-run "$@"
