#!/usr/bin/env bash
# Runs the benchmarks issue 18's before/after rows name (query latency, symbol
# index cold/warm, launch → first line, tracing per call and sustained) for
# this tree and for <rev>, side by side in one run:
#   ./dev bench-compare <rev>     (or scripts/bench-compare.sh <rev>)
#   STROBE_BENCH_ROUNDS=5 ./dev bench-compare <rev>
# <rev> is checked out in a git worktree under the cache for the run. Each tree
# builds into its own target dir, kept for the next run: this tree's in
# $CACHE/target-bench, <rev>'s in $CACHE/target-bench-<rev> (remove it by hand).
# Each benchmark runs baseline, current, baseline, current … (5 rounds by
# default) so the shared machine's load hits both alike. One table per
# benchmark: every round's figure, the medians and their ratio current/baseline.
# The figures are parsed from the benchmarks' own output, which both trees print.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/strobe
REV=$(git rev-parse --short "${1:?usage: scripts/bench-compare.sh <rev>}^{commit}")
ROUNDS=${STROBE_BENCH_ROUNDS:-5}
export STROBE_VENV=${STROBE_VENV:-$CACHE/venv-frida-$(tr -d '[:space:]' < crates/strobe-frida/FRIDA_VERSION)}

log() { printf '\033[1m[bench-compare]\033[0m %s\n' "$*" >&2; }

