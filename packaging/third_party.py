#!/usr/bin/env python3
"""Lists the Rust crates the packaged binaries are built from, with their
licenses, for /usr/share/doc/strobe/THIRD-PARTY.

Usage: third_party.py MANIFEST:ROOT[,ROOT...] ...

Each argument names a Cargo manifest and the packages whose binaries are
shipped (e.g. Cargo.toml:strobe,strobe-vision). The crates listed are those
reached from the roots through normal (not dev, not build) dependencies, as
`cargo metadata` resolves them; the workspace's own crates are left out (they
are Strobe, under its own license).
"""

import json
import subprocess
import sys


def crates(manifest, roots):
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked",
             "--filter-platform", "x86_64-unknown-linux-gnu",
             "--manifest-path", manifest],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    local = {p["id"] for p in meta["packages"] if p.get("source") is None}
    todo = [pid for pid, p in packages.items() if p["name"] in roots]
    missing = set(roots) - {packages[pid]["name"] for pid in todo}
    if missing:
        sys.exit(f"third_party.py: {manifest} has no package {sorted(missing)}")
    seen = set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]):
                todo.append(dep["pkg"])
    return {
        (packages[pid]["name"], packages[pid]["version"],
         packages[pid].get("license") or packages[pid].get("license_file") or "see the crate")
        for pid in seen - local
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    found = set()
    for arg in sys.argv[1:]:
        manifest, _, roots = arg.partition(":")
        found |= crates(manifest, set(roots.split(",")))
    print("Strobe's binaries (strobe, strobe-vision, strobe-app) are statically linked with")
    print("these Rust crates (from crates.io), each under the license named (SPDX). Their")
    print("license texts are in each crate's source at https://crates.io/crates/<name>.")
    print("The bundled SQLite (rusqlite's libsqlite3-sys) is in the public domain.")
    print()
    width = max(len(f"{n} {v}") for n, v, _ in found)
    for name, version, license in sorted(found):
        print(f"{name + ' ' + version:<{width}}  {license}")


if __name__ == "__main__":
    main()
