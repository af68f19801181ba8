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
                    0x02 POST     u32 json length, JSON text, raw data bytes
  bridge -> daemon  0x41 RESPONSE JSON {"id", "ok", ...}
                    0x42 MESSAGE  u32 message length, message text, raw data
                    0x43 NOTICE   JSON {"event", ...}
Agent messages are forwarded as the raw text Frida hands over: the bridge
never decodes them.
"""

import json
import os
import signal
import socket
import struct
import sys
import threading
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


class Bridge:
    def __init__(self):
        self.device = frida.get_local_device()
        self.pid = None
        self.session = None
        self.script = None
        self.released_stdio = False

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

    def op_spawn(self, req):
        if self.pid is not None:
            raise RuntimeError("this bridge already has a target")
        with open(req["agent"]) as f:
            js = f.read()
        kwargs = {"argv": req["argv"], "stdio": "inherit"}
        if req.get("env") is not None:
            kwargs["env"] = req["env"]
        if req.get("cwd"):
            kwargs["cwd"] = req["cwd"]
        pid = self.device.spawn(req["argv"][0], **kwargs)
        self.pid = pid
        self.release_stdio()
        try:
            self.session = self.device.attach(pid)
            self.session.on("detached", self.on_detached)
            self.script = self.session.create_script(js, name="strobe-agent")
            # The raw signal hands over the message text undecoded.
            self.script._impl.on("message", self.on_message)
            self.script.load()
        except Exception:
            self.kill_target()
            raise
        return {"pid": pid}

    def op_resume(self, req):
        self.device.resume(self.pid)
        return {}

    def op_kill(self, req):
        self.kill_target()
        return {}

    def op_detach(self, req):
        if self.session is not None:
            self.session.detach()
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

    def kill_target(self):
        if self.pid is None:
            return
        try:
            self.device.kill(self.pid)
        except Exception as exc:
            log("kill failed:", exc)

    def on_message(self, raw, data):
        text = raw.encode() if isinstance(raw, str) else raw
        payload = struct.pack("<I", len(text)) + text + (data or b"")
        try:
            send_frame(MESSAGE, payload)
        except OSError:
            pass

    def on_detached(self, reason, crash):
        # Frida has reaped (or lost) the target: its pid may be reused by an
        # unrelated process from now on, so it must never be signalled again.
        self.pid = None
        details = None
        if crash is not None:
            details = {"summary": crash.summary, "report": crash.report}
        try:
            notice("detached", reason=str(reason), crash=details)
        except OSError:
            pass

    def post(self, payload):
        (json_len,) = struct.unpack_from("<I", payload)
        text = payload[4:4 + json_len].decode()
        data = payload[4 + json_len:] or None
        if self.script is not None:
            self.script._impl.post(text, data)


def main():
    bridge = Bridge()
    try:
        serve(bridge)
    finally:
        # However the channel ended (daemon gone, broken pipe, a bug here),
        # never leave a target we launched running unobserved.
        bridge.kill_target()
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
