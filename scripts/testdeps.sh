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
# A fresh cloud machine often runs unattended-upgrades at boot, holding the
# dpkg lock, the package lists lock or the archives lock for minutes.
# DPkg::Lock::Timeout makes apt-get wait for the dpkg frontend lock; a run
# that still fails on a lock (the lists or archives lock, an older apt) is
# retried every 5 seconds, for up to lock_wait_s seconds in all.
lock_wait_s=${TESTDEPS_LOCK_WAIT:-600}
apt_get() {
  local log=$1; shift
  local waited=0 last
  while :; do
    if as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$lock_wait_s" "$@" >>"$log" 2>&1; then
      return 0
    fi
    last=$(tail -n 5 "$log")
    if ! grep -Eq 'Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock' <<<"$last"; then
      return 1
    fi
    if (( waited >= lock_wait_s )); then
      log "another apt process held its lock for ${waited}s; giving up"
      return 1
    fi
    (( waited == 0 )) && log "another apt process holds a lock; waiting (up to ${lock_wait_s}s)"
    sleep 5
    waited=$((waited + 5))
  done
}
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing ${missing[*]} from Debian"
  : >"$cache/apt-testdeps.log"
  if ! apt_get "$cache/apt-testdeps.log" install -y -q --no-install-recommends "${missing[@]}"; then
    apt_get "$cache/apt-testdeps.log" update -q || true
    apt_get "$cache/apt-testdeps.log" install -y -q --no-install-recommends "${missing[@]}" \
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
