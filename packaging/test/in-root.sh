#!/bin/bash
# Runs inside the clean Debian 12 root (as root, chrooted, in a PID namespace
# of its own), from packaging/test-deb.sh, with /tmp/strobe-test holding the
# package, smoke (the C program, gcc -g), smoke.c and mcp_smoke.py. Does what
# a user would: apt install the package, `strobe setup` and `strobe mcp` as a
# normal user, then removes the package.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 HOME=/root
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp/strobe-test

T0=$(date +%s)
step() { printf '\n== [%4ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
fail() { printf 'FAILED: %s\n' "$*"; exit 1; }

step "apt-get update"
apt-get update -qq

if [ -n "${STROBE_TEST_EXTRA_CAS:-}" ]; then
    # The host reaches PyPI through a TLS proxy whose CA it trusts: the root
    # gets the same trust (this machine's network, not the package's need).
    step "the host's extra CA certificates (its network goes through a TLS proxy)"
    apt-get install -y -qq ca-certificates >/dev/null
    update-ca-certificates >/dev/null
fi

deb=$(ls strobe_*.deb)
step "apt install ./$deb"
apt install -y "./$deb" >apt.log 2>&1 || { tail -40 apt.log; fail "apt install ./$deb"; }
grep -E '^(The following NEW packages|[0-9]+ upgraded|Need to get|After this operation)' apt.log || true
dpkg -s strobe | grep -E '^(Package|Version|Installed-Size|Depends|Recommends|Suggests):'
for p in strobe strobe-vision strobe-app; do
    printf '%-14s %s (%s bytes)\n' "$p" "$(command -v "$p")" "$(stat -c %s "$(command -v "$p")")"
done
strobe --version

step "the programs' libraries resolve (ldd)"
for b in /usr/bin/strobe /usr/bin/strobe-vision /usr/bin/strobe-app; do
    missing=$(ldd "$b" | grep 'not found' || true)
    [ -z "$missing" ] || fail "$b: $missing"
    echo "$b: $(ldd "$b" | wc -l) libraries, none missing"
done

step "the desktop entry, its icon, the web UI"
for f in /usr/share/applications/strobe-app.desktop /usr/share/icons/hicolor/256x256/apps/strobe.png \
    /usr/share/strobe/ui/index.html /usr/share/doc/strobe/copyright; do
    [ -s "$f" ] || fail "$f is missing"
    echo "$f"
done
icon=$(sed -n 's/^Icon=//p' /usr/share/applications/strobe-app.desktop)
exec_=$(sed -n 's/^Exec=//p' /usr/share/applications/strobe-app.desktop)
[ -e "/usr/share/icons/hicolor/256x256/apps/$icon.png" ] || fail "Icon=$icon is not in hicolor"
command -v "${exec_%% *}" >/dev/null || fail "Exec=$exec_ is not on PATH"
echo "Exec=$exec_ and Icon=$icon resolve"

step "a normal user: tester"
useradd --create-home --shell /bin/bash tester
# runuser with a clean environment, as after a login: only what the host's
# network needs is passed on (proxies, pip's CA bundle), named in the log.
as_user() {
    local env=(HOME=/home/tester USER=tester LOGNAME=tester SHELL=/bin/bash LC_ALL=C.UTF-8
        PATH=/usr/local/bin:/usr/bin:/bin)
    local v
    for v in ${STROBE_TEST_PASS_ENV:-}; do env+=("$v=${!v}"); done
    runuser -u tester -- env -i "${env[@]}" "$@"
}
[ -z "${STROBE_TEST_PASS_ENV:-}" ] || echo "passed on to the user: $STROBE_TEST_PASS_ENV"

install -d -o tester -g tester /home/tester/smoke
install -o tester -g tester -m 0755 smoke /home/tester/smoke/smoke
install -o tester -g tester -m 0644 smoke.c /home/tester/smoke/smoke.c

step "strobe mcp before strobe setup (as tester): says to run it"
as_user python3 /tmp/strobe-test/mcp_smoke.py --before-setup /home/tester/smoke/smoke
# Its daemon stays up (until its idle timeout): the launch after setup goes
# to it, as an agent's retry would.

step "strobe setup (as tester; the Python venv from PyPI)"
as_user strobe setup
as_user /home/tester/.strobe/venv/bin/python -c 'import frida; print("frida", frida.__version__)'

step "strobe mcp (as tester): launch, trace, query, stop a C program"
as_user python3 /tmp/strobe-test/mcp_smoke.py /home/tester/smoke/smoke smoke_add

step "strobe ui (as tester) serves the packaged web UI"
url=$(as_user strobe ui 2>/dev/null)
echo "${url%%\?*}?token=…"
as_user python3 - "$url" <<'EOF'
import sys, urllib.request
body = urllib.request.urlopen(sys.argv[1], timeout=10).read()
packaged = open("/usr/share/strobe/ui/index.html", "rb").read()
assert body == packaged, f"served {len(body)} bytes, not /usr/share/strobe/ui/index.html"
print(f"GET / -> /usr/share/strobe/ui/index.html ({len(body)} bytes)")
EOF

step "the app without a display runs the headless daemon (as tester, 3 s)"
# Another daemon for the same home would be refused: a home of its own.
status=0
as_user env STROBE_HOME=/home/tester/.strobe-app timeout 3 strobe-app >app.log 2>&1 || status=$?
[ "$status" = 124 ] || { cat app.log; fail "strobe-app exited $status before 3 s"; }
head -3 app.log

step "a crash's backtrace: RUST_BACKTRACE=1 strobe completions bash >/dev/full"
# /dev/full makes the write fail, which clap_complete turns into a panic.
RUST_BACKTRACE=1 strobe completions bash >/dev/full 2>panic-stripped.log && fail "no panic"
# The stripped program alone has no symbols: the panic's message and place,
# and no frame (RUST_BACKTRACE=1 shows frames by name only).
echo "without strobe-dbgsym ($(grep -c '^ *[0-9]*: ' panic-stripped.log || true) frames):"
sed 's/^/  /' panic-stripped.log
dbgsym=$(ls strobe-dbgsym_*.deb 2>/dev/null || true)
if [ -n "$dbgsym" ]; then
    apt install -y "./$dbgsym" >>apt.log 2>&1 || { tail -20 apt.log; fail "apt install ./$dbgsym"; }
    RUST_BACKTRACE=1 strobe completions bash >/dev/full 2>panic-dbgsym.log && fail "no panic"
    # Named frames down to strobe's main, with its source line.
    grep -Eq '^ *[0-9]+: (strobe::)?main$' panic-dbgsym.log || { cat panic-dbgsym.log; fail "no frame of strobe's main in the backtrace with strobe-dbgsym"; }
    grep -q 'crates/strobe-cli/src/main.rs:[0-9]' panic-dbgsym.log || { cat panic-dbgsym.log; fail "no source line in the backtrace with strobe-dbgsym"; }
    echo "with strobe-dbgsym ($(grep -c '^ *[0-9]*: ' panic-dbgsym.log) frames):"
    sed 's/^/  /' panic-dbgsym.log
fi

step "apt remove strobe"
apt-get remove -y -qq strobe >/dev/null 2>&1 || fail "apt-get remove strobe"
for f in /usr/bin/strobe /usr/bin/strobe-app /usr/share/strobe /usr/share/applications/strobe-app.desktop; do
    [ ! -e "$f" ] || fail "$f is still there after removal"
done
echo "removed: its files are gone"

step "done"
