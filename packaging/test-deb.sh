#!/usr/bin/env bash
# `./dev package-test [DEB]`: installs Strobe's package (default: the newest
# dist/strobe_*.deb, and the strobe-dbgsym beside it) in a clean Debian 12
# root and uses it there as a user would (packaging/test/in-root.sh): apt
# install, `strobe setup` and `strobe mcp` as a normal user debugging a small
# C program (launch, trace, query, stop), the web UI, the app's libraries and
# desktop entry, a backtrace with and without the debug symbols, apt remove.
#
# The root is `debootstrap --variant=minbase bookworm` from the mirror apt is
# configured with here (STROBE_DEBIAN_MIRROR overrides it), made once and
# cached as a tarball in ${XDG_CACHE_HOME:-~/.cache}/strobe/package-test/,
# then extracted afresh for every run and deleted after it. The run happens
# in mount and PID namespaces of its own (unshare): its mounts (/proc, /sys,
# /dev, /dev/pts, /dev/shm) are unmounted on the way out and could not
# outlive the namespace anyway, and every process started inside ends with
# it. Needs root, and the network (the Debian mirror, PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/strobe
SUITE=bookworm
# Bump when the way the cached root is made changes: a new tarball is made.
RECIPE=1
TARBALL=$CACHE/package-test/debian-$SUITE-minbase-r$RECIPE.tar.gz

STARTED=$(date +%s)