out=$(mktemp -d /tmp/strobe-bench-compare.XXXXXX)
base_target=$CACHE/target-bench-$REV
base_tree=$base_target/tree
pid= # the running benchmark's
cleanup() {
    [ -z "$pid" ] || stop_run
    git worktree remove --force "$base_tree" 2>/dev/null || true
    rm -rf "$out/tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$base_target"
git worktree remove --force "$base_tree" 2>/dev/null || true
git worktree add --detach --quiet "$base_tree" "$REV"
# A fresh checkout's files and directories are newer than the last run's
# build: date them at the commit so cargo sees the kept target dir as up to date.
(cd "$base_tree" && t=@$(git log -1 --format=%ct) &&
    git ls-files -z | xargs -0 touch -h -d "$t" && find . -type d -exec touch -d "$t" {} +)

# Builds the three benchmarks of tree $1 into target dir $2; writes
# "name executable" lines to $3.
build() {
    log "building the benchmarks of $1 into $2"
    (cd "$1" && CARGO_TARGET_DIR=$2 cargo bench --no-run --message-format=json \
        -p strobe -p strobe-store -p strobe-symbols --bench e2e --bench query --bench index) |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and "bench" in m["target"]["kind"] and m.get("executable"):
        print(m["target"]["name"], m["executable"])' > "$3"
}
build "$base_tree" "$base_target" "$out/baseline.exes"
build "$ROOT" "$CACHE/target-bench" "$out/current.exes"
# The venv with the pinned frida (made by `strobe setup`) and frida-trace, the
# tracing benchmark's baseline. (Never `cargo build --release` into a bench
# target dir: it replaces the `strobe` the e2e bench runs with another build.)
if [ ! -x "$STROBE_VENV/bin/frida-trace" ]; then
    log "setting up $STROBE_VENV"
    "$CACHE/target-bench/release/strobe" setup > /dev/null
    "$STROBE_VENV/bin/pip" install --quiet --disable-pip-version-check "frida-tools==14.11.0"
fi
# Both indexers read the same file: this tree's debug strobe, as in BENCHMARKS.md.
log "building this tree's debug strobe (the symbol index's input)"
CARGO_INCREMENTAL=0 CARGO_TARGET_DIR=$CACHE/target-bench cargo build --quiet -p strobe
index_input=$CACHE/target-bench/debug/strobe

exe() { awk -v n="$2" '$1 == n { print $2 }' "$out/$1.exes"; }

# Runs "$@" with stdout to $1 until a line matches the regex $2 (the figures we
# need are printed), then stops it.
run_until() {
    local file=$1 stop=$2
    shift 2
    rm -rf "$out/tmp"
    mkdir -p "$out/tmp"
    : > "$file"
    TMPDIR=$out/tmp setsid "$@" > "$file" 2> "$file.err" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null && ! grep -qE "$stop" "$file"; do sleep 0.5; done
    stop_run
}
# Stops the running benchmark: its process group (with its `strobe mcp`
# proxies and targets), then the daemons it started (one per STROBE_HOME in its
# TMPDIR, in sessions of their own), which would otherwise idle for 30 min.
ours() { { tr '\0' '\n' < "/proc/$1/environ"; } 2>/dev/null | grep -qxF "STROBE_HOME=$2"; } # pid home
stop_run() {
    local home p
    [ -n "$pid" ] || return 0
    kill -- -"$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
    for home in "$out"/tmp/strobe-home-*; do
        p=$(cat "$home/strobe.pid" 2>/dev/null) || continue
        ours "$p" "$home" && kill "$p"
        for _ in $(seq 50); do ours "$p" "$home" || break; sleep 0.2; done
        ! ours "$p" "$home" || kill -KILL "$p"
    done
    return 0
}

# The figures, as "metric<TAB>value" lines, from a benchmark's output. Every
# metric is a time: lower is better. "control:" rows measure no Strobe code
# (what the machine's noise alone does to a ratio).
parse() {
    case $1 in
        query) awk '/^session of/ { size = ($3 == 1000000) ? "1 M" : ($3 == 10000000) ? "10 M" : $3 " events" }
            / p50 .* p95 / { name = $0; sub(/ +p50 .*/, "", name); sub(/^ +/, "", name)
                for (i = 1; i < NF; i++) { if ($i == "p50") p50 = $(i + 1); if ($i == "p95") p95 = $(i + 1) }
                printf "%s: %s, p50 ms\t%s\n%s: %s, p95 ms\t%s\n", size, name, p50, size, name, p95 }' ;;
        *) awk 'function num(s) { sub(/^[^:]*:[^0-9]*/, "", s); return s + 0 }
            /^  cold \(parse/ { print "cold parse, ms\t" num($0) }
            /^  warm \(on-disk/ { print "warm load, ms\t" num($0) }
            /^  strobe \(debug_launch/ { print "launch → first stdout line queryable, ms\t" num($0) }
            /^  baseline \(spawn/ { print "control: spawn → first line from a pipe, ms\t" num($0) }
            /^  uninstrumented: / && !u++ { print "control: uninstrumented call, ns\t" num($0) }
            /^  strobe, in the target/ { print "per call, in the target, ns\t" num($0) }
            /^  strobe, sustained/ { print "per call, sustained, ns\t" num($0) }
            /^  strobe typed, in the target/ { print "typed per call, in the target, ns\t" num($0) }
            /^  strobe typed, sustained/ { print "typed per call, sustained, ns\t" num($0) }
            /^  strobe, launch-to-exit/ { print "per call, launch-to-exit wall, ns\t" num($0) }
            /^  frida-trace: +[0-9]/ { print "control: frida-trace per call, launch-to-exit wall, ns\t" num($0) }' ;;
    esac
}

# One markdown table from the parsed files of bench $1: per metric, each side's
# median and rounds, the ratio of the medians and each round's ratio.
table() {
    awk -F'\t' -v rev="$REV" -v rounds="$ROUNDS" '
        function median(s,   v, n, i, j, t) {
            n = split(s, v, " ")
            for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
            return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }
        function join(a, m, sep,   r, s) { s = ""; for (r = 1; r <= rounds; r++) if ((m, r) in a) s = s (s == "" ? "" : sep) a[m, r]; return s }
        FNR == 1 { n = split(FILENAME, f, "."); side = f[n - 2]; round = f[n - 1] + 0 }
        !(($1) in seen) { seen[$1] = 1; order[++count] = $1 }
        { if (side == "baseline") b[$1, round] = $2; else c[$1, round] = $2 }
        END {
            printf "| metric | baseline %s: median (rounds) | current: median (rounds) | current/baseline: of the medians (each round) |\n| --- | --- | --- | --- |\n", rev
            for (i = 1; i <= count; i++) {
                m = order[i]; mb = median(join(b, m, " ")); mc = median(join(c, m, " "))
                split("", q); for (r = 1; r <= rounds; r++) if ((m, r) in b && (m, r) in c && b[m, r] > 0) q[m, r] = sprintf("%.2f", c[m, r] / b[m, r])
                printf "| %s | %.4g (%s) | %.4g (%s) | %s (%s) |\n", m, mb, join(b, m, ", "), mc, join(c, m, ", "),
                    (mb > 0 ? sprintf("%.2f×", mc / mb) : "—"), join(q, m, " ")
            }
        }' "$out/$1".baseline.*.tsv "$out/$1".current.*.tsv
}

start=$SECONDS
for bench in query index e2e; do
    case $bench in
        query) stop='^  textContains \(1 match\)' args=() ;; # the 1 M session's last row
        index) stop='^  ratio' args=("$index_input") ;;
        e2e) stop='^  frida-trace:' args=() ;; # launch and tracing done; hooks, memory … follow
    esac
    for round in $(seq "$ROUNDS"); do
        for side in baseline current; do
            log "$bench, round $round/$ROUNDS: $side"
            f=$out/$bench.$side.$(printf %02d "$round")
            run_until "$f.txt" "$stop" "$(exe "$side" "$bench")" "${args[@]}"
            parse "$bench" < "$f.txt" > "$f.tsv"
            [ -s "$f.tsv" ] || log "no figures in $f.txt (stderr: $f.txt.err)"
        done
    done
done

{
    echo "# $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' + uncommitted changes') against $REV, $ROUNDS rounds, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# every figure is a time: lower is better; 'control' rows measure no Strobe code"
    for bench in query index e2e; do
        printf '\n## %s\n\n' "$bench"
        table "$bench"
    done
} | tee "$out/tables.md"
log "benchmarks ran for $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s; outputs and tables.md in $out"
