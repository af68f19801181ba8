// The program's own network I/O, for a session with a `net` channel open:
// connect, accept, and every send and receive on an IPv4/IPv6 socket, with
// the peer and the first bytes, as records in the shared ring (kind
// KIND_SOCKET, decoded by crates/strobe-session/src/trace/sockets.rs).
//
// The listeners are C (Interceptor.attach with CModule callbacks, about
// 0.3 µs a call here): read() and write() are among a program's busiest
// calls, and Node.js does its socket I/O with them (libuv), not with
// send/recv, so the hooks cannot leave them out. Whether a descriptor is an
// inet socket is asked once (getsockopt) and kept in a table by descriptor,
// forgotten at close/dup2/dup3; Unix sockets, pipes and files are skipped
// after that one question. errno is kept as the call left it.
import { PAYLOAD_MAX, RING_WRITER_C, noteTracedIds, sharedRing } from "./tracers/ring.js";

/** Record kind of a socket event (low byte of the kind word). */
export const KIND_SOCKET = 7;
/** The function id socket records carry (their drops are counted under it):
 *  the last slot of the per-function tables, which no tracer hands out
 *  first. */
export const SOCKET_FUNC_ID = 262_143;
/** Descriptors with a table entry; higher ones are asked on every call. */
const FD_SLOTS = 65_536;
const FD_SIZE = 32;
/** Bytes of each send or receive kept. */
const HEAD_MAX = 64;

