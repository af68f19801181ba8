// The record ring's memory, shared with the daemon: a memfd mapped here with
// MAP_SHARED, which the daemon opens through /proc/<pid>/fd/<fd> and maps
// too (crates/strobe-session/src/trace/shared_ring.rs). The daemon then
// drains the ring itself: records reach the store without this script, a
// Frida message or the Python bridge copying them on the way. The drain
// offers the ring (drain.ts); where memfd_create fails, or the daemon
// refuses the offer, the ring is plain memory and its records travel in
// messages as before.
//
// A forked child inherits the shared mapping: the ring writer records
// nothing in a child (config[5], set by the atfork handler; ring.ts), so a
// child never writes into its parent's ring. An exec drops the mapping and
// the descriptor (close-on-exec).

const MFD_CLOEXEC = 1;
const PROT_READ_WRITE = 3;
const MAP_SHARED = 0x01;
const MAP_PRIVATE_ANONYMOUS_FIXED = 0x02 | 0x20 | 0x10;
const SYS_MEMFD_CREATE = 319;

const libc = (name: string) => Module.findGlobalExportByName(name);
// Declared with fixed arguments: glibc's syscall() is assembly that takes
// its arguments from the registers, whatever the variadic convention says.
const syscall = new NativeFunction(libc("syscall")!, "int", ["long", "pointer", "uint"]);
const ftruncate = new NativeFunction(libc("ftruncate")!, "int", ["int", "int64"]);
const mmap = new NativeFunction(libc("mmap")!, "pointer", ["pointer", "size_t", "int", "int", "int", "int64"]);
const close = new NativeFunction(libc("close")!, "int", ["int"]);

/** Shared memory and the descriptor the daemon opens it by. */
export interface SharedMemory {
    base: NativePointer;
    /** Open until the daemon answered the offer (see closeRingFd). */
    fd: number;
}

/** `size` bytes of zeroed memory backed by a memfd, mapped shared; null
 *  where the kernel or a sandbox does not allow it. */
export function sharedAlloc(size: number): SharedMemory | null {
    const name = Memory.allocUtf8String("strobe-ring");
    // The system call, not glibc's wrapper: glibc < 2.27 has none.
    const fd = syscall(SYS_MEMFD_CREATE, name, MFD_CLOEXEC) as number;
    if (fd < 0) return null;
    if ((ftruncate(fd, size) as number) !== 0) {
        close(fd);
        return null;
    }
    const base = mmap(NULL, size, PROT_READ_WRITE, MAP_SHARED, fd, 0) as NativePointer;
    if (base.equals(ptr(-1))) {
        close(fd);
        return null;
    }
    return { base, fd };
}

/** Closes the ring's descriptor once the daemon has its own (or refused):
 *  the mapping does not need it, and the program should not see it. */
export function closeRingFd(fd: number): void {
    close(fd);
}

/** Replaces the shared pages at `base` by private zeroed ones, in place: the
 *  agent unloads from a process that runs on, so the daemon lets go of the
 *  ring, and a call still returning through a hook may write into it. */
export function unshare(base: NativePointer, size: number): void {
    mmap(base, size, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS_FIXED, -1, 0);
}
