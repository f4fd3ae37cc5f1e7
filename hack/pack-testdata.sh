#!/usr/bin/env bash
# Packs one large test data tree into a deterministic testdata/<NAME>.tar.zst and records its
# sha256 in testdata/SHA256SUMS (the olm-testdata crate refuses an archive whose sum differs).
#
# Usage: hack/pack-testdata.sh NAME DIR
#   NAME  the archive's name under testdata/, without .tar.zst (e.g. conformance/crd-upgrade)
#   DIR   the tree to pack; its contents become the archive's top level
#
# Deterministic: entries sorted by name (C locale), mtime 0, uid/gid 0 with no owner names, modes
# u=rwX,go=rX, GNU format (long names without PAX timestamps), `zstd -19 --long=27` single-threaded, one frame.
# The same tree and the same zstd version give the same bytes. Regular files and directories only:
# symlinks, devices and other entry types are refused (the crate refuses them too).
# A README.md at the top of DIR is also copied to testdata/<NAME>.README.md, so it stays readable
# without unpacking.
#
# To change an archive: get its unpacked tree (`cargo run -q -p olm-testdata -- NAME` prints its
# path in the cache; copy it, it is shared by every checkout), edit the copy, then run this script on
# the copy and commit the archive, SHA256SUMS and the README copy together.
set -euo pipefail
export LC_ALL=C

[[ $# -eq 2 ]] || { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
name="${1%.tar.zst}"
src="$2"
root="$(cd "$(dirname "$0")/.." && pwd)"
[[ -d "${src}" ]] || { echo "not a directory: ${src}" >&2; exit 1; }
case "${name}" in
  /* | *..* | "") echo "NAME must be a relative path under testdata/: ${name}" >&2; exit 1 ;;
esac
command -v zstd > /dev/null || { echo "needs zstd (apt-get install zstd)" >&2; exit 1; }

odd="$(find "${src}" ! -type f ! -type d | head -n 5)"
[[ -z "${odd}" ]] || { echo "only regular files and directories can be packed:"$'\n'"${odd}" >&2; exit 1; }

out="${root}/testdata/${name}.tar.zst"
mkdir -p "$(dirname "${out}")"
tmp="$(mktemp "${out}.XXXXXX")"
trap 'rm -f "${tmp}"' EXIT

# Top-level names sorted; --sort=name orders everything below them.
mapfile -t top < <(cd "${src}" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort)
[[ ${#top[@]} -gt 0 ]] || { echo "empty directory: ${src}" >&2; exit 1; }
tar -C "${src}" --create --format=gnu --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
  --mode='u=rwX,go=rX' --no-acls --no-xattrs --no-selinux -f - -- "${top[@]}" \
  | zstd -q -19 --long=27 -T1 -c > "${tmp}"
chmod 0644 "${tmp}"
mv -f "${tmp}" "${out}"
trap - EXIT

sum="$(sha256sum "${out}" | cut -d' ' -f1)"
sums="${root}/testdata/SHA256SUMS"
touch "${sums}"
{ grep -v "  ${name}\.tar\.zst\$" "${sums}" || true; echo "${sum}  ${name}.tar.zst"; } | sort -k2 > "${sums}.new"
mv -f "${sums}.new" "${sums}"

if [[ -f "${src}/README.md" ]]; then
  install -m 0644 "${src}/README.md" "${root}/testdata/${name}.README.md"
fi
echo "${name}.tar.zst  $(stat -c %s "${out}") bytes  sha256 ${sum}"