const SOURCE = `
#include <gum/guminterceptor.h>

extern volatile guint64 ring[];
extern volatile guint64 drops[];
extern volatile guint64 config[];
extern volatile guint8 fds[];
extern int getpid(void);
extern int clock_gettime(int, void *);
extern int sched_yield(void);
extern int usleep(unsigned int);
extern int gettid(void);
extern int getsockopt(int, int, int, void *, guint32 *);
extern int getsockname(int, void *, guint32 *);
extern int getpeername(int, void *, guint32 *);
extern int *__errno_location(void);

${RING_WRITER_C}

#define FD_SLOTS ${FD_SLOTS}
#define FD_SIZE ${FD_SIZE}
#define HEAD_MAX ${HEAD_MAX}
#define HDR 40
#define FUNC ${SOCKET_FUNC_ID}u
#define KIND ${KIND_SOCKET}u
#define EINPROGRESS 115

/* A descriptor's class: not asked yet, a stream or datagram inet socket,
   anything else (never recorded). */
enum { C_UNKNOWN, C_STREAM, C_DGRAM, C_OTHER };
/* Record ops (sockets.rs). */
enum { OP_CONNECT = 1, OP_ACCEPT, OP_SEND, OP_RECV, OP_CLOSE };
/* Hooked functions: the listener's data says which (SOCKET_FUNCTIONS). */
enum { F_CONNECT, F_ACCEPT, F_ACCEPT4, F_SEND, F_SENDTO, F_SENDMSG, F_WRITE, F_WRITEV,
       F_RECV, F_RECVFROM, F_RECVMSG, F_READ, F_READV, F_CLOSE, F_DUP2, F_DUP3 };

/* One descriptor's entry. Written by whichever thread asks first; a race
   only asks twice. Ports in host order; family 4 or 6. */
typedef struct { guint8 cls; guint8 family; guint16 peer_port; guint16 local_port; guint16 pad;
                 guint8 peer[16]; guint64 pad2; } FdInfo;
/* The arguments onLeave needs. */
typedef struct { gint64 fd; void *buf; void *addr; void *addrlen; } Call;
typedef struct { guint8 *base; gsize len; } Iov;
/* struct msghdr on x86_64. */
typedef struct { void *name; guint32 namelen; guint32 pad; Iov *iov; gsize iovlen; } MsgHdr;

/* An inet sockaddr's family (4 or 6), port and address; 0 for others. */
static int inet_of(const guint8 *sa, guint8 *family, guint16 *port, guint8 *addr) {
    guint16 fam = *(const guint16 *)sa;
    int i;
    if (fam == 2) {
        *family = 4; *port = (guint16)((sa[2] << 8) | sa[3]);
        for (i = 0; i < 16; i++) addr[i] = i < 4 ? sa[4 + i] : 0;
        return 1;
    }
    if (fam == 10) {
        *family = 6; *port = (guint16)((sa[2] << 8) | sa[3]);
        for (i = 0; i < 16; i++) addr[i] = sa[8 + i];
        return 1;
    }
    return 0;
}

/* The peer of a connected socket, into e (port 0 while it has none). */
static void ask_peer(int fd, FdInfo *e) {
    guint64 sa[16];
    guint32 len = sizeof(sa);
    guint8 fam;
    guint16 port;
    if (getpeername(fd, sa, &len) == 0 && inet_of((guint8 *)sa, &fam, &port, e->peer)) {
        e->family = fam;
        e->peer_port = port;
    }
}

static void classify(int fd, FdInfo *e) {
    int domain = 0, type = 0;
    guint32 len = 4;
    guint64 sa[16];
    guint8 fam, addr[16];
    guint16 port;
    if (getsockopt(fd, 1, 39 /* SO_DOMAIN */, &domain, &len) != 0 || (domain != 2 && domain != 10)) {
        e->cls = C_OTHER;
        return;
    }
    len = 4;
    if (getsockopt(fd, 1, 3 /* SO_TYPE */, &type, &len) != 0 || (type != 1 && type != 2)) {
        e->cls = C_OTHER;
        return;
    }
    e->family = domain == 2 ? 4 : 6;
    e->peer_port = 0;
    e->local_port = 0;
    len = sizeof(sa);
    if (getsockname(fd, sa, &len) == 0 && inet_of((guint8 *)sa, &fam, &port, addr)) e->local_port = port;
    ask_peer(fd, e);
    e->cls = type == 1 ? C_STREAM : C_DGRAM;
}

static FdInfo *entry(int fd) {
    return (FdInfo *)(fds + (gsize)fd * FD_SIZE);
}

/* fd's entry when it is an inet socket (classified on first sight), else
   NULL. Descriptors past the table use *spare, asked every time. */
static FdInfo *inet_socket(int fd, FdInfo *spare) {
    FdInfo *e;
    if (fd < 0) return NULL;
    e = fd < FD_SLOTS ? entry(fd) : spare;
    if (e == spare || e->cls == C_UNKNOWN) classify(fd, e);
    if (e->cls == C_OTHER) return NULL;
    /* A non-blocking connect finishes after the call: learn the peer at
       its first I/O. */
    if (e->peer_port == 0 && e->cls == C_STREAM) ask_peer(fd, e);
    return e;
}

static void forget(gint64 fd) {
    if (fd >= 0 && fd < FD_SLOTS) entry((int)fd)->cls = C_UNKNOWN;
}

/* Writes a record: the header (sockets.rs) and up to HEAD_MAX bytes, taken
   from buf or, when iov is set, gathered from iovcnt buffers. */
static void record(guint8 op, guint8 fn, int fd, gint64 result, FdInfo *e, const guint8 *buf,
                   Iov *iov, gsize iovcnt, gsize avail) {
    guint64 words[(HDR + HEAD_MAX) / 8];
    guint8 *p = (guint8 *)words;
    guint32 n = 0, i;
    guint64 ts;
    p[0] = op;
    p[1] = e->family;
    p[2] = e->cls;
    p[3] = fn;
    *(gint32 *)(p + 4) = fd;
    *(gint64 *)(p + 8) = result;
    *(guint16 *)(p + 16) = e->peer_port;
    *(guint16 *)(p + 18) = e->local_port;
    for (i = 0; i < 16; i++) p[24 + i] = e->peer[i];
    if (avail > HEAD_MAX) avail = HEAD_MAX;
    if (iov != NULL) {
        gsize k;
        for (k = 0; k < iovcnt && n < avail; k++) {
            gsize j;
            for (j = 0; j < iov[k].len && n < avail; j++) p[HDR + n++] = iov[k].base[j];
        }
    } else if (buf != NULL) {
        for (; n < avail; n++) p[HDR + n] = buf[n];
    }
    *(guint32 *)(p + 20) = n;
    NOW(ts);
    put_record((guint32)gettid(), FUNC, KIND, (guint64)(gint64)fd, ts, p, HDR + n);
}

/* The peer named by a datagram call (sendto's, recvfrom's) over the cached
   one; a copy, so the table keeps the socket's own. */
static FdInfo *with_peer(FdInfo *e, FdInfo *copy, const guint8 *sa) {
    guint8 fam;
    guint16 port;
    if (sa == NULL) return e;
    *copy = *e;
    if (!inet_of(sa, &fam, &port, copy->peer)) return e;
    copy->family = fam;
    copy->peer_port = port;
    return copy;
}

void sock_enter(GumInvocationContext *ic) {
    guint32 fn = (guint32)(gsize)gum_invocation_context_get_listener_function_data(ic);
    Call *c = GUM_IC_GET_INVOCATION_DATA(ic, Call);
    c->fd = (gint64)(gint)(gsize)gum_invocation_context_get_nth_argument(ic, 0);
    switch (fn) {
    case F_CLOSE: {
        int *errp = __errno_location();
        int saved = *errp;
        if (c->fd >= 0 && c->fd < FD_SLOTS) {
            FdInfo *e = entry((int)c->fd);
            if (config[5] == 0 && (e->cls == C_STREAM || e->cls == C_DGRAM))
                record(OP_CLOSE, F_CLOSE, (int)c->fd, 0, e, NULL, NULL, 0, 0);
            e->cls = C_UNKNOWN;
        }
        *errp = saved;
        return;
    }
    case F_DUP2:
    case F_DUP3:
        forget((gint64)(gint)(gsize)gum_invocation_context_get_nth_argument(ic, 1));
        return;
    case F_SENDTO:
    case F_RECVFROM:
        c->addr = gum_invocation_context_get_nth_argument(ic, 4);
        c->addrlen = gum_invocation_context_get_nth_argument(ic, 5);
        break;
    default:
        c->addr = NULL;
        break;
    }
    c->buf = gum_invocation_context_get_nth_argument(ic, 1);
    if (fn == F_WRITEV || fn == F_READV) c->addrlen = gum_invocation_context_get_nth_argument(ic, 2);
}

void sock_leave(GumInvocationContext *ic) {
    guint32 fn;
    Call *c;
    gint64 r;
    int *errp, saved, fd;
    FdInfo spare, copy, *e;
    if (config[5] != 0) return;
    fn = (guint32)(gsize)gum_invocation_context_get_listener_function_data(ic);
    c = GUM_IC_GET_INVOCATION_DATA(ic, Call);
    r = (gint64)(gssize)gum_invocation_context_get_return_value(ic);
    errp = __errno_location();
    saved = *errp;
    fd = (int)c->fd;
    switch (fn) {
    case F_CONNECT: {
        /* Every connect to an inet address, refused ones too; a
           non-blocking one says it is in progress. */
        guint8 fam, addr[16];
        guint16 port;
        if (c->buf == NULL || !inet_of((const guint8 *)c->buf, &fam, &port, addr)) break;
        forget(fd);
        e = inet_socket(fd, &spare);
        if (e == NULL) break;
        e = with_peer(e, &copy, (const guint8 *)c->buf);
        record(OP_CONNECT, fn, fd, r == 0 ? 0 : -(gint64)saved, e, NULL, NULL, 0, 0);
        break;
    }
    case F_ACCEPT:
    case F_ACCEPT4:
        if (r < 0) break;
        forget(r);
        e = inet_socket((int)r, &spare);
        if (e != NULL) record(OP_ACCEPT, fn, (int)r, fd, e, NULL, NULL, 0, 0);
        break;
    case F_SEND:
    case F_SENDTO:
    case F_WRITE:
        if (r <= 0 || (e = inet_socket(fd, &spare)) == NULL) break;
        record(OP_SEND, fn, fd, r, with_peer(e, &copy, (const guint8 *)c->addr), (const guint8 *)c->buf, NULL, 0, (gsize)r);
        break;
    case F_RECV:
    case F_RECVFROM:
    case F_READ:
        /* 0: the peer closed (on a stream). */
        if (r < 0 || (e = inet_socket(fd, &spare)) == NULL) break;
        if (fn == F_RECVFROM && c->addr != NULL && c->addrlen != NULL && *(guint32 *)c->addrlen < 2) c->addr = NULL;
        record(OP_RECV, fn, fd, r, with_peer(e, &copy, (const guint8 *)c->addr), (const guint8 *)c->buf, NULL, 0, (gsize)r);
        break;
    case F_WRITEV:
    case F_READV:
        if (r < 0 || (r == 0 && fn == F_WRITEV) || (e = inet_socket(fd, &spare)) == NULL) break;
        record(fn == F_WRITEV ? OP_SEND : OP_RECV, fn, fd, r, e, NULL, (Iov *)c->buf, (gsize)c->addrlen, (gsize)r);
        break;
    case F_SENDMSG:
    case F_RECVMSG: {
        MsgHdr *m = (MsgHdr *)c->buf;
        if (r < 0 || (r == 0 && fn == F_SENDMSG) || m == NULL || (e = inet_socket(fd, &spare)) == NULL) break;
        if (m->name != NULL && m->namelen >= 2) e = with_peer(e, &copy, (const guint8 *)m->name);
        record(fn == F_SENDMSG ? OP_SEND : OP_RECV, fn, fd, r, e, NULL, m->iov, m->iovlen, (gsize)r);
        break;
    }
    default:
        break;
    }
    *errp = saved;
}

/* Forgets every descriptor (hooks going back on after a pause: any of them
   may have been closed and reused unseen). */
void sock_forget_all(void) {
    gsize i;
    for (i = 0; i < FD_SLOTS; i++) entry((int)i)->cls = C_UNKNOWN;
}
`;

