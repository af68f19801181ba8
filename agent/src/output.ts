// A followed child's own output pipes. A forked child shares its parent's
// stdout/stderr pipes, and a pipe does not say which process wrote: the
// daemon asks the child's agent, before the child runs on, for new pipes on
// fds 1 and 2 and reads them under the child's pid.
const O_CLOEXEC = 0x80000;
const libc = (name: string) => Module.findGlobalExportByName(name)!;
const pipe2 = new NativeFunction(libc("pipe2"), "int", ["pointer", "int"]);
const dup2 = new NativeFunction(libc("dup2"), "int", ["int", "int"]);
const close = new NativeFunction(libc("close"), "int", ["int"]);

/** Puts the write end of a new pipe on each of `fds`; returns the read ends
 *  (close-on-exec, for the daemon to open through /proc) by fd. */
export function ownOutput(fds: number[]): Record<string, number> {
    const readEnds: Record<string, number> = {};
    const pair = Memory.alloc(8);
    for (const fd of fds) {
        if ((pipe2(pair, O_CLOEXEC) as number) !== 0) throw new Error(`pipe2 failed for fd ${fd}`);
        const [readEnd, writeEnd] = [pair.readS32(), pair.add(4).readS32()];
        // dup2 leaves the copy on `fd` without close-on-exec.
        if ((dup2(writeEnd, fd) as number) < 0) {
            close(readEnd);
            close(writeEnd);
            throw new Error(`dup2 onto fd ${fd} failed`);
        }
        close(writeEnd);
        readEnds[String(fd)] = readEnd;
    }
    return readEnds;
}

/** Closes descriptors the daemon has opened its own copies of. */
export function closeFds(fds: number[]): void {
    for (const fd of fds) close(fd);
}
