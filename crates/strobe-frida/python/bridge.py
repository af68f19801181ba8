"""Strobe's Frida bridge: one process per session, started by the daemon.

Why a separate process: the only Frida build the registries offer is the
PyPI wheel, and a process boundary keeps Frida's hangs and its own child
reaping away from the daemon (see ENGINEERING.md).

File descriptors, set up by the daemon:
  0, 1, 2  the pipes the *target* will inherit (stdin, stdout, stderr);
           the bridge never writes to them itself and lets go of them once
           the target is spawned, so the daemon sees EOF when the target ends.
  3        a Unix socket carrying length-prefixed binary frames.

Frame: u32 little-endian length (of what follows), u8 kind, payload.
  daemon -> bridge  0x01 REQUEST  JSON {"id", "op", ...}
                    0x02 POST     u32 pid (0: the root target), u32 json
                                  length, JSON text, raw data bytes
  bridge -> daemon  0x41 RESPONSE JSON {"id", "ok", ...}
                    0x42 MESSAGE  u32 pid, u32 message length, message text,
                                  raw data
                    0x43 NOTICE   JSON {"event", ...}: ready, fatal,
                                  detached {pid, reason, crash},
                                  child {pid, parentPid, origin, path, argv}
Agent messages are forwarded as the raw text Frida hands over: the bridge
never decodes them.

Targets: the root (spawned, or attached by pid) and every descendant Frida's
child gating reports. A gated child stays suspended until the daemon adopts
it (agent loaded) and resumes it, so it is instrumented before it runs on.
"""

import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import traceback

REQUEST, POST = 0x01, 0x02
RESPONSE, MESSAGE, NOTICE = 0x41, 0x42, 0x43

log_file = open(sys.argv[1], "a", buffering=1) if len(sys.argv) > 1 else open(os.devnull, "w")
# Python's own diagnostics must never land in the target's stderr pipe.
sys.stderr = log_file


def log(*parts):
    print(*parts, file=log_file)


# The channel must not leak into the target: it would keep the channel open
# after the bridge dies (hiding its death) and let the target speak for it.
os.set_inheritable(3, False)
chan = socket.socket(fileno=3)
send_lock = threading.Lock()


def send_frame(kind, payload):
    header = struct.pack("<IB", len(payload) + 1, kind)
    with send_lock:
        chan.sendall(header + payload)


def notice(event, **fields):
    fields["event"] = event
    send_frame(NOTICE, json.dumps(fields).encode())


def recv_exact(n):
    buf = bytearray()
    while len(buf) < n:
        try:
            part = chan.recv(n - len(buf))
        except OSError:
            return None
        if not part:
            return None
        buf += part
    return bytes(buf)


try:
    import frida
except Exception as exc:  # pragma: no cover - exercised by the daemon's error path
    notice("fatal", error="cannot import frida: %s" % exc, python=sys.executable)
    sys.exit(3)


class Target:
    """One instrumented process image: a Frida session and its agent."""

    def __init__(self, pid, session, script):
        self.pid = pid
        self.session = session
        self.script = script


