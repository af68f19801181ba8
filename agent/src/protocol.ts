// Messages from the agent to the daemon. The bridge forwards them undecoded;
// the daemon parses them (crates/strobe-session/src/agent_messages.rs).

export type AgentMessage =
    | { type: "agent_loaded"; pid: number; arch: string; platform: string; journal: string }
    | { type: "exit"; pid: number; code: number }
    | { type: "crash"; pid: number; tid: number; signal: string; kind: string; address: string;
        memory?: { operation: string; address: string };
        registers: Record<string, string>; backtrace: Frame[];
        /** Mangled type name of the exception std::terminate was called for. */
        exceptionType?: string };

export interface Frame {
    address: string;
    module: string | null;
    name: string | null;
    file: string | null;
    line: number | null;
}

export function send_(msg: AgentMessage): void {
    send(msg);
}

/** Sends `msg` and blocks this thread until the daemon answers `ackType`,
 *  so the daemon has stored the event before the process goes on (or dies). */
export function sendAndWait(msg: AgentMessage, ackType: string): void {
    // Register before sending so an early ack cannot be missed. wait() blocks
    // only this thread; if the bridge goes away the script is unloaded and
    // the wait ends with it.
    const op = recv(ackType, () => { /* the ack carries no data */ });
    send(msg);
    op.wait();
}
