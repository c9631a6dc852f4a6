/* stress.c - point-to-point under load, with every payload and the order checked.
 *
 *   stress [MESSAGES [SEED]]      (default: 40000 messages job-wide, seed 1)
 *
 * The job runs in phases. In each phase every rank sends a random number of messages
 * (random destination, including itself; random tag; random size from 0 B to 1 MiB, mostly
 * small; random mode: Isend, Issend, Send, Ibsend, persistent Send_init/Start) on one of three
 * communicators (world, a duplicate, a split with reversed ranks). The plan of every rank is
 * a function of (seed, phase, sender), so each receiver knows exactly which messages are
 * coming to it, with their tags, sizes and contents, without any message about them.
 *
 * Receivers drain their messages in windows of receives, all of one kind so that any matching
 * order the standard allows completes every receive: specific (source, tag), (source,
 * ANY_TAG), (ANY_SOURCE, tag) or (ANY_SOURCE, ANY_TAG), by Irecv, Recv or Recv_init/Start,
 * completed by Waitall, Waitany, Waitsome, Testall, Testany or Wait in reverse; single
 * Probe/Iprobe + Recv and Mprobe/Improbe + Mrecv/Imrecv steps; receives cancelled before any
 * message can match them (must be cancelled) and receives cancelled right after posting
 * (either outcome, checked). After a window, its receives are checked in posting order
 * against the plan: the message a receive got must be the earliest unmatched one from its
 * source that matches its pattern (the non-overtaking rule), with the planned tag and size,
 * every byte as sent, and no byte written past the message.
 *
 * A barrier ends each phase. The last line is rank 0's summary; every rank prints OK or its
 * failures. No writable globals (see ct.h).
 */
#include "ct.h"
#include <stdint.h>

#define NEVER_TAG 32767 /* no message carries it */
#define MAX_WIN 16
#define GUARD 16
#define AVG_MSGS 24 /* messages a rank sends per phase, on average */

/* ---- deterministic random numbers (splitmix64) ---- */

typedef struct {
    uint64_t s;
} rng_t;

static inline uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rnd(rng_t *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return mix64(r->s);
}

static inline int below(rng_t *r, int n)
{
    return (int) (rnd(r) % (uint64_t) n);
}

/* ---- the plan ---- */

enum { M_ISEND, M_ISSEND, M_SEND, M_IBSEND, M_PERSIST };

typedef struct {
    int dest, tag, size, mode, seq;
} plan_t;

/* Sizes: 0..16 B (40%), ..1 KiB (40%), ..16 KiB (15%), ..128 KiB (4.5%), ..1 MiB (0.5%). */
static int pick_size(rng_t *r)
{
    int x = below(r, 1000);
    if (x < 400)
        return below(r, 17);
    if (x < 800)
        return 17 + below(r, 1008);
    if (x < 950)
        return 1025 + below(r, 15360);
    if (x < 995)
        return 16385 + below(r, 114688);
    if (x < 998)
        return 131073 + below(r, (1 << 20) - 131073);
    return 1 << 20;
}

/* Messages sender `s` sends in `phase` (into out[], room for 2*AVG_MSGS); `seqs` is scratch
 * of `size` ints. */
static int make_plan(uint64_t seed, int phase, int s, int size, plan_t *out, int *seqs)
{
    rng_t r = {mix64(seed ^ mix64(((uint64_t) phase << 20) ^ (uint64_t) s))};
    int n = 1 + below(&r, 2 * AVG_MSGS - 1);
    memset(seqs, 0, sizeof(int) * (size_t) size);
    for (int i = 0; i < n; i++) {
        plan_t *m = &out[i];
        m->dest = below(&r, size);
        m->tag = below(&r, 10) < 8 ? below(&r, 4) : below(&r, NEVER_TAG);
        m->size = pick_size(&r);
        int x = below(&r, 100);
        m->mode = x < 55   ? M_ISEND
                  : x < 70 ? M_ISSEND
                  : x < 82 ? (m->size <= 256 ? M_SEND : M_ISEND)
                  : x < 90 ? (m->size <= 4096 ? M_IBSEND : M_ISEND)
                           : M_PERSIST;
        m->seq = seqs[m->dest]++;
    }
    return n;
}