class Bridge:
    def __init__(self):
        self.device = frida.get_local_device()
        # The root target's pid; None once it is gone (never signal it then).
        self.pid = None
        # True when the root was spawned here (it may be killed); an attached
        # process is only ever detached from.
        self.spawned = False
        self.targets = {}
        self.targets_lock = threading.Lock()
        # Gated children not resumed yet: resumed on shutdown so that none
        # is left suspended.
        self.gated = set()
        self.agent_js = None
        self.follow = False
        self.released_stdio = False
        self.device.on("child-added", self.on_child_added)

    def release_stdio(self):
        """Point 0/1/2 away from the target's pipes once the target has them."""
        if self.released_stdio:
            return
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(log_file.fileno(), 2)
        os.close(null)
        self.released_stdio = True

    def op_compile(self, req):
        compiler = frida.Compiler()
        diagnostics = []
        compiler.on("diagnostics", lambda d: diagnostics.extend(d))
        try:
            js = compiler.build(req["entry"], project_root=req["projectRoot"])
        except Exception as exc:
            raise RuntimeError("agent compile failed: %s %s" % (exc, json.dumps(diagnostics)))
        tmp = req["output"] + ".tmp.%d" % os.getpid()
        with open(tmp, "w") as f:
            f.write(js)
        os.replace(tmp, req["output"])
        return {"bytes": len(js), "diagnostics": diagnostics}

    def load_agent(self, pid):
        """Attaches to `pid` and loads the agent; the process stays as it is
        (suspended when spawned or gated)."""
        session = self.device.attach(pid)
        target = Target(pid, session, None)
        session.on("detached", lambda reason, crash: self.on_detached(target, reason, crash))
        if self.follow:
            session.enable_child_gating()
        script = session.create_script(self.agent_js, name="strobe-agent")
        target.script = script
        # The raw signal hands over the message text undecoded.
        script._impl.on("message", lambda raw, data: self.on_message(pid, raw, data))
        with self.targets_lock:
            self.targets[pid] = target
        script.load()
        return target

    def op_spawn(self, req):
        if self.pid is not None:
            raise RuntimeError("this bridge already has a target")
        with open(req["agent"]) as f:
            self.agent_js = f.read()
        self.follow = bool(req.get("followChildren"))
        kwargs = {"argv": req["argv"], "stdio": "inherit"}
        if req.get("env") is not None:
            kwargs["env"] = req["env"]
        if req.get("cwd"):
            kwargs["cwd"] = req["cwd"]
        pid = self.device.spawn(req["argv"][0], **kwargs)
        self.pid = pid
        self.spawned = True
        self.release_stdio()
        try:
            self.load_agent(pid)
        except Exception:
            self.kill_target()
            raise
        return {"pid": pid}

    def op_attach(self, req):
        """Instruments a process that is already running (never killed)."""
        if self.pid is not None:
            raise RuntimeError("this bridge already has a target")
        with open(req["agent"]) as f:
            self.agent_js = f.read()
        self.follow = bool(req.get("followChildren"))
        pid = int(req["pid"])
        self.release_stdio()
        self.pid = pid
        try:
            self.load_agent(pid)
        except Exception:
            self.pid = None
            raise
        return {"pid": pid}

    def op_adopt(self, req):
        """Loads the agent into a gated child (still suspended)."""
        self.load_agent(int(req["pid"]))
        return {}

    def op_resume(self, req):
        pid = int(req.get("pid") or self.pid)
        self.gated.discard(pid)
        if pid == self.pid and not self.spawned:
            return {}
        self.device.resume(pid)
        return {}

    def op_kill(self, req):
        self.kill_target()
        return {}

    def op_detach(self, req):
        """Unloads every agent (each reverts its hooks) and lets the
        processes run on."""
        with self.targets_lock:
            targets = list(self.targets.values())
        for t in targets:
            try:
                t.script.unload()
            except Exception as exc:
                log("unload failed:", exc)
            try:
                t.session.detach()
            except Exception as exc:
                log("detach failed:", exc)
        self.resume_gated()
        return {}

    def op_warm(self, req):
        """Pays Frida's one-time injector set-up (~50 ms) ahead of need, by
        spawning and attaching to a throw-away process."""
        pid = self.device.spawn([req.get("program", "/bin/true")])
        try:
            session = self.device.attach(pid)
            session.detach()
        finally:
            self.device.kill(pid)
        return {}

    def op_ping(self, req):
        return {"pid": self.pid}

    def op_shutdown(self, req):
        return {}

    def resume_gated(self):
        for pid in list(self.gated):
            self.gated.discard(pid)
            try:
                self.device.resume(pid)
            except Exception as exc:
                log("resume of gated child failed:", exc)

    def kill_target(self):
        """Kills what this bridge launched (the root and the children it
        followed); an attached root is detached from, never killed."""
        with self.targets_lock:
            pids = list(self.targets)
        if not self.spawned:
            self.op_detach({})
            return
        for pid in pids:
            try:
                self.device.kill(pid)
            except Exception as exc:
                log("kill failed:", exc)
        for pid in list(self.gated):
            self.gated.discard(pid)
            try:
                self.device.kill(pid)
            except Exception as exc:
                log("kill of gated child failed:", exc)

    def on_child_added(self, child):
        log("child added:", child)
        self.gated.add(child.pid)
        try:
            notice("child", pid=child.pid, parentPid=child.parent_pid, origin=child.origin,
                   path=child.path, argv=list(child.argv or []))
        except OSError:
            pass

    def on_message(self, pid, raw, data):
        text = raw.encode() if isinstance(raw, str) else raw
        payload = struct.pack("<II", pid, len(text)) + text + (data or b"")
        try:
            send_frame(MESSAGE, payload)
        except OSError:
            pass

    def on_detached(self, target, reason, crash):
        # Frida has reaped (or lost) the target: its pid may be reused by an
        # unrelated process from now on, so it must never be signalled again.
        with self.targets_lock:
            if self.targets.get(target.pid) is target:
                del self.targets[target.pid]
        if target.pid == self.pid and str(reason) != "process-replaced":
            self.pid = None
        details = None
        if crash is not None:
            details = {"summary": crash.summary, "report": crash.report}
        try:
            notice("detached", pid=target.pid, reason=str(reason), crash=details)
        except OSError:
            pass

    def post(self, payload):
        pid, json_len = struct.unpack_from("<II", payload)
        text = payload[8:8 + json_len].decode()
        data = payload[8 + json_len:] or None
        with self.targets_lock:
            target = self.targets.get(pid or self.pid)
        if target is not None:
            target.script._impl.post(text, data)


