#!/usr/bin/env bash
# Stages and builds Strobe's Debian packages from release builds already made
# (`./dev package` builds them, then runs this):
#
#   packaging/build-deb.sh RELEASE_DIR APP_RELEASE_DIR
#
# RELEASE_DIR holds strobe and strobe-vision, APP_RELEASE_DIR strobe-app; the
# web UI comes from ui/dist. Writes, in dist/:
#   strobe_<version>_<arch>.deb         the programs (stripped), the web UI, the
#                                       desktop entry and icon, shell completions
#   strobe-dbgsym_<version>_<arch>.deb  their debug info, one file per program
#                                       under /usr/lib/debug/.build-id/, where
#                                       gdb, Rust's backtraces and Strobe's own
#                                       symbolizer look for it
# The version is the workspace's (Cargo.toml), with +git<commit time>.<hash>
# unless HEAD is tagged v<version>; STROBE_PACKAGE_VERSION overrides it, and
# STROBE_PACKAGE_MAINTAINER the Maintainer field.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
umask 022
release=${1:?usage: packaging/build-deb.sh RELEASE_DIR APP_RELEASE_DIR}
app_release=${2:?usage: packaging/build-deb.sh RELEASE_DIR APP_RELEASE_DIR}

log() { printf '\033[1m[package]\033[0m %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for f in "$release/strobe" "$release/strobe-vision" "$app_release/strobe-app" ui/dist/index.html; do
    [ -f "$f" ] || die "$f is missing: ./dev package builds it"
done

upstream=$(sed -n '/^\[workspace\.package\]/,/^\[/ s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
[ -n "$upstream" ] || die "no version in Cargo.toml's [workspace.package]"
if [ -n "${STROBE_PACKAGE_VERSION:-}" ]; then
    version=$STROBE_PACKAGE_VERSION
elif [ "$(git describe --exact-match --tags HEAD 2>/dev/null)" = "v$upstream" ]; then
    version=$upstream
else
    version=$upstream+git$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S).$(git rev-parse --short=10 HEAD)
fi
arch=$(dpkg --print-architecture)
# No one answers mail for the project yet: a placeholder, overridable.
maintainer=${STROBE_PACKAGE_MAINTAINER:-The Strobe developers <strobe@localhost>}

dist=$ROOT/dist
work=$(mktemp -d "${TMPDIR:-/tmp}/strobe-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
pkg=$work/strobe
dbg=$work/strobe-dbgsym
mkdir -p "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/share/strobe" "$pkg/usr/share/doc/strobe" \
    "$pkg/usr/share/applications" "$pkg/usr/share/icons/hicolor/256x256/apps" \
    "$pkg/usr/share/bash-completion/completions" "$pkg/usr/share/zsh/vendor-completions" \
    "$pkg/usr/share/fish/vendor_completions.d" \
    "$dbg/DEBIAN" "$dbg/usr/share/doc"

# Each program stripped of its symbols and debug info, which go to
# /usr/lib/debug/.build-id/xx/yyyy.debug in the -dbgsym package (zlib-
# compressed: gdb and Rust's own backtrace symbolizer both read that), with a
# .gnu_debuglink naming that file. A program without a build id could not be
# matched with its debug file: refused.
build_ids=()
split_debug() {
    local from=$1 to=$2 id debug
    id=$(readelf -n "$from" | awk '/Build ID:/ { print $3; exit }')
    [ -n "$id" ] || die "$from has no GNU build id (the linker was not passed --build-id)"
    debug=$dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
    mkdir -p "$(dirname "$debug")"
    objcopy --only-keep-debug --compress-debug-sections=zlib "$from" "$debug"
    chmod 0644 "$debug"
    objcopy --strip-all --remove-section=.comment "$from" "$to"
    objcopy --add-gnu-debuglink="$debug" "$to"
    chmod 0755 "$to"
    build_ids+=("$id")
    log "$(basename "$to"): $(stat -c %s "$from") bytes built, $(stat -c %s "$to") stripped, $(stat -c %s "$debug") in its debug file (build id $id)"
}
split_debug "$release/strobe" "$pkg/usr/bin/strobe"
split_debug "$release/strobe-vision" "$pkg/usr/bin/strobe-vision"
split_debug "$app_release/strobe-app" "$pkg/usr/bin/strobe-app"

# The web UI, where the daemon looks beside its executable (../share/strobe/ui).
cp -r ui/dist "$pkg/usr/share/strobe/ui"

# The desktop menu's entry and its icon.
desktop-file-validate packaging/strobe-app.desktop || die "packaging/strobe-app.desktop does not validate"
install -m 0644 packaging/strobe-app.desktop "$pkg/usr/share/applications/strobe-app.desktop"
install -m 0644 src-tauri/icons/icon.png "$pkg/usr/share/icons/hicolor/256x256/apps/strobe.png"

# Shell completions, from the program itself.
"$pkg/usr/bin/strobe" completions bash >"$pkg/usr/share/bash-completion/completions/strobe"
"$pkg/usr/bin/strobe" completions zsh >"$pkg/usr/share/zsh/vendor-completions/_strobe"
"$pkg/usr/bin/strobe" completions fish >"$pkg/usr/share/fish/vendor_completions.d/strobe.fish"

# Documentation: the license, the crates linked in, and where the web UI is.
install -m 0644 packaging/copyright "$pkg/usr/share/doc/strobe/copyright"
python3 packaging/third_party.py Cargo.toml:strobe,strobe-vision src-tauri/Cargo.toml:strobe-app \
    >"$pkg/usr/share/doc/strobe/THIRD-PARTY"
gzip -9n <README.md >"$pkg/usr/share/doc/strobe/README.md.gz"
# A native package's changelog: one entry, the commit it was built from.
printf 'strobe (%s) unstable; urgency=medium\n\n  * Built by ./dev package from commit %s.\n\n -- %s  %s\n' \
    "$version" "$(git rev-parse HEAD)" "$maintainer" "$(LC_ALL=C date -R -d "@$(git log -1 --format=%ct)")" |
    gzip -9n >"$pkg/usr/share/doc/strobe/changelog.gz"
ln -s strobe "$dbg/usr/share/doc/strobe-dbgsym"

# Depends: the shared libraries the three programs link (dpkg-shlibdeps reads
# them and the packages that ship them), and Python 3 with venv for
# `strobe setup` (the frida, py-spy and vision venv). Recommends: what
# debug_ui's virtual displays start (Xvfb, a D-Bus session bus, the AT-SPI
# bus) and the tray's library (dlopen'ed; without it the app has no tray).
# Suggests: JACK, loaded at run time only for the midi and audio channels.
mkdir -p "$work/shlibs/debian"
printf 'Source: strobe\n\nPackage: strobe\nArchitecture: any\n' >"$work/shlibs/debian/control"
shlibs=$(cd "$work/shlibs" && dpkg-shlibdeps -O -e"$pkg/usr/bin/strobe" -e"$pkg/usr/bin/strobe-vision" \
    -e"$pkg/usr/bin/strobe-app" 2>"$work/shlibdeps.err") || { cat "$work/shlibdeps.err" >&2; die "dpkg-shlibdeps failed"; }
shlibs=${shlibs#shlibs:Depends=}
[ -n "$shlibs" ] || die "dpkg-shlibdeps found no libraries"
depends="$shlibs, python3, python3-venv"

installed_kb=$(du -sk --apparent-size "$pkg/usr" | cut -f1)
cat >"$pkg/DEBIAN/control" <<EOF
Package: strobe
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_kb
Depends: $depends
Recommends: xvfb, dbus-daemon, at-spi2-core, libayatana-appindicator3-1
Suggests: jackd2, libjack-jackd2-0 | libjack0, strobe-dbgsym
Section: devel
Priority: optional
Description: debugger for coding agents
 Strobe is a debugger built for coding agents and the developers beside
 them. An agent starts "strobe mcp"; through MCP tools it launches a program
 under Frida, traces its function calls, reads its output and queries one
 timeline of everything the program did, without restarting it.
 .
 This package holds the "strobe" command (MCP endpoint, daemon, CLI), the
 "strobe-vision" sidecar of debug_ui, the desktop app "strobe-app" (in the
 desktop's menu as Strobe), and the web UI. Run "strobe setup" once as your
 own user: it creates the Python venv (~/.strobe/venv) with the pinned frida,
 py-spy and vision packages from PyPI.
EOF
(cd "$pkg" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)

dbg_kb=$(du -sk --apparent-size "$dbg/usr" | cut -f1)
cat >"$dbg/DEBIAN/control" <<EOF
Package: strobe-dbgsym
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $dbg_kb
Depends: strobe (= $version)
Section: debug
Priority: optional
Description: debug symbols for strobe
 The symbols and line tables of strobe, strobe-vision and strobe-app, found
 by build id: with it installed, gdb and RUST_BACKTRACE=1 show function
 names and source lines in Strobe's own backtraces and core dumps.
Build-Ids: ${build_ids[*]}
EOF
(cd "$dbg" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)

mkdir -p "$dist"
rm -f "$dist"/strobe_*.deb "$dist"/strobe-dbgsym_*.deb
dpkg-deb --root-owner-group --build "$pkg" "$dist/strobe_${version}_${arch}.deb" >/dev/null
dpkg-deb --root-owner-group --build "$dbg" "$dist/strobe-dbgsym_${version}_${arch}.deb" >/dev/null
log "built $dist/strobe_${version}_${arch}.deb ($(stat -c %s "$dist/strobe_${version}_${arch}.deb") bytes, ${installed_kb} KiB installed)"
log "built $dist/strobe-dbgsym_${version}_${arch}.deb ($(stat -c %s "$dist/strobe-dbgsym_${version}_${arch}.deb") bytes)"
log "Depends: $depends"
log "install it with: sudo apt install $dist/strobe_${version}_${arch}.deb  (then, as yourself: strobe setup)"