static uint64_t msg_key(uint64_t seed, int phase, int src, int dst, int seq)
{
    return mix64(seed ^ mix64(((uint64_t) phase << 40) ^ ((uint64_t) src << 20) ^ (uint64_t) dst) ^
                 ((uint64_t) seq << 1));
}

/* Contents of a message: its sequence number and key in the first 8 bytes, then random. */
static void fill(unsigned char *p, int size, uint64_t key, int seq)
{
    rng_t r = {key};
    int i = 0;
    if (size >= 8) {
        uint32_t h[2] = {(uint32_t) seq, (uint32_t) key};
        memcpy(p, h, 8);
        i = 8;
    }
    for (; i + 8 <= size; i += 8) {
        uint64_t w = rnd(&r);
        memcpy(p + i, &w, 8);
    }
    if (i < size) {
        uint64_t w = rnd(&r);
        memcpy(p + i, &w, (size_t) (size - i));
    }
}

/* ---- receiving ---- */

typedef struct {
    int src, seq, tag, size;
    char matched, reserved;
} in_t;

typedef struct {
    int psrc, ptag; /* the pattern */
    unsigned char *buf;
    int cap;
    MPI_Status st;
    int cancelled, may_cancel;
    int probed, probe_count; /* probe steps: what the probe said */
} rec_t;

/* Everything a rank needs, in one place (no globals). */
typedef struct {
    int rank, size, errs;
    uint64_t seed;
    MPI_Comm comm;
    int crank, phase;
    in_t *in;   /* messages coming to this rank this phase, grouped by source, in order */
    int *first; /* in[first[s] .. first[s+1]) come from source s */
    int nin, unmatched;
    unsigned char *scratch;
    rng_t r;
    long long checked, bytes;
} ctx_t;

#define XCHECK(cond, ...)                                                                  \
    do {                                                                                   \
        if (!(cond))                                                                       \
            ct_fail(x->rank, &x->errs, __LINE__, __VA_ARGS__);                             \
    } while (0)

/* Earliest unmatched message from `src` matching tag `tag` (or any), or -1. */
static int earliest(ctx_t *x, int src, int tag)
{
    for (int i = x->first[src]; i < x->first[src + 1]; i++)
        if (!x->in[i].matched && (tag == MPI_ANY_TAG || x->in[i].tag == tag))
            return i;
    return -1;
}

static int matches(const in_t *m, int psrc, int ptag)
{
    return (psrc == MPI_ANY_SOURCE || m->src == psrc) && (ptag == MPI_ANY_TAG || m->tag == ptag);
}

/* Largest unmatched message a receive with this pattern could get. */
static int capacity(ctx_t *x, int psrc, int ptag)
{
    int cap = 0;
    for (int i = 0; i < x->nin; i++)
        if (!x->in[i].matched && matches(&x->in[i], psrc, ptag) && x->in[i].size > cap)
            cap = x->in[i].size;
    return cap;
}

/* A random unmatched, unreserved message (reserved now), or -1. */
static int reserve_one(ctx_t *x)
{
    int free = 0;
    for (int i = 0; i < x->nin; i++)
        free += !x->in[i].matched && !x->in[i].reserved;
    if (free == 0)
        return -1;
    int k = below(&x->r, free);
    for (int i = 0; i < x->nin; i++)
        if (!x->in[i].matched && !x->in[i].reserved && k-- == 0) {
            x->in[i].reserved = 1;
            return i;
        }
    return -1;
}

static unsigned char *rec_buffer(int cap)
{
    unsigned char *b = ct_malloc((size_t) cap + GUARD);
    memset(b + cap, 0xA5, GUARD);
    return b;
}