/** libc functions hooked, in the C's F_* order; `leave` false: only the
 *  entry is needed (close, dup2, dup3 forget the descriptor). */
const SOCKET_FUNCTIONS: Array<[string, boolean]> = [
    ["connect", true], ["accept", true], ["accept4", true],
    ["send", true], ["sendto", true], ["sendmsg", true], ["write", true], ["writev", true],
    ["recv", true], ["recvfrom", true], ["recvmsg", true], ["read", true], ["readv", true],
    ["close", false], ["dup2", false], ["dup3", false],
];

interface Watch {
    module: CModule;
    fds: NativePointer;
    forgetAll: NativeFunction<void, []>;
    listeners: InvocationListener[];
}

// Never freed once made: a thread blocked in recv() when the hooks come off
// still returns through the listener's code.
let watch: Watch | null = null;

/** Hooks (`on`) or unhooks the program's socket calls; returns how many
 *  functions are hooked now. */
export function watchSockets(on: boolean): number {
    if (!on) {
        if (watch !== null) {
            for (const l of watch.listeners) l.detach();
            watch.listeners = [];
            Interceptor.flush();
        }
        return 0;
    }
    if (watch === null) watch = createWatch();
    if (watch.listeners.length > 0) return watch.listeners.length;
    watch.forgetAll();
    const libc = (name: string) => Module.findGlobalExportByName(name);
    SOCKET_FUNCTIONS.forEach(([name, leave], index) => {
        const at = libc(name);
        if (at === null) return;
        const callbacks = leave
            ? { onEnter: watch!.module.sock_enter, onLeave: watch!.module.sock_leave }
            : { onEnter: watch!.module.sock_enter };
        watch!.listeners.push(Interceptor.attach(at, callbacks, ptr(index)));
    });
    Interceptor.flush();
    return watch.listeners.length;
}

function createWatch(): Watch {
    if (40 + HEAD_MAX > PAYLOAD_MAX) throw new Error("socket record payload too large");
    const { ring, drops, config } = sharedRing();
    const fds = Memory.alloc(FD_SLOTS * FD_SIZE);
    const libc = (name: string) => Module.findGlobalExportByName(name)!;
    const module = new CModule(SOURCE, {
        ring, drops, config, fds,
        getpid: libc("getpid"), clock_gettime: libc("clock_gettime"), sched_yield: libc("sched_yield"),
        usleep: libc("usleep"), gettid: libc("gettid"), getsockopt: libc("getsockopt"),
        getsockname: libc("getsockname"), getpeername: libc("getpeername"),
        __errno_location: libc("__errno_location"),
    });
    noteTracedIds([SOCKET_FUNC_ID]);
    return {
        module,
        fds,
        forgetAll: new NativeFunction(module.sock_forget_all, "void", []),
        listeners: [],
    };
}
