// Bulk closes leave close-on-exec descriptors to the exec. A program about
// to exec often closes every descriptor above 2 first (Python's subprocess
// does by default, with close_range; others with closefrom). In a process
// the agent is in, that includes Frida's own channel and event descriptors,
// and a followed child that loses them hangs in the exec, waiting for an
// answer that can no longer reach it. So close_range and closefrom skip
// descriptors marked close-on-exec (Frida's are; the exec closes them
// anyway) and close the rest as asked. What changes for a program: one that
// bulk-closes without exec'ing after keeps its own close-on-exec
// descriptors open (a bulk close is nearly always followed by an exec).
// Individual close() calls are untouched.
//
// It must be safe in a vfork()ed child (Python's subprocess uses vfork),
// which shares the parent's memory while the parent's other threads run on:
// no allocation, only system calls and the stack (getdents64 rather than
// opendir, whose malloc could meet a parent thread's).

const SOURCE = `
#include <glib.h>

extern long syscall(long, ...);

#define SYS_CLOSE 3
#define SYS_FCNTL 72
#define SYS_GETDENTS64 217
#define SYS_OPENAT 257
#define SYS_CLOSE_RANGE 436
#define AT_FDCWD -100
#define O_DIRECTORY_CLOEXEC (0200000 | 02000000)
#define F_GETFD 1
#define FD_CLOEXEC 1
/* struct linux_dirent64: d_ino, d_off, d_reclen (u16 at 16), d_type, d_name at 19. */
#define DIRENT_RECLEN 16
#define DIRENT_NAME 19

/* The highest descriptor open now (-1 when /proc cannot say). */
static int highest_fd(void) {
    int dir = (int)syscall(SYS_OPENAT, AT_FDCWD, "/proc/self/fd", O_DIRECTORY_CLOEXEC);
    if (dir < 0) return -1;
    char buf[4096];
    int top = -1;
    for (;;) {
        long n = syscall(SYS_GETDENTS64, dir, buf, sizeof(buf));
        if (n <= 0) break;
        for (long at = 0; at < n; at += *(unsigned short *)(buf + at + DIRENT_RECLEN)) {
            const char *name = buf + at + DIRENT_NAME;
            if (name[0] < '0' || name[0] > '9') continue;
            int fd = 0;
            for (; *name >= '0' && *name <= '9'; name++) fd = fd * 10 + (*name - '0');
            if (fd != dir && fd > top) top = fd;
        }
    }
    syscall(SYS_CLOSE, dir);
    return top;
}

static int close_some(unsigned int first, unsigned int last) {
    int top = highest_fd();
    if (top < 0) return (int)syscall(SYS_CLOSE_RANGE, first, last, 0);
    for (unsigned int fd = first; fd <= last && fd <= (unsigned int)top; fd++) {
        long flags = syscall(SYS_FCNTL, (int)fd, F_GETFD);
        if (flags < 0 || (flags & FD_CLOEXEC)) continue;
        syscall(SYS_CLOSE, (int)fd);
    }
    return 0;
}

int strobe_close_range(unsigned int first, unsigned int last, int flags) {
    /* CLOSE_RANGE_CLOEXEC / UNSHARE: nothing is closed now, or the table
       is the caller's own copy: as asked. */
    if (flags != 0 || first > last) return (int)syscall(SYS_CLOSE_RANGE, first, last, flags);
    return close_some(first, last);
}

void strobe_closefrom(int lowfd) {
    close_some(lowfd < 0 ? 0 : (unsigned int)lowfd, ~0U);
}
`;

let module: CModule | null = null;

/** Replaces libc's close_range and closefrom (where it has them). */
export function guardBulkCloses(): void {
    if (module !== null) return;
    const libc = (name: string) => Module.findGlobalExportByName(name);
    const syscall = libc("syscall");
    if (syscall === null) return;
    module = new CModule(SOURCE, { syscall });
    const closeRange = libc("close_range");
    if (closeRange !== null) Interceptor.replace(closeRange, module.strobe_close_range);
    const closeFrom = libc("closefrom");
    if (closeFrom !== null) Interceptor.replace(closeFrom, module.strobe_closefrom);
}