/* Checks one completed receive against the plan and marks its message matched. */
static void verify(ctx_t *x, rec_t *c)
{
    int src = c->st.MPI_SOURCE, tag = c->st.MPI_TAG, count = -1;
    MPI_Get_count(&c->st, MPI_BYTE, &count);
    XCHECK(src >= 0 && src < x->size, "phase %d: status source %d", x->phase, src);
    if (src < 0 || src >= x->size)
        return;
    XCHECK(c->psrc == MPI_ANY_SOURCE || src == c->psrc, "phase %d: source %d for a receive from %d", x->phase,
           src, c->psrc);
    XCHECK(c->ptag == MPI_ANY_TAG || tag == c->ptag, "phase %d: tag %d for a receive of tag %d", x->phase, tag,
           c->ptag);
    for (int g = 0; g < GUARD; g++)
        if (c->buf[c->cap + g] != 0xA5) {
            XCHECK(0, "phase %d: receive of capacity %d from %d wrote past its buffer", x->phase, c->cap, src);
            break;
        }
    int k = earliest(x, src, c->ptag);
    XCHECK(k >= 0, "phase %d: a message from %d (tag %d, %d B) that was not sent", x->phase, src, tag, count);
    if (k < 0)
        return;
    in_t *m = &x->in[k];
    if (c->probed)
        XCHECK(c->probe_count == count, "phase %d: probe said %d B, receive got %d B", x->phase, c->probe_count,
               count);
    if (m->tag != tag || m->size != count) {
        int seq = -1;
        if (count >= 8)
            memcpy(&seq, c->buf, sizeof seq);
        XCHECK(0,
               "phase %d: from %d with pattern (%d,%d): got tag %d, %d B (seq %d); the earliest unmatched is "
               "seq %d, tag %d, %d B (overtaken?)",
               x->phase, src, c->psrc, c->ptag, tag, count, seq, m->seq, m->tag, m->size);
        /* Mark what was really received, so one fault is not reported again and again. */
        for (int i = x->first[src]; i < x->first[src + 1]; i++)
            if (x->in[i].seq == seq && !x->in[i].matched)
                k = i;
        x->in[k].matched = 1;
        x->unmatched--;
        return;
    }
    fill(x->scratch, count, msg_key(x->seed, x->phase, src, x->crank, m->seq), m->seq);
    if (count > 0 && memcmp(x->scratch, c->buf, (size_t) count) != 0) {
        int at = 0;
        while (x->scratch[at] == c->buf[at])
            at++;
        XCHECK(0, "phase %d: message seq %d from %d (%d B): byte %d differs", x->phase, m->seq, src, count, at);
    }
    m->matched = 1;
    x->unmatched--;
    x->checked++;
    x->bytes += count;
}

/* Completes the window's requests by one of several methods; statuses into recs. Entries
 * that were MPI_REQUEST_NULL (blocking receives) already have theirs. */
static void complete(ctx_t *x, MPI_Request *reqs, rec_t *recs, int n)
{
    MPI_Status sts[MAX_WIN];
    int method = below(&x->r, 6), rc, idx, flag, done = 0, outc, ids[MAX_WIN], active[MAX_WIN];
    for (int i = 0; i < n; i++) {
        active[i] = reqs[i] != MPI_REQUEST_NULL;
        done += !active[i];
    }
    switch (method) {
    case 0:
        rc = MPI_Waitall(n, reqs, sts);
        XCHECK(rc == MPI_SUCCESS, "MPI_Waitall: error class %d", ct_class(rc));
        for (int i = 0; i < n; i++)
            if (active[i])
                recs[i].st = sts[i];
        break;
    case 1:
        while (done < n) {
            rc = MPI_Waitany(n, reqs, &idx, &sts[0]);
            XCHECK(rc == MPI_SUCCESS && idx != MPI_UNDEFINED, "MPI_Waitany: class %d, index %d", ct_class(rc), idx);
            if (rc != MPI_SUCCESS || idx == MPI_UNDEFINED)
                break;
            recs[idx].st = sts[0];
            done++;
        }
        break;
    case 2:
        while (done < n) {
            rc = MPI_Waitsome(n, reqs, &outc, ids, sts);
            XCHECK(rc == MPI_SUCCESS && outc != MPI_UNDEFINED, "MPI_Waitsome: class %d", ct_class(rc));
            if (rc != MPI_SUCCESS || outc == MPI_UNDEFINED)
                break;
            for (int j = 0; j < outc; j++)
                recs[ids[j]].st = sts[j];
            done += outc;
        }
        break;
    case 3:
        for (flag = 0; !flag;) {
            rc = MPI_Testall(n, reqs, &flag, sts);
            XCHECK(rc == MPI_SUCCESS, "MPI_Testall: class %d", ct_class(rc));
            if (rc != MPI_SUCCESS)
                break;
        }
        for (int i = 0; i < n; i++)
            if (active[i])
                recs[i].st = sts[i];
        break;
    case 4:
        while (done < n) {
            rc = MPI_Testany(n, reqs, &idx, &flag, &sts[0]);
            XCHECK(rc == MPI_SUCCESS, "MPI_Testany: class %d", ct_class(rc));
            if (rc != MPI_SUCCESS)
                break;
            if (flag && idx != MPI_UNDEFINED) {
                recs[idx].st = sts[0];
                done++;
            }
            XCHECK(!flag || idx != MPI_UNDEFINED, "MPI_Testany: no active request left, %d of %d done", done, n);
            if (flag && idx == MPI_UNDEFINED)
                break;
        }
        break;
    default:
        for (int i = n - 1; i >= 0; i--)
            if (active[i]) {
                rc = MPI_Wait(&reqs[i], &recs[i].st);
                XCHECK(rc == MPI_SUCCESS, "MPI_Wait: class %d", ct_class(rc));
            }
        break;
    }
}

