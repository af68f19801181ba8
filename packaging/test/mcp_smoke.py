#!/usr/bin/env python3
"""Debugs a small C program through `strobe mcp`, as a coding agent would:
initialize, debug_trace (add a function), debug_launch, debug_query (its
calls, its output), debug_session stop. A minimal MCP client over stdio
(newline-delimited JSON-RPC), with no dependency but Python 3's standard
library, so it runs in a root that holds only the package's dependencies.

Usage: mcp_smoke.py PROGRAM [FUNCTION]   (FUNCTION defaults to smoke_add)
       mcp_smoke.py --before-setup PROGRAM (a launch is refused, naming `strobe setup`)
Prints each step and exits 0 when every answer was as expected.
"""

import json
import os
import re
import select
import subprocess
import sys
import time


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


class Mcp:
    def __init__(self, argv):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr
        )
        self.next_id = 0
        self.buf = b""

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def read_line(self, deadline):
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            check(left > 0, "no answer from strobe mcp in time")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                check(chunk, f"strobe mcp closed its stdout (exit code {self.proc.poll()})")
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def request(self, method, params, timeout=120):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            msg = self.read_line(deadline)
            if msg.get("id") == rid and "method" not in msg:
                check("error" not in msg, f"{method} failed: {msg.get('error')}")
                return msg["result"]
            if "method" in msg and "id" in msg:
                # A request from the server (roots, sampling...): not offered.
                self.send({"jsonrpc": "2.0", "id": msg["id"],
                           "error": {"code": -32601, "message": "not supported by this client"}})
            # Notifications (progress, logging) are not needed here.

    def tool(self, name, args, ok=True):
        result = self.request("tools/call", {"name": name, "arguments": args})
        text = "\n".join(c.get("text", "") for c in result.get("content", []))
        if ok:
            check(not result.get("isError"), f"{name} {json.dumps(args)} failed: {text}")
        return result.get("structuredContent") or {}, text

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def initialize(mcp):
    init = mcp.request("initialize", {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "strobe-package-test", "version": "1"},
    })
    mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return init


def before_setup(program):
    """Before `strobe setup`: a launch is refused, saying to run it."""
    mcp = Mcp(["strobe", "mcp"])
    try:
        initialize(mcp)
        _, text = mcp.tool("debug_launch", {
            "command": program, "args": [], "projectRoot": os.path.dirname(program),
        }, ok=False)
        check("strobe setup" in text, f"debug_launch before strobe setup did not say to run it: {text}")
        print(f"debug_launch before strobe setup: {text[:160]}...")
    finally:
        mcp.close()


def main():
    if sys.argv[1] == "--before-setup":
        before_setup(os.path.abspath(sys.argv[2]))
        return
    program = os.path.abspath(sys.argv[1])
    function = sys.argv[2] if len(sys.argv) > 2 else "smoke_add"
    mcp = Mcp(["strobe", "mcp"])
    try:
        init = initialize(mcp)
        server = init.get("serverInfo", {})
        print(f"initialize: {server.get('name')} {server.get('version')}, protocol {init.get('protocolVersion')}")
        tools = {t["name"] for t in mcp.request("tools/list", {})["tools"]}
        for t in ("debug_launch", "debug_trace", "debug_query", "debug_session"):
            check(t in tools, f"tools/list has no {t}: {sorted(tools)}")
        print(f"tools/list: {len(tools)} tools")

        mcp.tool("debug_trace", {"add": [function]})
        print(f"debug_trace: add {function}")
        launched, _ = mcp.tool("debug_launch", {
            "command": program, "args": [], "projectRoot": os.path.dirname(program),
        })
        sid, pid = launched.get("sessionId"), launched.get("pid")
        check(sid and pid, f"debug_launch answered no session or pid: {launched}")
        print(f"debug_launch: session {sid}, pid {pid}")

        # Its calls: wait (up to 60 s) for a few, then read them.
        deadline = time.monotonic() + 60
        while True:
            q, _ = mcp.tool("debug_query", {
                "sessionId": sid, "eventType": "function_enter",
                "function": {"equals": function}, "verbose": True, "limit": 500,
            })
            calls = q.get("events", [])
            if len(calls) >= 5:
                break
            check(time.monotonic() < deadline, f"after 60 s, {len(calls)} calls of {function} traced: {q}")
            time.sleep(0.2)
        first = calls[0]
        check(first.get("function") == function, f"a call of {first.get('function')}: {first}")
        source = str(first.get("sourceFile", ""))
        check(source.endswith("smoke.c"), f"no source file smoke.c: {first}")
        check(os.path.isfile(source), f"the source file {source} (from DWARF) is not where the program's source is")
        args = first.get("arguments") or []
        check([a.get("name") for a in args] == ["a", "b"], f"arguments not a, b (from DWARF): {first}")
        bs = [next(a["value"] for a in c["arguments"] if a["name"] == "b") for c in calls]
        check(bs == list(range(bs[0], bs[0] + len(bs))), f"calls lost or out of order: b = {bs}")
        shown = ", ".join(f"{a['name']}={a['value']}" for a in args)
        print(f"debug_query: {len(calls)} calls of {function} ({first['sourceFile']}:{first.get('line')}), "
              f"the first {function}({shown})")

        out, _ = mcp.tool("debug_query", {"sessionId": sid, "eventType": "stdout", "limit": 50})
        lines = [e.get("text", "") for e in out.get("events", [])]
        check(any(re.match(r"smoke \d+: \d+", l) for l in lines), f"no output of the program: {lines[:5]}")
        print(f"debug_query: stdout {lines[0].strip()!r} and {len(lines) - 1} more lines")

        stopped, text = mcp.tool("debug_session", {"action": "stop", "sessionId": sid})
        deadline = time.monotonic() + 15
        while running(pid):
            check(time.monotonic() < deadline, f"the program (pid {pid}) outlived its stopped session")
            time.sleep(0.1)
        print(f"debug_session stop: the program (pid {pid}) is gone; {(text or json.dumps(stopped))[:200]}")
    finally:
        mcp.close()
    print("mcp smoke: passed")


if __name__ == "__main__":
    try:
        main()
    except Fail as e:
        print(f"mcp smoke: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
