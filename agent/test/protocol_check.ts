// Type-level agreement of the two sides of the agent protocol, checked by
// `tsc -p agent/test` (./dev test): protocol.fixtures.{agent,daemon}.ts, written by the Rust
// side (crates/strobe-frida/src/agent_protocol/fixtures/), holds an example
// of every message Rust can send or expects. There each example `satisfies`
// the TypeScript union of its direction, so a field Rust has and TypeScript
// does not (or of another type, or nullable where TypeScript says it is not)
// fails to compile; here every member of each union must have an example
// with every one of its fields, so a message or field TypeScript has and
// Rust does not fails too.
import type { AgentMessage, DaemonMessage, TypeDesc, VarLocation } from "../src/protocol.js";
import { agentMessages } from "./protocol.fixtures.agent.js";
import { daemonMessages, typeDescs, varLocations } from "./protocol.fixtures.daemon.js";

/** Members of union `U` that no example in `F` is an instance of. */
type Uncovered<U, F> = U extends unknown ? ([Extract<F, U>] extends [never] ? U : never) : never;

/** `[member, key]` for each key of a member of `U` that its examples in `F` leave out. */
type Unexampled<U, F> = U extends unknown
    ? ([Extract<F, U>] extends [never] ? never : MissingKeys<U, Extract<F, U>>)
    : never;
type MissingKeys<U, E> = { [K in Exclude<keyof U, AllKeys<E>>]: [U, K] }[Exclude<keyof U, AllKeys<E>>];
/** Keys present in any member of `E` (a union of examples). */
type AllKeys<E> = E extends unknown ? keyof E : never;

/** Compiles only when `T` is `never`; otherwise the error names what `T` is. */
function none<T extends never>(): T[] {
    return [];
}

type Agent = (typeof agentMessages)[number];
type Daemon = (typeof daemonMessages)[number];
type Location = (typeof varLocations)[number];
type Desc = (typeof typeDescs)[number];

export const checks = [
    none<Uncovered<AgentMessage, Agent>>(),
    none<Unexampled<AgentMessage, Agent>>(),
    none<Uncovered<DaemonMessage, Daemon>>(),
    none<Unexampled<DaemonMessage, Daemon>>(),
    none<Uncovered<VarLocation, Location>>(),
    none<Unexampled<VarLocation, Location>>(),
    none<Uncovered<TypeDesc, Desc>>(),
    none<Unexampled<TypeDesc, Desc>>(),
];