def finish_frida(timeout):
    """Lets Frida finish with every process it touched before this process
    goes. After a detach, Frida's injector still frees the agent's memory
    in the target with a call it makes there under ptrace (the return
    address it plants is 0x320); exiting in the middle of that call left
    the target running on with that return address and crashed it at
    0x320 (SIGSEGV) in about 1 detach of 10. Closing the device manager
    waits for the injector to be idle; bounded, so a hung Frida cannot keep
    the bridge (the daemon kills it after 2 s anyway)."""
    done = threading.Event()

    def close():
        try:
            frida.shutdown()
        except Exception as exc:
            log("frida shutdown failed:", exc)
        done.set()

    started = time.monotonic()
    threading.Thread(target=close, daemon=True).start()
    if not done.wait(timeout):
        log("frida shutdown did not finish in %.1f s" % timeout)
    log("frida shutdown took %.3f s" % (time.monotonic() - started))


def main():
    bridge = Bridge()
    try:
        serve(bridge)
    finally:
        # However the channel ended (daemon gone, broken pipe, a bug here),
        # never leave a target we launched running unobserved.
        bridge.kill_target()
        finish_frida(1.5)
        log("bridge exiting")
        os._exit(0)


def serve(bridge):
    notice("ready", fridaVersion=frida.__version__, python=sys.executable, pid=os.getpid())
    while True:
        header = recv_exact(5)
        if header is None:
            break
        length, kind = struct.unpack("<IB", header)
        payload = recv_exact(length - 1) if length > 1 else b""
        if payload is None:
            break
        if kind == POST:
            try:
                bridge.post(payload)
            except Exception as exc:
                log("post failed:", exc)
            continue
        if kind != REQUEST:
            log("unknown frame kind", kind)
            continue
        req = json.loads(payload)
        if req.get("op") != "ping":
            log("op", req.get("op"), req.get("pid"))
        handler = getattr(bridge, "op_" + req.get("op", ""), None)
        try:
            if handler is None:
                raise RuntimeError("unknown op %r" % req.get("op"))
            result = handler(req)
            result.update({"id": req["id"], "ok": True})
        except Exception as exc:
            log(traceback.format_exc())
            result = {"id": req["id"], "ok": False, "error": str(exc)}
        send_frame(RESPONSE, json.dumps(result).encode())
        if req.get("op") == "shutdown":
            break


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main()