/* One window of receives of one kind (0: (src,tag), 1: (src,ANY), 2: (ANY,tag), 3: any). */
static void window(ctx_t *x, int kind)
{
    MPI_Request reqs[MAX_WIN], persist[MAX_WIN];
    rec_t recs[MAX_WIN];
    int n = 0, want = 1 + below(&x->r, MAX_WIN), budget = 4 << 20;
    memset(recs, 0, sizeof recs);
    while (n < want) {
        int k = reserve_one(x);
        if (k < 0)
            break;
        rec_t *c = &recs[n];
        c->psrc = kind < 2 ? x->in[k].src : MPI_ANY_SOURCE;
        c->ptag = kind == 0 || kind == 2 ? x->in[k].tag : MPI_ANY_TAG;
        c->cap = capacity(x, c->psrc, c->ptag);
        if (n > 0 && c->cap > budget)
            break;
        budget -= c->cap;
        c->buf = rec_buffer(c->cap);
        /* MPI_Status fields are only filled in on completion: mark them unset. */
        c->st.MPI_TAG = MPI_ANY_TAG;
        persist[n] = MPI_REQUEST_NULL;
        int how = below(&x->r, 20), rc;
        if (how < 3) {
            rc = MPI_Recv(c->buf, c->cap, MPI_BYTE, c->psrc, c->ptag, x->comm, &c->st);
            XCHECK(rc == MPI_SUCCESS, "MPI_Recv: class %d", ct_class(rc));
            reqs[n] = MPI_REQUEST_NULL;
        } else if (how < 5) {
            rc = MPI_Recv_init(c->buf, c->cap, MPI_BYTE, c->psrc, c->ptag, x->comm, &persist[n]);
            XCHECK(rc == MPI_SUCCESS, "MPI_Recv_init: class %d", ct_class(rc));
            rc = MPI_Start(&persist[n]);
            XCHECK(rc == MPI_SUCCESS, "MPI_Start: class %d", ct_class(rc));
            reqs[n] = persist[n];
        } else {
            rc = MPI_Irecv(c->buf, c->cap, MPI_BYTE, c->psrc, c->ptag, x->comm, &reqs[n]);
            XCHECK(rc == MPI_SUCCESS, "MPI_Irecv: class %d", ct_class(rc));
            if (how == 5 && kind == 3) {
                /* Cancelled at once: either nothing matched it yet (cancelled) or it
                 * completes normally. */
                c->may_cancel = 1;
                MPI_Cancel(&reqs[n]);
            }
        }
        n++;
    }
    complete(x, reqs, recs, n);
    for (int i = 0; i < n; i++) {
        rec_t *c = &recs[i];
        if (c->may_cancel) {
            int flag = 0;
            MPI_Test_cancelled(&c->st, &flag);
            c->cancelled = flag;
        }
        if (!c->cancelled)
            verify(x, c);
        if (persist[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&persist[i]);
        free(c->buf);
    }
    for (int i = 0; i < x->nin; i++)
        x->in[i].reserved = 0;
}

/* Probe (blocking or polling) then receive what it found, or matched probe + receive. */
static void probe_step(ctx_t *x)
{
    int k = reserve_one(x);
    if (k < 0)
        return;
    x->in[k].reserved = 0;
    rec_t c;
    memset(&c, 0, sizeof c);
    int v = below(&x->r, 4), op = below(&x->r, 4), flag = 0, rc, count = -1;
    c.psrc = v & 1 ? MPI_ANY_SOURCE : x->in[k].src;
    c.ptag = v & 2 ? MPI_ANY_TAG : x->in[k].tag;
    MPI_Status pst;
    MPI_Message msg = MPI_MESSAGE_NULL;
    if (op == 0)
        rc = MPI_Probe(c.psrc, c.ptag, x->comm, &pst);
    else if (op == 1)
        do
            rc = MPI_Iprobe(c.psrc, c.ptag, x->comm, &flag, &pst);
        while (rc == MPI_SUCCESS && !flag);
    else if (op == 2)
        rc = MPI_Mprobe(c.psrc, c.ptag, x->comm, &msg, &pst);
    else
        do
            rc = MPI_Improbe(c.psrc, c.ptag, x->comm, &flag, &msg, &pst);
        while (rc == MPI_SUCCESS && !flag);
    XCHECK(rc == MPI_SUCCESS, "probe %d: class %d", op, ct_class(rc));
    if (rc != MPI_SUCCESS)
        return;
    MPI_Get_count(&pst, MPI_BYTE, &count);
    c.probed = 1;
    c.probe_count = count;
    c.cap = count;
    c.buf = rec_buffer(count);
    if (op < 2) {
        rc = MPI_Recv(c.buf, count, MPI_BYTE, pst.MPI_SOURCE, pst.MPI_TAG, x->comm, &c.st);
    } else if (op == 2) {
        rc = MPI_Mrecv(c.buf, count, MPI_BYTE, &msg, &c.st);
    } else {
        MPI_Request q;
        rc = MPI_Imrecv(c.buf, count, MPI_BYTE, &msg, &q);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&q, &c.st);
    }
    XCHECK(rc == MPI_SUCCESS, "receive after probe %d: class %d", op, ct_class(rc));
    XCHECK(c.st.MPI_SOURCE == pst.MPI_SOURCE && c.st.MPI_TAG == pst.MPI_TAG,
           "phase %d: probe found (%d,%d), receive got (%d,%d)", x->phase, pst.MPI_SOURCE, pst.MPI_TAG,
           c.st.MPI_SOURCE, c.st.MPI_TAG);
    if (rc == MPI_SUCCESS)
        verify(x, &c);
    free(c.buf);
}