log() { printf '\033[1m[package-test]\033[0m %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts): run it as root"
for tool in debootstrap unshare chroot gcc desktop-file-validate; do
    command -v "$tool" >/dev/null || die "$tool is missing (./dev package-test installs it)"
done

deb=${1:-$(ls -t dist/strobe_*.deb 2>/dev/null | head -1)}
[ -n "$deb" ] && [ -f "$deb" ] || die "no package: run ./dev package first (or name a .deb)"
deb=$(realpath "$deb")
dbgsym=$(ls "$(dirname "$deb")"/strobe-dbgsym_"$(basename "$deb" | cut -d_ -f2)"_*.deb 2>/dev/null | head -1 || true)

# The URI apt is configured with for SUITE (deb822 .sources, then
# one-line .list), else Debian's.
configured_uri() {
    local suite=$1 uri="" f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri=$(awk -v suite="$suite" '
            function done_stanza() { if (deb && hit && uri != "") { print uri; exit } deb = hit = 0; uri = "" }
            /^[ \t]*$/ { done_stanza(); next }
            tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
            tolower($1) == "uris:" { uri = $2 }
            tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) hit = 1 }
            END { done_stanza() }' "$f" | head -1)
        [ -z "$uri" ] || { echo "$uri"; return; }
    done
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        sed -E 's/\[[^]]*\]//' | awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }')
    echo "${uri:-$2}"
}
MIRROR=${STROBE_DEBIAN_MIRROR:-$(configured_uri "$SUITE" http://deb.debian.org/debian)}
SECURITY=$(configured_uri "$SUITE-security" http://deb.debian.org/debian-security)

# Everything made here is removed on the way out, by path; processes whose
# root is inside one of them (none should be: the PID namespace ends them)
# are killed by PID, and mounts under them (none should be: the mount
# namespace holds them) unmounted before anything is deleted.
CLEAN=()
cleanup() {
    local dir pid m
    for dir in "${CLEAN[@]}"; do
        [ -d "$dir" ] || continue
        for pid in $(ls /proc | grep -E '^[0-9]+$'); do
            case "$(readlink "/proc/$pid/root" 2>/dev/null)" in
                "$dir"/*) log "killing $pid, left running in $dir: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)"
                    kill -9 "$pid" 2>/dev/null || true ;;
            esac
        done
        for m in $(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
            log "unmounting $m"
            umount "$m" 2>/dev/null || umount -l "$m" || true
        done
        if awk -v d="$dir/" 'index($5, d) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
            log "mounts remain under $dir: not deleting it"
        else
            rm -rf --one-file-system "$dir"
        fi
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$CACHE/package-test"
if [ ! -s "$TARBALL" ]; then
    tmp=$(mktemp -d "$CACHE/package-test/debootstrap.XXXXXX")
    CLEAN+=("$tmp")
    log "making a clean Debian 12 root: debootstrap --variant=minbase $SUITE from $MIRROR (once: cached as $TARBALL)"
    start=$(date +%s)
    # In a mount namespace of its own: what debootstrap mounts in the root
    # cannot stay mounted after it, whatever happens.
    unshare --mount --propagation private -- debootstrap --variant=minbase "$SUITE" "$tmp/root" "$MIRROR" \
        >"$tmp/debootstrap.log" 2>&1 || { tail -30 "$tmp/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
    rm -f "$tmp"/root/var/cache/apt/archives/*.deb
    tar --numeric-owner -C "$tmp/root" -czf "$TARBALL.part" . && mv "$TARBALL.part" "$TARBALL"
    log "made the root in $(( $(date +%s) - start )) s: $(du -h "$TARBALL" | cut -f1) tarball"
fi

run=$(mktemp -d "$CACHE/package-test/run.XXXXXX")
CLEAN+=("$run")
r=$run/root
mkdir "$r"
start=$(date +%s)
tar --numeric-owner -C "$r" -xzf "$TARBALL"
log "extracted a fresh root from $(basename "$TARBALL") in $(( $(date +%s) - start )) s: $r"

# apt's sources: the configured mirror, with the updates and security suites.
rm -f "$r/etc/apt/sources.list"
cat >"$r/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
cp -L /etc/resolv.conf "$r/etc/resolv.conf"

# What the run uses: the packages, the C program (built here with gcc -g,
# its DWARF naming where its source will be in the root), the MCP client.
t=$r/tmp/strobe-test
mkdir -p "$t"
cp "$deb" "$t/"
[ -z "$dbgsym" ] || cp "$dbgsym" "$t/"
gcc -g -O0 -fdebug-prefix-map="$ROOT/packaging/test=/home/tester/smoke" \
    -o "$t/smoke" "$ROOT/packaging/test/smoke.c"
cp packaging/test/smoke.c packaging/test/mcp_smoke.py packaging/test/in-root.sh "$t/"
chmod -R a+rX "$t"

# This machine's network: extra CAs it trusts (a TLS proxy in front of PyPI)
# and proxy settings are given to the root, and to its user for pip.
pass_env=""
extra_cas=""
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    mkdir -p "$r/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$r/usr/local/share/ca-certificates/"
    extra_cas=1
    export PIP_CERT=/etc/ssl/certs/ca-certificates.crt
fi
for v in PIP_CERT PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_DEFAULT_TIMEOUT \
    http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [ -z "${!v:-}" ] || pass_env+="$v "
done
inner_env=(STROBE_TEST_EXTRA_CAS="$extra_cas" STROBE_TEST_PASS_ENV="$pass_env")
for v in $pass_env; do inner_env+=("$v=${!v}"); done

# The desktop entry as packaged validates.
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/applications/strobe-app.desktop >"$run/strobe-app.desktop"
desktop-file-validate "$run/strobe-app.desktop" || die "the packaged desktop entry does not validate"
log "desktop-file-validate: the packaged strobe-app.desktop is valid"

log "installing $(basename "$deb") in the root and debugging a C program there (packaging/test/in-root.sh)"
status=0
unshare --mount --propagation private --pid --fork --kill-child -- bash -c '
    set -euo pipefail
    r=$1
    shift
    mounted=()
    unmount_all() {
        local i
        for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
            umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"
        done
    }
    trap unmount_all EXIT
    mnt() { mount "$@"; mounted+=("${!#}"); }
    mnt -t proc proc "$r/proc"
    mnt -t sysfs sysfs "$r/sys"
    mnt --bind /dev "$r/dev"
    mnt --bind /dev/pts "$r/dev/pts"
    mnt -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/dev/shm"
    # A clean environment, as after a login, with only what is named.
    chroot "$r" /usr/bin/env -i TERM=dumb "$@" /bin/bash /tmp/strobe-test/in-root.sh
' bash "$r" "${inner_env[@]}" || status=$?
log "package test: $([ "$status" = 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - STARTED )) s"
exit "$status"
