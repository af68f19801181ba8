// Strobe's in-process agent. Compiled by Frida's own compiler (frida.Compiler)
// in the bridge; the daemon embeds these sources and caches the compiled
// output by content hash, so an edited source is never shadowed by a stale build.
import { installLifecycleHooks } from "./lifecycle.js";
import { send_ } from "./protocol.js";

installLifecycleHooks();
send_({ type: "agent_loaded", pid: Process.id, arch: Process.arch, platform: Process.platform });