/* Receives that nothing can match must be cancelled. */
static void cancel_step(ctx_t *x)
{
    MPI_Request q;
    MPI_Status st;
    char b[4];
    int flag = 0, src = below(&x->r, 2) ? MPI_ANY_SOURCE : below(&x->r, x->size);
    MPI_Irecv(b, 4, MPI_BYTE, src, NEVER_TAG, x->comm, &q);
    MPI_Cancel(&q);
    MPI_Wait(&q, &st);
    MPI_Test_cancelled(&st, &flag);
    XCHECK(flag, "phase %d: an Irecv nothing matches was not cancelled", x->phase);
}

/* ---- one phase ---- */

static void phase(ctx_t *x, plan_t *plan, int *seqs, MPI_Comm *comms)
{
    int P = x->size;
    x->comm = comms[mix64(x->seed + (uint64_t) x->phase) % 3];
    MPI_Comm_rank(x->comm, &x->crank);
    x->r.s = mix64(x->seed ^ ((uint64_t) x->crank << 32) ^ (uint64_t) x->phase ^ 0x5eed);

    /* What comes to me: every sender's plan, kept in order per source. */
    x->nin = 0;
    for (int s = 0; s < P; s++) {
        x->first[s] = x->nin;
        int n = make_plan(x->seed, x->phase, s, P, plan, seqs);
        for (int i = 0; i < n; i++)
            if (plan[i].dest == x->crank) {
                in_t *m = &x->in[x->nin++];
                m->src = s;
                m->seq = plan[i].seq;
                m->tag = plan[i].tag;
                m->size = plan[i].size;
                m->matched = m->reserved = 0;
            }
    }
    x->first[P] = x->nin;
    x->unmatched = x->nin;

    /* Send everything first (nothing here waits for a receiver). */
    int n = make_plan(x->seed, x->phase, x->crank, P, plan, seqs);
    MPI_Request *reqs = ct_malloc(sizeof(MPI_Request) * (size_t) n);
    unsigned char **bufs = ct_malloc(sizeof(unsigned char *) * (size_t) n);
    for (int i = 0; i < n; i++) {
        plan_t *m = &plan[i];
        bufs[i] = ct_malloc((size_t) m->size);
        fill(bufs[i], m->size, msg_key(x->seed, x->phase, x->crank, m->dest, m->seq), m->seq);
        int rc;
        reqs[i] = MPI_REQUEST_NULL;
        switch (m->mode) {
        case M_ISSEND:
            rc = MPI_Issend(bufs[i], m->size, MPI_BYTE, m->dest, m->tag, x->comm, &reqs[i]);
            break;
        case M_SEND:
            rc = MPI_Send(bufs[i], m->size, MPI_BYTE, m->dest, m->tag, x->comm);
            break;
        case M_IBSEND:
            rc = MPI_Ibsend(bufs[i], m->size, MPI_BYTE, m->dest, m->tag, x->comm, &reqs[i]);
            break;
        case M_PERSIST:
            rc = MPI_Send_init(bufs[i], m->size, MPI_BYTE, m->dest, m->tag, x->comm, &reqs[i]);
            if (rc == MPI_SUCCESS)
                rc = MPI_Start(&reqs[i]);
            break;
        default:
            rc = MPI_Isend(bufs[i], m->size, MPI_BYTE, m->dest, m->tag, x->comm, &reqs[i]);
        }
        XCHECK(rc == MPI_SUCCESS, "send mode %d of %d B: class %d", m->mode, m->size, ct_class(rc));
    }

    /* Drain. */
    while (x->unmatched > 0) {
        int what = below(&x->r, 100);
        if (what < 8)
            probe_step(x);
        else if (what < 11)
            cancel_step(x);
        else
            window(x, what < 35 ? 0 : what < 55 ? 1 : what < 75 ? 2 : 3);
    }

    int rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    XCHECK(rc == MPI_SUCCESS, "MPI_Waitall on sends: class %d", ct_class(rc));
    for (int i = 0; i < n; i++) {
        if (plan[i].mode == M_PERSIST)
            MPI_Request_free(&reqs[i]);
        free(bufs[i]);
    }
    free(bufs);
    free(reqs);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    ctx_t ctx, *x = &ctx;
    memset(x, 0, sizeof ctx);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &x->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &x->size);
    long long target = argc > 1 ? atoll(argv[1]) : 40000;
    x->seed = argc > 2 ? (uint64_t) atoll(argv[2]) : 1;
    int P = x->size;

    MPI_Comm comms[3];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, P - 1 - x->rank, &comms[2]);

    int bsize = 2 * AVG_MSGS * (4096 + MPI_BSEND_OVERHEAD);
    void *bbuf = ct_malloc((size_t) bsize);
    MPI_Buffer_attach(bbuf, bsize);

    plan_t *plan = ct_malloc(sizeof(plan_t) * 2 * AVG_MSGS);
    int *seqs = ct_malloc(sizeof(int) * (size_t) P);
    x->in = ct_malloc(sizeof(in_t) * 2 * AVG_MSGS * (size_t) P);
    x->first = ct_malloc(sizeof(int) * (size_t) (P + 1));
    x->scratch = ct_malloc(1 << 20);

    long long phases = target / ((long long) P * AVG_MSGS) + 1;
    for (x->phase = 0; x->phase < phases; x->phase++)
        phase(x, plan, seqs, comms);

    long long mine[3] = {x->checked, x->bytes, x->errs}, all[3];
    MPI_Allreduce(mine, all, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (x->rank == 0)
        printf("rank 0: stress: %lld phases, %lld messages (%lld bytes) checked, %lld errors\n", phases, all[0],
               all[1], all[2]);

    MPI_Buffer_detach(&bbuf, &bsize);
    free(bbuf);
    free(plan);
    free(seqs);
    free(x->in);
    free(x->first);
    free(x->scratch);
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    return ct_finish(x->rank, x->errs);
}
