#!/usr/bin/env bash
# testdeps.sh installs what the test suite needs besides PostgreSQL: Debian's
# offline speech synthesis (festival with its US English voices — the HTS
# voice festvox-us-slt-hts and the diphone voices kal and ked — flite, and
# espeak-ng, the last fallback), sox, and pocketsphinx
# (the offline speech-to-text engine), plus the pinned Node.js test peers in
# scripts/node-peers (installed into .cache/node-peers) and Debian's chromium
# (the DM console's browser tests drive it with playwright-core). With
# --voice-only it installs the voice programs alone (what `make demo` needs).
set -euo pipefail
log() { printf 'testdeps: %s\n' "$*" >&2; }
die() { printf 'testdeps: error: %s\n' "$*" >&2; exit 1; }

repo=$(cd "$(dirname "$0")/.." && pwd)
cache="$repo/.cache"
mkdir -p "$cache"

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
  else die "need root to run: $*; install these packages by hand"; fi
}

pkgs=(espeak-ng festival festvox-us-slt-hts festvox-kallpc16k festvox-kdlpc16k flite sox pocketsphinx pocketsphinx-en-us)
if [[ ${1:-} != --voice-only ]]; then pkgs+=(chromium); fi
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
# A fresh cloud machine often runs unattended-upgrades at boot: apt-get waits
# up to ten minutes for the dpkg and apt lists locks instead of failing at once.
lock_wait=(-o DPkg::Lock::Timeout=600)
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing ${missing[*]} from Debian (waiting up to 10 min for the dpkg lock if another apt process holds it)"
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get "${lock_wait[@]}" install -y -q --no-install-recommends "${missing[@]}" >"$cache/apt-testdeps.log" 2>&1; then
    as_root apt-get "${lock_wait[@]}" update -q >>"$cache/apt-testdeps.log" 2>&1 || true
    as_root env DEBIAN_FRONTEND=noninteractive apt-get "${lock_wait[@]}" install -y -q --no-install-recommends "${missing[@]}" >>"$cache/apt-testdeps.log" 2>&1 \
      || die "apt-get install ${missing[*]} failed; see $cache/apt-testdeps.log"
  fi
fi

peers="$repo/scripts/node-peers"
if [[ ${1:-} != --voice-only && -f $peers/package-lock.json ]]; then
  command -v npm >/dev/null || die "npm is needed for the Node.js test peers (Node 20)"
  # discord.js's voice client and @noble/ciphers need Node 20.19 or newer.
  node_version=$(node -p 'process.versions.node' 2>/dev/null || echo 0)
  IFS=. read -r node_major node_minor _ <<<"$node_version"
  if (( node_major < 20 || (node_major == 20 && node_minor < 19) )); then
    die "the Node.js test peers need Node 20.19 or newer (found ${node_version})"
  fi
  dest="$cache/node-peers"
  if ! cmp -s "$peers/package-lock.json" "$dest/package-lock.json" 2>/dev/null || [[ ! -d $dest/node_modules ]]; then
    log "installing Node.js test peers into $dest"
    mkdir -p "$dest"
    cp "$peers/package.json" "$peers/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >"$cache/npm.log" 2>&1) || die "npm ci failed; see $cache/npm.log"
  fi
fi
