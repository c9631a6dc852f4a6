/* badinput.c - every exported MPI function, family by family, called with each kind of
 * invalid argument the standard names, under MPI_ERRORS_RETURN: null and invalid handles,
 * freed handles, negative counts, out-of-range ranks, roots and tags, an operation that does
 * not apply to the type, uncommitted datatypes, null buffers with count > 0, null output
 * pointers, MPI_Init twice and calls after MPI_Finalize. Each line of the table names the call
 * and the error class the standard gives that mistake; a different class (or a crash, or a
 * hang) is a failure. After the table, traffic must still flow (point-to-point ring,
 * collectives, new communicators), and nothing the failed calls touched may have changed.
 *
 * Toucan only (badinput.expect): MPICH 4.0.2 answers some lines with another class or does
 * not check the argument (README, "Deviations"). Where the standard names no class, the
 * table follows one rule: a negative count of data elements (block lengths too) is
 * MPI_ERR_COUNT, a negative array length or number of dimensions/nodes MPI_ERR_ARG, negative
 * dims MPI_ERR_DIMS, a Cartesian grid larger than the group MPI_ERR_ARG in MPI_Cart_create (as
 * MPICH) and MPI_ERR_DIMS in MPI_Cart_map, a null pointer for an
 * argument MPI_ERR_ARG, an out-of-range rank of a communicator, group or process grid
 * MPI_ERR_RANK (an edge to a node a graph does not have is MPI_ERR_ARG). compat-tests/badinput-coverage.sh lists
 * exported functions the table does not call.
 */
#define CT_MAX_REPORT 1000 /* report every line that fails */
#include "ct.h"
#include <stdint.h>
#include <unistd.h>

/* An invalid handle of any kind: not null, not predefined, never returned by MPI. */
#define BOGUS(type) ((type) (intptr_t) 0x7ff1)

typedef struct {
    int rank, size, errs, lines;
} bx_t;

/* MPI 4.1 added MPI_ERR_ERRHANDLER and MPI_Type_get_value_index (MPICH 4.0 has neither:
 * there an invalid error handler is MPI_ERR_ARG). */
#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
#define HAVE_MPI41 1
#define ERR_ERRHANDLER MPI_ERR_ERRHANDLER
#else
#define HAVE_MPI41 0
#define ERR_ERRHANDLER MPI_ERR_ARG
#endif

/* Bad handles are tried in the order null, invalid, freed. MPICH 4.0 does not check invalid
 * or freed handles (it asserts or crashes), so built against an older mpi.h only the null
 * handles are tried. */
#define NBAD (HAVE_MPI41 ? 3 : 1)

static const char *cname(int cls)
{
#define C(k)                                                                                       \
    if (cls == k)                                                                                  \
        return #k;
    C(MPI_SUCCESS) C(MPI_ERR_BUFFER) C(MPI_ERR_COUNT) C(MPI_ERR_TYPE) C(MPI_ERR_TAG) C(MPI_ERR_COMM)
    C(MPI_ERR_RANK) C(MPI_ERR_REQUEST) C(MPI_ERR_ROOT) C(MPI_ERR_GROUP) C(MPI_ERR_OP) C(MPI_ERR_TOPOLOGY)
    C(MPI_ERR_DIMS) C(MPI_ERR_ARG) C(MPI_ERR_UNKNOWN) C(MPI_ERR_TRUNCATE) C(MPI_ERR_OTHER) C(MPI_ERR_INTERN)
    C(MPI_ERR_IN_STATUS) C(MPI_ERR_PENDING) C(MPI_ERR_INFO) C(MPI_ERR_INFO_KEY) C(MPI_ERR_INFO_VALUE)
    C(MPI_ERR_INFO_NOKEY) C(MPI_ERR_KEYVAL) C(MPI_ERR_NO_MEM) C(MPI_ERR_FILE) C(MPI_ERR_AMODE) C(MPI_ERR_UNSUPPORTED_DATAREP) C(MPI_ERR_IO)
#if HAVE_MPI41
    C(MPI_ERR_ERRHANDLER)
#endif
    /* issue 18 (RMA) */
    C(MPI_ERR_WIN) C(MPI_ERR_RMA_SYNC) C(MPI_ERR_RMA_RANGE) C(MPI_ERR_RMA_FLAVOR) C(MPI_ERR_RMA_ATTACH)
    C(MPI_ERR_LOCKTYPE) C(MPI_ERR_ASSERT) C(MPI_ERR_DISP) C(MPI_ERR_SIZE)
#undef C
    return "(another class)";
}

static void expect(bx_t *x, int line, const char *call, int rc, int want)
{
    int cls = rc;
    x->lines++;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (cls != want)
        ct_fail(x->rank, &x->errs, line, "%s: %s (%d), expected %s", call, cname(cls), cls, cname(want));
}

/* T(class, call): the call must return an error of that class (MPI_SUCCESS: succeed). */
#define T(cls, call) expect(x, __LINE__, #call, (call), (cls))

static int dummy_copy(MPI_Comm c, int k, void *e, void *in, void *out, int *flag)
{
    (void) c, (void) k, (void) e, (void) in, (void) out;
    *flag = 0;
    return MPI_SUCCESS;
}

static void user_op_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) in, (void) inout, (void) len, (void) dt;
}

static void eh_fn(MPI_Comm *c, int *code, ...)
{
    (void) c, (void) code;
}

/* ---- environment, errors, error handlers ---- */

static void env_family(bx_t *x, int *argc, char ***argv)
{
    int v, sv, len, flag;
    char s[MPI_MAX_LIBRARY_VERSION_STRING];
    T(MPI_ERR_OTHER, MPI_Init(argc, argv));
    T(MPI_ERR_OTHER, MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &v));
    T(MPI_ERR_ARG, MPI_Initialized(NULL));
    T(MPI_ERR_ARG, MPI_Finalized(NULL));
    T(MPI_ERR_ARG, MPI_Query_thread(NULL));
    T(MPI_ERR_ARG, MPI_Is_thread_main(NULL));
    T(MPI_ERR_ARG, MPI_Get_version(NULL, &sv));
    T(MPI_ERR_ARG, MPI_Get_version(&v, NULL));
    T(MPI_ERR_ARG, MPI_Get_library_version(NULL, &len));
    T(MPI_ERR_ARG, MPI_Get_library_version(s, NULL));
    T(MPI_ERR_ARG, MPI_Get_processor_name(NULL, &len));
    T(MPI_ERR_ARG, MPI_Get_processor_name(s, NULL));
    T(MPI_SUCCESS, MPI_Initialized(&flag));
    (void) MPI_Wtime(); /* no arguments to get wrong */
    (void) MPI_Wtick();
}

static void error_family(bx_t *x)
{
    int cls, len, code, uclass;
    char s[MPI_MAX_ERROR_STRING];
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL, eh2;
    T(MPI_ERR_ARG, MPI_Error_class(987654, &cls));
    T(MPI_ERR_ARG, MPI_Error_class(MPI_ERR_COMM, NULL));
    T(MPI_ERR_ARG, MPI_Error_string(987654, s, &len));
    T(MPI_ERR_ARG, MPI_Error_string(MPI_ERR_COMM, NULL, &len));
    T(MPI_ERR_ARG, MPI_Error_string(MPI_ERR_COMM, s, NULL));
    T(MPI_ERR_ARG, MPI_Add_error_class(NULL));
    T(MPI_ERR_ARG, MPI_Add_error_code(987654, &code));
    T(MPI_SUCCESS, MPI_Add_error_class(&uclass));
    T(MPI_ERR_ARG, MPI_Add_error_code(uclass, NULL));
    T(MPI_ERR_ARG, MPI_Add_error_string(MPI_ERR_COMM, "predefined classes keep their string"));
    T(MPI_ERR_ARG, MPI_Add_error_string(987654, "no such code"));
    T(MPI_ERR_ARG, MPI_Add_error_string(uclass, NULL));
    T(MPI_ERR_ARG, MPI_Comm_create_errhandler(NULL, &eh));
    T(MPI_ERR_ARG, MPI_Comm_create_errhandler(eh_fn, NULL));
    T(MPI_ERR_COMM, MPI_Comm_set_errhandler(MPI_COMM_NULL, MPI_ERRORS_RETURN));
    T(MPI_ERR_COMM, MPI_Comm_set_errhandler(BOGUS(MPI_Comm), MPI_ERRORS_RETURN));
    T(ERR_ERRHANDLER, MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRHANDLER_NULL));
    T(ERR_ERRHANDLER, MPI_Comm_set_errhandler(MPI_COMM_WORLD, BOGUS(MPI_Errhandler)));
    T(MPI_ERR_COMM, MPI_Comm_get_errhandler(MPI_COMM_NULL, &eh));
    T(MPI_ERR_ARG, MPI_Comm_get_errhandler(MPI_COMM_WORLD, NULL));
    T(MPI_ERR_COMM, MPI_Comm_call_errhandler(MPI_COMM_NULL, MPI_ERR_OTHER));
    T(MPI_ERR_ARG, MPI_Errhandler_free(NULL));
    eh = MPI_ERRHANDLER_NULL;
    T(ERR_ERRHANDLER, MPI_Errhandler_free(&eh));
    eh = BOGUS(MPI_Errhandler);
    T(ERR_ERRHANDLER, MPI_Errhandler_free(&eh));
    /* A freed handler handle is invalid. */
    T(MPI_SUCCESS, MPI_Comm_create_errhandler(eh_fn, &eh));
    eh2 = eh;
    T(MPI_SUCCESS, MPI_Errhandler_free(&eh));
    T(ERR_ERRHANDLER, MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh2));
    T(ERR_ERRHANDLER, MPI_Errhandler_free(&eh2));
    /* The handler is still ERRORS_RETURN. */
    T(MPI_SUCCESS, MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    if (eh != MPI_ERRORS_RETURN)
        ct_fail(x->rank, &x->errs, __LINE__, "the error handler of MPI_COMM_WORLD changed");
    MPI_Errhandler_free(&eh);
}

/* ---- communicators, groups, inter-communicators ---- */

static void comm_family(bx_t *x, MPI_Comm freed)
{
    int n, r, flag;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Comm c = MPI_COMM_NULL, world = MPI_COMM_WORLD, null = MPI_COMM_NULL;
    MPI_Group g, gnull = MPI_GROUP_NULL;
    MPI_Info info;
    MPI_Request q;
    MPI_Comm bad[3] = {MPI_COMM_NULL, BOGUS(MPI_Comm), freed};
    for (int i = 0; i < NBAD; i++) {
        MPI_Comm b = bad[i];
        T(MPI_ERR_COMM, MPI_Comm_size(b, &n));
        T(MPI_ERR_COMM, MPI_Comm_rank(b, &n));
        T(MPI_ERR_COMM, MPI_Comm_compare(b, world, &r));
        T(MPI_ERR_COMM, MPI_Comm_compare(world, b, &r));
        T(MPI_ERR_COMM, MPI_Comm_dup(b, &c));
        T(MPI_ERR_COMM, MPI_Comm_dup_with_info(b, MPI_INFO_NULL, &c));
        T(MPI_ERR_COMM, MPI_Comm_idup(b, &c, &q));
        T(MPI_ERR_COMM, MPI_Comm_idup_with_info(b, MPI_INFO_NULL, &c, &q));
        T(MPI_ERR_COMM, MPI_Comm_split(b, 0, 0, &c));
        T(MPI_ERR_COMM, MPI_Comm_split_type(b, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c));
        T(MPI_ERR_COMM, MPI_Comm_group(b, &g));
        T(MPI_ERR_COMM, MPI_Comm_set_name(b, "x"));
        T(MPI_ERR_COMM, MPI_Comm_get_name(b, name, &n));
        T(MPI_ERR_COMM, MPI_Comm_set_info(b, MPI_INFO_NULL));
        T(MPI_ERR_COMM, MPI_Comm_get_info(b, &info));
        T(MPI_ERR_COMM, MPI_Comm_test_inter(b, &flag));
        T(MPI_ERR_COMM, MPI_Comm_remote_size(b, &n));
        T(MPI_ERR_COMM, MPI_Comm_remote_group(b, &g));
        T(MPI_ERR_COMM, MPI_Intercomm_merge(b, 0, &c));
        T(MPI_ERR_COMM, MPI_Intercomm_create(b, 0, world, 0, 0, &c));
        T(MPI_ERR_COMM, MPI_Topo_test(b, &n));
    }
    T(MPI_ERR_ARG, MPI_Comm_size(world, NULL));
    T(MPI_ERR_ARG, MPI_Comm_rank(world, NULL));
    T(MPI_ERR_ARG, MPI_Comm_compare(world, world, NULL));
    T(MPI_ERR_ARG, MPI_Comm_dup(world, NULL));
    T(MPI_ERR_ARG, MPI_Comm_idup(world, &c, NULL));
    T(MPI_ERR_INFO, MPI_Comm_dup_with_info(world, BOGUS(MPI_Info), &c));
    T(MPI_ERR_ARG, MPI_Comm_split(world, -7, 0, &c));
    T(MPI_ERR_ARG, MPI_Comm_split(world, 0, 0, NULL));
    T(MPI_ERR_ARG, MPI_Comm_split_type(world, 12345, 0, MPI_INFO_NULL, &c));
    T(MPI_ERR_COMM, MPI_Comm_free(&null));
    c = MPI_COMM_WORLD;
    T(MPI_ERR_COMM, MPI_Comm_free(&c));
    c = MPI_COMM_SELF;
    T(MPI_ERR_COMM, MPI_Comm_free(&c));
    c = freed;
    T(MPI_ERR_COMM, MPI_Comm_free(&c));
    T(MPI_ERR_ARG, MPI_Comm_free(NULL));
    T(MPI_ERR_GROUP, MPI_Comm_create(world, gnull, &c));
    T(MPI_ERR_GROUP, MPI_Comm_create(world, BOGUS(MPI_Group), &c));
    T(MPI_ERR_GROUP, MPI_Comm_create_group(world, gnull, 0, &c));
    T(MPI_SUCCESS, MPI_Comm_group(world, &g));
    T(MPI_ERR_COMM, MPI_Comm_create(null, g, &c));
    T(MPI_ERR_COMM, MPI_Comm_create_group(null, g, 0, &c));
    T(MPI_ERR_TAG, MPI_Comm_create_group(world, g, -3, &c));
    T(MPI_ERR_ARG, MPI_Comm_group(world, NULL));
    T(MPI_ERR_ARG, MPI_Comm_set_name(world, NULL));
    T(MPI_ERR_ARG, MPI_Comm_get_name(world, NULL, &n));
    T(MPI_ERR_ARG, MPI_Comm_get_name(world, name, NULL));
    T(MPI_ERR_INFO, MPI_Comm_set_info(world, BOGUS(MPI_Info)));
    T(MPI_ERR_ARG, MPI_Comm_get_info(world, NULL));
    T(MPI_ERR_ARG, MPI_Comm_test_inter(world, NULL));
    T(MPI_ERR_COMM, MPI_Comm_remote_size(world, &n));
    T(MPI_ERR_COMM, MPI_Comm_remote_group(world, &g));
    if (HAVE_MPI41) /* MPICH 4.0 asserts here */
        T(MPI_ERR_COMM, MPI_Intercomm_merge(world, 0, &c));
    T(MPI_ERR_RANK, MPI_Intercomm_create(world, x->size, world, 0, 0, &c));
    T(MPI_ERR_RANK, MPI_Intercomm_create(world, -1, world, 0, 0, &c));
    T(MPI_ERR_TAG, MPI_Intercomm_create(world, 0, world, 0, -5, &c));
    T(MPI_ERR_ARG, MPI_Topo_test(world, NULL));
    MPI_Group_free(&g);
}

static void group_family(bx_t *x)
{
    int n, r, out[2], ranks[2];
    int range[1][3];
    MPI_Group g, h, freed, gnull = MPI_GROUP_NULL, bad[3];
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &freed);
    MPI_Group_free(&freed);
    MPI_Comm_group(MPI_COMM_WORLD, &freed); /* a handle value still live: use a copy */
    h = freed;
    MPI_Group_free(&h);
    bad[0] = MPI_GROUP_NULL;
    bad[1] = BOGUS(MPI_Group);
    bad[2] = freed;
    for (int i = 0; i < NBAD; i++) {
        MPI_Group b = bad[i];
        T(MPI_ERR_GROUP, MPI_Group_size(b, &n));
        T(MPI_ERR_GROUP, MPI_Group_rank(b, &n));
        T(MPI_ERR_GROUP, MPI_Group_compare(b, g, &r));
        T(MPI_ERR_GROUP, MPI_Group_compare(g, b, &r));
        T(MPI_ERR_GROUP, MPI_Group_union(b, g, &h));
        T(MPI_ERR_GROUP, MPI_Group_intersection(g, b, &h));
        T(MPI_ERR_GROUP, MPI_Group_difference(b, g, &h));
        ranks[0] = 0;
        T(MPI_ERR_GROUP, MPI_Group_incl(b, 1, ranks, &h));
        T(MPI_ERR_GROUP, MPI_Group_excl(b, 1, ranks, &h));
        range[0][0] = 0, range[0][1] = 0, range[0][2] = 1;
        T(MPI_ERR_GROUP, MPI_Group_range_incl(b, 1, range, &h));
        T(MPI_ERR_GROUP, MPI_Group_range_excl(b, 1, range, &h));
        T(MPI_ERR_GROUP, MPI_Group_translate_ranks(b, 1, ranks, g, out));
        T(MPI_ERR_GROUP, MPI_Group_translate_ranks(g, 1, ranks, b, out));
        h = b;
        T(MPI_ERR_GROUP, MPI_Group_free(&h));
    }
    T(MPI_ERR_ARG, MPI_Group_size(g, NULL));
    T(MPI_ERR_ARG, MPI_Group_rank(g, NULL));
    T(MPI_ERR_ARG, MPI_Group_compare(g, g, NULL));
    T(MPI_ERR_ARG, MPI_Group_free(NULL));
    ranks[0] = x->size;
    T(MPI_ERR_RANK, MPI_Group_incl(g, 1, ranks, &h));
    ranks[0] = -1;
    T(MPI_ERR_RANK, MPI_Group_excl(g, 1, ranks, &h));
    ranks[0] = 0, ranks[1] = 0;
    if (x->size > 1)
        T(MPI_ERR_RANK, MPI_Group_incl(g, 2, ranks, &h)); /* a rank twice */
    T(MPI_ERR_ARG, MPI_Group_incl(g, -1, ranks, &h));
    T(MPI_ERR_ARG, MPI_Group_incl(g, 1, ranks, NULL));
    range[0][0] = 0, range[0][1] = x->size, range[0][2] = 1;
    T(MPI_ERR_RANK, MPI_Group_range_incl(g, 1, range, &h));
    range[0][0] = 0, range[0][1] = 0, range[0][2] = 0;
    T(MPI_ERR_ARG, MPI_Group_range_incl(g, 1, range, &h));
    range[0][0] = -1, range[0][1] = 0, range[0][2] = 1;
    T(MPI_ERR_RANK, MPI_Group_range_excl(g, 1, range, &h));
    ranks[0] = x->size;
    T(MPI_ERR_RANK, MPI_Group_translate_ranks(g, 1, ranks, g, out));
    T(MPI_ERR_ARG, MPI_Group_translate_ranks(g, 1, NULL, g, out));
    T(MPI_ERR_ARG, MPI_Group_union(g, g, NULL));
    T(MPI_ERR_GROUP, MPI_Group_free(&gnull));
    MPI_Group_free(&g);
}

/* ---- point-to-point ---- */

/* The argument mistakes every send shares: bad communicator, count, type, rank, tag, buffer. */
typedef int (*send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*isend_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);

static void send_cases(bx_t *x, const char *what, int line, void *b, int (*call)(void *ctx, const void *, int, MPI_Datatype, int, int, MPI_Comm),
                       void *ctx, MPI_Datatype unc, MPI_Datatype freedt, MPI_Comm freedc)
{
    struct {
        int cls;
        const void *buf;
        int count;
        MPI_Datatype dt;
        int dest, tag;
        MPI_Comm comm;
        const char *why;
    } c[] = {
        {MPI_ERR_COMM, b, 1, MPI_INT, 0, 0, MPI_COMM_NULL, "MPI_COMM_NULL"},
        {MPI_ERR_COMM, b, 1, MPI_INT, 0, 0, BOGUS(MPI_Comm), "invalid communicator"},
        {MPI_ERR_COMM, b, 1, MPI_INT, 0, 0, freedc, "freed communicator"},
        {MPI_ERR_COUNT, b, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, "count -1"},
        {MPI_ERR_TYPE, b, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, "MPI_DATATYPE_NULL"},
        {MPI_ERR_TYPE, b, 1, BOGUS(MPI_Datatype), 0, 0, MPI_COMM_WORLD, "invalid datatype"},
        {MPI_ERR_TYPE, b, 1, unc, 0, 0, MPI_COMM_WORLD, "uncommitted datatype"},
        {MPI_ERR_TYPE, b, 1, freedt, 0, 0, MPI_COMM_WORLD, "freed datatype"},
        {MPI_ERR_RANK, b, 1, MPI_INT, x->size, 0, MPI_COMM_WORLD, "rank = size"},
        {MPI_ERR_RANK, b, 1, MPI_INT, -5, 0, MPI_COMM_WORLD, "rank -5"},
        {MPI_ERR_RANK, b, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, "MPI_ANY_SOURCE as destination"},
        {MPI_ERR_TAG, b, 1, MPI_INT, 0, -1, MPI_COMM_WORLD, "tag -1"},
        {MPI_ERR_TAG, b, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, "MPI_ANY_TAG as send tag"},
        {MPI_ERR_BUFFER, NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, "null buffer, count 1"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char label[200];
        if (NBAD == 1 && (c[i].comm == BOGUS(MPI_Comm) || c[i].comm == freedc || c[i].dt == BOGUS(MPI_Datatype) || c[i].dt == freedt))
            continue;
        snprintf(label, sizeof label, "%s (%s)", what, c[i].why);
        expect(x, line, label, call(ctx, c[i].buf, c[i].count, c[i].dt, c[i].dest, c[i].tag, c[i].comm), c[i].cls);
    }
}

static int call_send(void *f, const void *b, int n, MPI_Datatype d, int r, int t, MPI_Comm c)
{
    return ((send_fn) f)(b, n, d, r, t, c);
}

static int call_isend(void *f, const void *b, int n, MPI_Datatype d, int r, int t, MPI_Comm c)
{
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = ((isend_fn) f)(b, n, d, r, t, c, &q);
    if (q != MPI_REQUEST_NULL) /* must not happen: an error returns no request */
        return -1000;
    return rc;
}

static int call_recv(void *f, const void *b, int n, MPI_Datatype d, int r, int t, MPI_Comm c)
{
    (void) f;
    MPI_Status st;
    return MPI_Recv((void *) b, n, d, r, t, c, &st);
}

static int call_irecv(void *f, const void *b, int n, MPI_Datatype d, int r, int t, MPI_Comm c)
{
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = f ? MPI_Recv_init((void *) b, n, d, r, t, c, &q) : MPI_Irecv((void *) b, n, d, r, t, c, &q);
    return q != MPI_REQUEST_NULL ? -1000 : rc;
}

static int call_sendrecv_s(void *f, const void *b, int n, MPI_Datatype d, int r, int t, MPI_Comm c)
{
    (void) f;
    int rb[4];
    return MPI_Sendrecv(b, n, d, r, t, rb, 1, MPI_INT, MPI_PROC_NULL, 0, c, MPI_STATUS_IGNORE);
}

static int call_sendrecv_r(void *f, const void *b, int n, MPI_Datatype d, int r, int t, MPI_Comm c)
{
    (void) f;
    int sb[4] = {0};
    return MPI_Sendrecv(sb, 1, MPI_INT, MPI_PROC_NULL, 0, (void *) b, n, d, r, t, c, MPI_STATUS_IGNORE);
}

static int call_replace(void *f, const void *b, int n, MPI_Datatype d, int r, int t, MPI_Comm c)
{
    (void) f;
    return MPI_Sendrecv_replace((void *) b, n, d, r, t, MPI_PROC_NULL, 0, c, MPI_STATUS_IGNORE);
}

/* Probes have no buffer: the communicator, rank and tag cases only. */
static int call_probe(void *f, const void *b, int n, MPI_Datatype d, int r, int t, MPI_Comm c)
{
    (void) b, (void) n, (void) d;
    int flag;
    MPI_Message m;
    MPI_Status st;
    switch ((int) (intptr_t) f) {
    case 0:
        return MPI_Iprobe(r, t, c, &flag, &st);
    case 1:
        return MPI_Improbe(r, t, c, &flag, &m, &st);
    default:
        return MPI_Probe(r, t, c, &st); /* only with arguments that fail at once */
    }
}

static void recv_only_cases(bx_t *x, int line, const char *what, int (*call)(void *, const void *, int, MPI_Datatype, int, int, MPI_Comm), void *f)
{
    int b[4];
    expect(x, line, what, call(f, b, 1, MPI_INT, x->size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    expect(x, line, what, call(f, b, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
}

static void p2p_family(bx_t *x, MPI_Datatype unc, MPI_Datatype freedt, MPI_Comm freedc)
{
    int b[4] = {0}, flag, n, idx, outc, ids[2];
    MPI_Request q, qs[2], freedq;
    MPI_Status st, sts[2];
    MPI_Message m;
    MPI_Datatype fdt = freedt;
#define SENDS(fn) send_cases(x, #fn, __LINE__, b, call_send, (void *) fn, unc, fdt, freedc)
#define ISENDS(fn) send_cases(x, #fn, __LINE__, b, call_isend, (void *) fn, unc, fdt, freedc)
    SENDS(MPI_Send);
    SENDS(MPI_Ssend);
    SENDS(MPI_Rsend);
    SENDS(MPI_Bsend);
    ISENDS(MPI_Isend);
    ISENDS(MPI_Issend);
    ISENDS(MPI_Irsend);
    ISENDS(MPI_Ibsend);
    ISENDS(MPI_Send_init);
    ISENDS(MPI_Ssend_init);
    ISENDS(MPI_Rsend_init);
    ISENDS(MPI_Bsend_init);
    send_cases(x, "MPI_Sendrecv (send side)", __LINE__, b, call_sendrecv_s, NULL, unc, fdt, freedc);
    send_cases(x, "MPI_Sendrecv_replace", __LINE__, b, call_replace, NULL, unc, fdt, freedc);
    /* Receives: the same, except MPI_ANY_SOURCE/MPI_ANY_TAG are fine and tag -1 is ANY_TAG. */
    {
        struct {
            int cls, count;
            void *buf;
            MPI_Datatype dt;
            int src, tag;
            MPI_Comm comm;
        } c[] = {
            {MPI_ERR_COMM, 1, b, MPI_INT, 0, 0, MPI_COMM_NULL},
            {MPI_ERR_COMM, 1, b, MPI_INT, 0, 0, BOGUS(MPI_Comm)},
            {MPI_ERR_COMM, 1, b, MPI_INT, 0, 0, freedc},
            {MPI_ERR_COUNT, -1, b, MPI_INT, 0, 0, MPI_COMM_WORLD},
            {MPI_ERR_TYPE, 1, b, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD},
            {MPI_ERR_TYPE, 1, b, unc, 0, 0, MPI_COMM_WORLD},
            {MPI_ERR_TYPE, 1, b, fdt, 0, 0, MPI_COMM_WORLD},
            {MPI_ERR_RANK, 1, b, MPI_INT, x->size, 0, MPI_COMM_WORLD},
            {MPI_ERR_RANK, 1, b, MPI_INT, -7, 0, MPI_COMM_WORLD},
            {MPI_ERR_TAG, 1, b, MPI_INT, 0, -5, MPI_COMM_WORLD},
            {MPI_ERR_BUFFER, 1, NULL, MPI_INT, 0, 0, MPI_COMM_WORLD},
        };
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            if (NBAD == 1 && (c[i].comm == BOGUS(MPI_Comm) || c[i].comm == freedc || c[i].dt == fdt))
                continue;
            expect(x, __LINE__, "MPI_Recv", call_recv(NULL, c[i].buf, c[i].count, c[i].dt, c[i].src, c[i].tag, c[i].comm), c[i].cls);
            expect(x, __LINE__, "MPI_Irecv", call_irecv(NULL, c[i].buf, c[i].count, c[i].dt, c[i].src, c[i].tag, c[i].comm), c[i].cls);
            expect(x, __LINE__, "MPI_Recv_init", call_irecv((void *) 1, c[i].buf, c[i].count, c[i].dt, c[i].src, c[i].tag, c[i].comm), c[i].cls);
            expect(x, __LINE__, "MPI_Sendrecv (receive side)", call_sendrecv_r(NULL, c[i].buf, c[i].count, c[i].dt, c[i].src, c[i].tag, c[i].comm), c[i].cls);
            if (c[i].buf != NULL && c[i].dt == MPI_INT && c[i].count == 1) {
                expect(x, __LINE__, "MPI_Iprobe", call_probe((void *) 0, NULL, 0, MPI_INT, c[i].src, c[i].tag, c[i].comm), c[i].cls);
                expect(x, __LINE__, "MPI_Improbe", call_probe((void *) 1, NULL, 0, MPI_INT, c[i].src, c[i].tag, c[i].comm), c[i].cls);
                expect(x, __LINE__, "MPI_Probe", call_probe((void *) 2, NULL, 0, MPI_INT, c[i].src, c[i].tag, c[i].comm), c[i].cls);
            }
        }
        recv_only_cases(x, __LINE__, "MPI_Sendrecv_replace (source, tag)", call_replace, NULL);
    }
    T(MPI_ERR_ARG, MPI_Iprobe(0, 0, MPI_COMM_WORLD, NULL, &st));
    T(MPI_ERR_COMM, MPI_Mprobe(0, 0, MPI_COMM_NULL, &m, &st));
    T(MPI_ERR_ARG, MPI_Mprobe(0, 0, MPI_COMM_WORLD, NULL, &st));
    T(MPI_ERR_ARG, MPI_Improbe(0, 0, MPI_COMM_WORLD, &flag, NULL, &st));
    T(MPI_ERR_ARG, MPI_Mrecv(b, 1, MPI_INT, NULL, &st));
    m = MPI_MESSAGE_NULL;
    T(MPI_ERR_REQUEST, MPI_Mrecv(b, 1, MPI_INT, &m, &st));
    m = BOGUS(MPI_Message);
    T(MPI_ERR_REQUEST, MPI_Imrecv(b, 1, MPI_INT, &m, &q));
    m = MPI_MESSAGE_NO_PROC;
    T(MPI_ERR_COUNT, MPI_Mrecv(b, -1, MPI_INT, &m, &st));
    T(MPI_ERR_TYPE, MPI_Mrecv(b, 1, MPI_DATATYPE_NULL, &m, &st));
    T(MPI_ERR_ARG, MPI_Imrecv(b, 1, MPI_INT, &m, NULL));
    /* Request pointers. */
    T(MPI_ERR_ARG, MPI_Isend(b, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL));
    T(MPI_ERR_ARG, MPI_Irecv(b, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL));
    T(MPI_ERR_ARG, MPI_Send_init(b, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL));
    T(MPI_ERR_ARG, MPI_Recv_init(b, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL));

    /* Completion with bad requests: invalid, freed, or a null array. */
    T(MPI_SUCCESS, MPI_Irecv(b, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &freedq));
    q = freedq;
    T(MPI_SUCCESS, MPI_Wait(&q, &st));
    MPI_Request badq[2] = {BOGUS(MPI_Request), freedq};
    for (int i = 0; i < NBAD - 1; i++) {
        q = badq[i];
        T(MPI_ERR_REQUEST, MPI_Wait(&q, &st));
        T(MPI_ERR_REQUEST, MPI_Test(&q, &flag, &st));
        T(MPI_ERR_REQUEST, MPI_Request_free(&q));
        T(MPI_ERR_REQUEST, MPI_Request_get_status(q, &flag, &st));
        T(MPI_ERR_REQUEST, MPI_Cancel(&q));
        T(MPI_ERR_REQUEST, MPI_Start(&q));
        T(MPI_ERR_REQUEST, MPI_Startall(1, &q));
        qs[0] = MPI_REQUEST_NULL, qs[1] = q;
        T(MPI_ERR_REQUEST, MPI_Waitall(2, qs, sts));
        T(MPI_ERR_REQUEST, MPI_Testall(2, qs, &flag, sts));
        T(MPI_ERR_REQUEST, MPI_Waitany(2, qs, &idx, &st));
        T(MPI_ERR_REQUEST, MPI_Testany(2, qs, &idx, &flag, &st));
        T(MPI_ERR_REQUEST, MPI_Waitsome(2, qs, &outc, ids, sts));
        T(MPI_ERR_REQUEST, MPI_Testsome(2, qs, &outc, ids, sts));
    }
    T(MPI_ERR_ARG, MPI_Wait(NULL, &st));
    T(MPI_ERR_ARG, MPI_Test(NULL, &flag, &st));
    q = MPI_REQUEST_NULL;
    T(MPI_ERR_ARG, MPI_Test(&q, NULL, &st));
    T(MPI_ERR_ARG, MPI_Request_get_status(q, NULL, &st));
    T(MPI_ERR_REQUEST, MPI_Request_free(&q));
    T(MPI_ERR_ARG, MPI_Request_free(NULL));
    T(MPI_ERR_REQUEST, MPI_Cancel(&q));
    T(MPI_ERR_ARG, MPI_Cancel(NULL));
    T(MPI_ERR_REQUEST, MPI_Start(&q));
    T(MPI_ERR_ARG, MPI_Start(NULL));
    T(MPI_ERR_ARG, MPI_Waitall(2, NULL, sts));
    T(MPI_ERR_ARG, MPI_Testall(2, NULL, &flag, sts));
    T(MPI_ERR_ARG, MPI_Waitany(2, NULL, &idx, &st));
    T(MPI_ERR_ARG, MPI_Testany(2, NULL, &idx, &flag, &st));
    T(MPI_ERR_ARG, MPI_Waitsome(2, NULL, &outc, ids, sts));
    T(MPI_ERR_ARG, MPI_Testsome(2, NULL, &outc, ids, sts));
    T(MPI_ERR_ARG, MPI_Startall(2, NULL));
    T(MPI_ERR_COUNT, MPI_Waitall(-1, qs, sts));
    T(MPI_ERR_COUNT, MPI_Testall(-1, qs, &flag, sts));
    T(MPI_ERR_COUNT, MPI_Waitany(-1, qs, &idx, &st));
    T(MPI_ERR_COUNT, MPI_Testany(-1, qs, &idx, &flag, &st));
    T(MPI_ERR_COUNT, MPI_Waitsome(-1, qs, &outc, ids, sts));
    T(MPI_ERR_COUNT, MPI_Testsome(-1, qs, &outc, ids, sts));
    T(MPI_ERR_COUNT, MPI_Startall(-1, qs));
    qs[0] = qs[1] = MPI_REQUEST_NULL;
    T(MPI_ERR_ARG, MPI_Testall(2, qs, NULL, sts));
    T(MPI_ERR_ARG, MPI_Testany(2, qs, &idx, NULL, &st));
    T(MPI_ERR_ARG, MPI_Waitany(2, qs, NULL, &st));
    T(MPI_ERR_ARG, MPI_Waitsome(2, qs, NULL, ids, sts));
    /* MPI_Start on a request that is not persistent. */
    T(MPI_SUCCESS, MPI_Irecv(b, 1, MPI_INT, x->rank, 99, MPI_COMM_WORLD, &q));
    T(MPI_ERR_REQUEST, MPI_Start(&q));
    T(MPI_SUCCESS, MPI_Cancel(&q));
    T(MPI_SUCCESS, MPI_Wait(&q, &st));
    T(MPI_SUCCESS, MPI_Test_cancelled(&st, &flag));
    if (!flag)
        ct_fail(x->rank, &x->errs, __LINE__, "the receive was not cancelled");
    T(MPI_ERR_ARG, MPI_Test_cancelled(NULL, &flag));
    T(MPI_ERR_ARG, MPI_Test_cancelled(&st, NULL));
    /* Status queries. */
    T(MPI_ERR_TYPE, MPI_Get_count(&st, MPI_DATATYPE_NULL, &n));
    T(MPI_ERR_TYPE, MPI_Get_count(&st, BOGUS(MPI_Datatype), &n));
    T(MPI_ERR_ARG, MPI_Get_count(NULL, MPI_INT, &n));
    T(MPI_ERR_ARG, MPI_Get_count(&st, MPI_INT, NULL));
    T(MPI_ERR_TYPE, MPI_Get_elements(&st, MPI_DATATYPE_NULL, &n));
    T(MPI_ERR_ARG, MPI_Get_elements(NULL, MPI_INT, &n));
    MPI_Count cnt;
    T(MPI_ERR_TYPE, MPI_Get_elements_x(&st, MPI_DATATYPE_NULL, &cnt));
    T(MPI_ERR_ARG, MPI_Get_elements_x(&st, MPI_INT, NULL));
    T(MPI_ERR_TYPE, MPI_Status_set_elements(&st, MPI_DATATYPE_NULL, 1));
    T(MPI_ERR_COUNT, MPI_Status_set_elements(&st, MPI_INT, -1));
    T(MPI_ERR_ARG, MPI_Status_set_elements(NULL, MPI_INT, 1));
    T(MPI_ERR_TYPE, MPI_Status_set_elements_x(&st, MPI_DATATYPE_NULL, 1));
    T(MPI_ERR_COUNT, MPI_Status_set_elements_x(&st, MPI_INT, -1));
    T(MPI_ERR_ARG, MPI_Status_set_cancelled(NULL, 1));
    /* The buffered-send buffer. */
    char bb[1024];
    void *bp;
    int bs;
    T(MPI_ERR_ARG, MPI_Buffer_attach(bb, -1));
    T(MPI_ERR_BUFFER, MPI_Buffer_attach(NULL, 100));
    T(MPI_SUCCESS, MPI_Buffer_attach(bb, sizeof bb));
    T(MPI_ERR_BUFFER, MPI_Buffer_attach(bb, sizeof bb));
    T(MPI_ERR_ARG, MPI_Buffer_detach(NULL, &bs));
    T(MPI_ERR_ARG, MPI_Buffer_detach(&bp, NULL));
    T(MPI_SUCCESS, MPI_Buffer_detach(&bp, &bs));
    /* Bsend with no buffer attached, or a message larger than the buffer. */
    T(MPI_ERR_BUFFER, MPI_Bsend(b, 1, MPI_INT, x->rank, 0, MPI_COMM_WORLD));
    T(MPI_SUCCESS, MPI_Buffer_attach(bb, 64));
    T(MPI_ERR_BUFFER, MPI_Bsend(bb, 512, MPI_BYTE, x->rank, 0, MPI_COMM_WORLD));
    T(MPI_SUCCESS, MPI_Buffer_detach(&bp, &bs));
#undef SENDS
#undef ISENDS
}

/* ---- collectives ---- */

static void coll_family(bx_t *x, MPI_Datatype unc, MPI_Comm freedc)
{
    int P = x->size, root = 0;
    int *sb = ct_malloc(sizeof(int) * 4 * (size_t) P), *rb = ct_malloc(sizeof(int) * 4 * (size_t) P);
    int *cnt = ct_malloc(sizeof(int) * (size_t) P), *dsp = ct_malloc(sizeof(int) * (size_t) P);
    int *neg = ct_malloc(sizeof(int) * (size_t) P);
    MPI_Request q;
    MPI_Datatype *types = ct_malloc(sizeof(MPI_Datatype) * (size_t) P);
    MPI_Aint *adsp = ct_malloc(sizeof(MPI_Aint) * (size_t) P);
    for (int i = 0; i < P; i++) {
        cnt[i] = 1, dsp[i] = i, neg[i] = -1, types[i] = MPI_INT, adsp[i] = (MPI_Aint) (i * sizeof(int));
    }
    memset(sb, 0, sizeof(int) * 4 * (size_t) P);
    MPI_Comm bad[3] = {MPI_COMM_NULL, BOGUS(MPI_Comm), freedc};
    for (int i = 0; i < NBAD; i++) {
        MPI_Comm c = bad[i];
        T(MPI_ERR_COMM, MPI_Barrier(c));
        T(MPI_ERR_COMM, MPI_Ibarrier(c, &q));
        T(MPI_ERR_COMM, MPI_Bcast(sb, 1, MPI_INT, root, c));
        T(MPI_ERR_COMM, MPI_Ibcast(sb, 1, MPI_INT, root, c, &q));
        T(MPI_ERR_COMM, MPI_Gather(sb, 1, MPI_INT, rb, 1, MPI_INT, root, c));
        T(MPI_ERR_COMM, MPI_Igather(sb, 1, MPI_INT, rb, 1, MPI_INT, root, c, &q));
        T(MPI_ERR_COMM, MPI_Gatherv(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, root, c));
        T(MPI_ERR_COMM, MPI_Igatherv(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, root, c, &q));
        T(MPI_ERR_COMM, MPI_Scatter(sb, 1, MPI_INT, rb, 1, MPI_INT, root, c));
        T(MPI_ERR_COMM, MPI_Iscatter(sb, 1, MPI_INT, rb, 1, MPI_INT, root, c, &q));
        T(MPI_ERR_COMM, MPI_Scatterv(sb, cnt, dsp, MPI_INT, rb, 1, MPI_INT, root, c));
        T(MPI_ERR_COMM, MPI_Iscatterv(sb, cnt, dsp, MPI_INT, rb, 1, MPI_INT, root, c, &q));
        T(MPI_ERR_COMM, MPI_Allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, c));
        T(MPI_ERR_COMM, MPI_Iallgather(sb, 1, MPI_INT, rb, 1, MPI_INT, c, &q));
        T(MPI_ERR_COMM, MPI_Allgatherv(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, c));
        T(MPI_ERR_COMM, MPI_Iallgatherv(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, c, &q));
        T(MPI_ERR_COMM, MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c));
        T(MPI_ERR_COMM, MPI_Ialltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c, &q));
        T(MPI_ERR_COMM, MPI_Alltoallv(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, c));
        T(MPI_ERR_COMM, MPI_Ialltoallv(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, c, &q));
        T(MPI_ERR_COMM, MPI_Reduce(sb, rb, 1, MPI_INT, MPI_SUM, root, c));
        T(MPI_ERR_COMM, MPI_Ireduce(sb, rb, 1, MPI_INT, MPI_SUM, root, c, &q));
        T(MPI_ERR_COMM, MPI_Allreduce(sb, rb, 1, MPI_INT, MPI_SUM, c));
        T(MPI_ERR_COMM, MPI_Iallreduce(sb, rb, 1, MPI_INT, MPI_SUM, c, &q));
        T(MPI_ERR_COMM, MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, MPI_SUM, c));
        T(MPI_ERR_COMM, MPI_Ireduce_scatter(sb, rb, cnt, MPI_INT, MPI_SUM, c, &q));
        T(MPI_ERR_COMM, MPI_Reduce_scatter_block(sb, rb, 1, MPI_INT, MPI_SUM, c));
        T(MPI_ERR_COMM, MPI_Ireduce_scatter_block(sb, rb, 1, MPI_INT, MPI_SUM, c, &q));
        T(MPI_ERR_COMM, MPI_Scan(sb, rb, 1, MPI_INT, MPI_SUM, c));
        T(MPI_ERR_COMM, MPI_Iscan(sb, rb, 1, MPI_INT, MPI_SUM, c, &q));
        T(MPI_ERR_COMM, MPI_Exscan(sb, rb, 1, MPI_INT, MPI_SUM, c));
        T(MPI_ERR_COMM, MPI_Iexscan(sb, rb, 1, MPI_INT, MPI_SUM, c, &q));
        T(MPI_ERR_COMM, MPI_Neighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, c));
        T(MPI_ERR_COMM, MPI_Ineighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, c, &q));
        T(MPI_ERR_COMM, MPI_Neighbor_allgatherv(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, c));
        T(MPI_ERR_COMM, MPI_Ineighbor_allgatherv(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, c, &q));
        T(MPI_ERR_COMM, MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c));
        T(MPI_ERR_COMM, MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c, &q));
        T(MPI_ERR_COMM, MPI_Neighbor_alltoallv(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, c));
        T(MPI_ERR_COMM, MPI_Ineighbor_alltoallv(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, c, &q));
        T(MPI_ERR_COMM, MPI_Neighbor_alltoallw(sb, cnt, adsp, types, rb, cnt, adsp, types, c));
        T(MPI_ERR_COMM, MPI_Ineighbor_alltoallw(sb, cnt, adsp, types, rb, cnt, adsp, types, c, &q));
    }
    /* Neighbourhood collectives need a topology. */
    T(MPI_ERR_TOPOLOGY, MPI_Neighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_TOPOLOGY, MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &q));
    T(MPI_ERR_ARG, MPI_Ibarrier(MPI_COMM_WORLD, NULL));
    T(MPI_ERR_ARG, MPI_Iallreduce(sb, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL));

    /* Roots, counts, types, operations, buffers: every rank passes the same bad value. */
    int roots[2] = {P, -1};
    for (int i = 0; i < 2; i++) {
        int r = roots[i];
        T(MPI_ERR_ROOT, MPI_Bcast(sb, 1, MPI_INT, r, MPI_COMM_WORLD));
        T(MPI_ERR_ROOT, MPI_Ibcast(sb, 1, MPI_INT, r, MPI_COMM_WORLD, &q));
        T(MPI_ERR_ROOT, MPI_Gather(sb, 1, MPI_INT, rb, 1, MPI_INT, r, MPI_COMM_WORLD));
        T(MPI_ERR_ROOT, MPI_Igather(sb, 1, MPI_INT, rb, 1, MPI_INT, r, MPI_COMM_WORLD, &q));
        T(MPI_ERR_ROOT, MPI_Gatherv(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, r, MPI_COMM_WORLD));
        T(MPI_ERR_ROOT, MPI_Igatherv(sb, 1, MPI_INT, rb, cnt, dsp, MPI_INT, r, MPI_COMM_WORLD, &q));
        T(MPI_ERR_ROOT, MPI_Scatter(sb, 1, MPI_INT, rb, 1, MPI_INT, r, MPI_COMM_WORLD));
        T(MPI_ERR_ROOT, MPI_Iscatter(sb, 1, MPI_INT, rb, 1, MPI_INT, r, MPI_COMM_WORLD, &q));
        T(MPI_ERR_ROOT, MPI_Scatterv(sb, cnt, dsp, MPI_INT, rb, 1, MPI_INT, r, MPI_COMM_WORLD));
        T(MPI_ERR_ROOT, MPI_Iscatterv(sb, cnt, dsp, MPI_INT, rb, 1, MPI_INT, r, MPI_COMM_WORLD, &q));
        T(MPI_ERR_ROOT, MPI_Reduce(sb, rb, 1, MPI_INT, MPI_SUM, r, MPI_COMM_WORLD));
        T(MPI_ERR_ROOT, MPI_Ireduce(sb, rb, 1, MPI_INT, MPI_SUM, r, MPI_COMM_WORLD, &q));
    }
    MPI_Datatype types_bad[3] = {MPI_DATATYPE_NULL, unc, BOGUS(MPI_Datatype)};
    for (int i = 0; i < NBAD + (NBAD == 1); i++) {
        MPI_Datatype d = types_bad[i];
        T(MPI_ERR_TYPE, MPI_Bcast(sb, 1, d, root, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Ibcast(sb, 1, d, root, MPI_COMM_WORLD, &q));
        T(MPI_ERR_TYPE, MPI_Gather(sb, 1, d, rb, 1, d, root, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Scatter(sb, 1, d, rb, 1, d, root, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Allgather(sb, 1, d, rb, 1, d, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Alltoall(sb, 1, d, rb, 1, d, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Alltoallv(sb, cnt, dsp, d, rb, cnt, dsp, d, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Reduce(sb, rb, 1, d, MPI_SUM, root, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Allreduce(sb, rb, 1, d, MPI_SUM, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Iallreduce(sb, rb, 1, d, MPI_SUM, MPI_COMM_WORLD, &q));
        T(MPI_ERR_TYPE, MPI_Reduce_scatter_block(sb, rb, 1, d, MPI_SUM, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Scan(sb, rb, 1, d, MPI_SUM, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Exscan(sb, rb, 1, d, MPI_SUM, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Reduce_local(sb, rb, 1, d, MPI_SUM));
    }
    T(MPI_ERR_COUNT, MPI_Bcast(sb, -1, MPI_INT, root, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Gather(sb, -1, MPI_INT, rb, -1, MPI_INT, root, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Scatter(sb, -1, MPI_INT, rb, -1, MPI_INT, root, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Allgather(sb, -1, MPI_INT, rb, -1, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Iallgather(sb, -1, MPI_INT, rb, -1, MPI_INT, MPI_COMM_WORLD, &q));
    T(MPI_ERR_COUNT, MPI_Alltoall(sb, -1, MPI_INT, rb, -1, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Reduce(sb, rb, -1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Allreduce(sb, rb, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Reduce_scatter_block(sb, rb, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Scan(sb, rb, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Exscan(sb, rb, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Reduce_local(sb, rb, -1, MPI_INT, MPI_SUM));
    /* (Count arrays are significant at the root only: their errors would leave the other
     * ranks in the collective. Negative counts given by every rank instead.) */
    T(MPI_ERR_COUNT, MPI_Gatherv(sb, -1, MPI_INT, rb, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Scatterv(sb, cnt, dsp, MPI_INT, rb, -1, MPI_INT, root, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Allgatherv(sb, 1, MPI_INT, rb, neg, dsp, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Alltoallv(sb, neg, dsp, MPI_INT, rb, neg, dsp, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Ialltoallv(sb, neg, dsp, MPI_INT, rb, neg, dsp, MPI_INT, MPI_COMM_WORLD, &q));
    T(MPI_ERR_COUNT, MPI_Reduce_scatter(sb, rb, neg, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    T(MPI_ERR_ARG, MPI_Allgatherv(sb, 1, MPI_INT, rb, NULL, dsp, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_ARG, MPI_Alltoallv(sb, NULL, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_ARG, MPI_Reduce_scatter(sb, rb, NULL, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_Op ops_bad[2] = {MPI_OP_NULL, BOGUS(MPI_Op)};
    for (int i = 0; i < (NBAD > 1 ? 2 : 1); i++) {
        MPI_Op o = ops_bad[i];
        T(MPI_ERR_OP, MPI_Reduce(sb, rb, 1, MPI_INT, o, root, MPI_COMM_WORLD));
        T(MPI_ERR_OP, MPI_Ireduce(sb, rb, 1, MPI_INT, o, root, MPI_COMM_WORLD, &q));
        T(MPI_ERR_OP, MPI_Allreduce(sb, rb, 1, MPI_INT, o, MPI_COMM_WORLD));
        T(MPI_ERR_OP, MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, o, MPI_COMM_WORLD));
        T(MPI_ERR_OP, MPI_Reduce_scatter_block(sb, rb, 1, MPI_INT, o, MPI_COMM_WORLD));
        T(MPI_ERR_OP, MPI_Scan(sb, rb, 1, MPI_INT, o, MPI_COMM_WORLD));
        T(MPI_ERR_OP, MPI_Exscan(sb, rb, 1, MPI_INT, o, MPI_COMM_WORLD));
        T(MPI_ERR_OP, MPI_Iexscan(sb, rb, 1, MPI_INT, o, MPI_COMM_WORLD, &q));
        T(MPI_ERR_OP, MPI_Reduce_local(sb, rb, 1, MPI_INT, o));
    }
    /* An operation that does not apply to the type. */
    T(MPI_ERR_OP, MPI_Allreduce(sb, rb, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    T(MPI_ERR_OP, MPI_Reduce(sb, rb, 1, MPI_DOUBLE, MPI_BAND, root, MPI_COMM_WORLD));
    T(MPI_ERR_OP, MPI_Reduce_local(sb, rb, 1, MPI_FLOAT, MPI_BXOR));
    T(MPI_ERR_OP, MPI_Scan(sb, rb, 1, MPI_2INT, MPI_SUM, MPI_COMM_WORLD));
    /* Null buffers with count > 0 (MPI_BOTTOM is null: not with a predefined type). */
    T(MPI_ERR_BUFFER, MPI_Bcast(NULL, 1, MPI_INT, root, MPI_COMM_WORLD));
    T(MPI_ERR_BUFFER, MPI_Allreduce(NULL, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    T(MPI_ERR_BUFFER, MPI_Allreduce(sb, NULL, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    T(MPI_ERR_BUFFER, MPI_Allgather(NULL, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_BUFFER, MPI_Alltoall(sb, 1, MPI_INT, NULL, 1, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_BUFFER, MPI_Reduce_local(NULL, rb, 1, MPI_INT, MPI_SUM));
    T(MPI_ERR_BUFFER, MPI_Reduce_local(sb, NULL, 1, MPI_INT, MPI_SUM));
    T(MPI_ERR_BUFFER, MPI_Scan(NULL, rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    free(sb), free(rb), free(cnt), free(dsp), free(neg), free(types), free(adsp);
}

/* ---- process topologies ---- */

static void topo_family(bx_t *x)
{
    int P = x->size, dims[2] = {P, 1}, periods[2] = {0, 0}, coords[2], n, r, s, d, edges[2], idx[1];
    int remain[2] = {1, 0}, nn, ne, w[1] = {1};
    MPI_Comm c, cart, world = MPI_COMM_WORLD;
    int big[2] = {P + 1, 1};
    T(MPI_ERR_ARG, MPI_Cart_create(world, -1, dims, periods, 0, &c));
    T(MPI_ERR_ARG, MPI_Cart_create(world, 2, big, periods, 0, &c)); /* grid larger than the group */
    dims[0] = -1;
    T(MPI_ERR_DIMS, MPI_Cart_create(world, 2, dims, periods, 0, &c));
    dims[0] = P;
    T(MPI_ERR_ARG, MPI_Cart_create(world, 2, dims, periods, 0, NULL));
    T(MPI_ERR_COMM, MPI_Cart_create(MPI_COMM_NULL, 2, dims, periods, 0, &c));
    T(MPI_ERR_TOPOLOGY, MPI_Cart_coords(world, 0, 2, coords));
    T(MPI_ERR_TOPOLOGY, MPI_Cart_rank(world, coords, &r));
    T(MPI_ERR_TOPOLOGY, MPI_Cart_shift(world, 0, 1, &s, &d));
    T(MPI_ERR_TOPOLOGY, MPI_Cart_sub(world, remain, &c));
    T(MPI_ERR_TOPOLOGY, MPI_Cart_get(world, 2, dims, periods, coords));
    T(MPI_ERR_TOPOLOGY, MPI_Cartdim_get(world, &n));
    T(MPI_ERR_TOPOLOGY, MPI_Graph_get(world, 1, 1, idx, edges));
    T(MPI_ERR_TOPOLOGY, MPI_Graph_neighbors(world, 0, 1, edges));
    T(MPI_ERR_TOPOLOGY, MPI_Graph_neighbors_count(world, 0, &n));
    T(MPI_ERR_TOPOLOGY, MPI_Graphdims_get(world, &nn, &ne));
    T(MPI_ERR_TOPOLOGY, MPI_Dist_graph_neighbors_count(world, &n, &r, &s));
    T(MPI_ERR_TOPOLOGY, MPI_Dist_graph_neighbors(world, 1, edges, w, 1, edges, w));
    T(MPI_SUCCESS, MPI_Cart_create(world, 2, dims, periods, 0, &cart));
    T(MPI_ERR_RANK, MPI_Cart_coords(cart, P, 2, coords));
    T(MPI_ERR_RANK, MPI_Cart_coords(cart, -1, 2, coords));
    T(MPI_ERR_ARG, MPI_Cart_coords(cart, 0, 2, NULL));
    coords[0] = P, coords[1] = 0;
    T(MPI_ERR_ARG, MPI_Cart_rank(cart, coords, &r)); /* out of range, not periodic */
    T(MPI_ERR_ARG, MPI_Cart_shift(cart, 5, 1, &s, &d));
    T(MPI_ERR_ARG, MPI_Cart_shift(cart, -1, 1, &s, &d));
    T(MPI_ERR_ARG, MPI_Cart_sub(cart, NULL, &c));
    T(MPI_ERR_ARG, MPI_Cartdim_get(cart, NULL));
    T(MPI_ERR_ARG, MPI_Cart_map(world, -1, dims, periods, &r));
    T(MPI_ERR_DIMS, MPI_Cart_map(world, 2, big, periods, &r));
    MPI_Comm_free(&cart);
    int gi[1] = {1}, ge[1] = {0};
    T(MPI_ERR_ARG, MPI_Graph_create(world, -1, gi, ge, 0, &c));
    T(MPI_ERR_ARG, MPI_Graph_create(world, P + 1, gi, ge, 0, &c));
    ge[0] = P; /* an edge to a node the graph does not have */
    T(MPI_ERR_ARG, MPI_Graph_create(world, 1, gi, ge, 0, &c));
    T(MPI_ERR_ARG, MPI_Graph_map(world, -1, gi, ge, &r));
    int src[1] = {0}, dst[1] = {P};
    T(MPI_ERR_ARG, MPI_Dist_graph_create_adjacent(world, -1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c));
    T(MPI_ERR_RANK, MPI_Dist_graph_create_adjacent(world, 1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c));
    int deg[1] = {1};
    T(MPI_ERR_ARG, MPI_Dist_graph_create(world, -1, src, deg, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c));
    T(MPI_ERR_RANK, MPI_Dist_graph_create(world, 1, src, deg, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c));
    T(MPI_ERR_ARG, MPI_Dims_create(P, -1, dims));
    T(MPI_ERR_ARG, MPI_Dims_create(-1, 2, dims));
    dims[0] = 0, dims[1] = P + 1; /* a fixed dimension that does not divide */
    T(MPI_ERR_DIMS, MPI_Dims_create(P, 2, dims));
    T(MPI_ERR_ARG, MPI_Dims_create(P, 2, NULL));
}

/* ---- datatypes, packing, operations ---- */

static void type_family(bx_t *x, MPI_Datatype unc, MPI_Datatype freedt)
{
    MPI_Datatype t, bad[3] = {MPI_DATATYPE_NULL, BOGUS(MPI_Datatype), freedt};
    int bl[2] = {1, 1}, ds[2] = {0, 4}, n, ni, na, nd, comb, sizes[1] = {4}, subs[1] = {2}, starts[1] = {0};
    MPI_Aint ad[2] = {0, 8}, lb, ext, a;
    MPI_Count cn, clb, cext;
    MPI_Count cbl[2] = {1, 1}, cds[2] = {0, 4};
    MPI_Aint cad[2] = {0, 8};
    char name[MPI_MAX_OBJECT_NAME], buf[64], out[64];
    int pos;
    (void) unc;
    for (int i = 0; i < NBAD; i++) {
        MPI_Datatype b = bad[i], ts[2] = {MPI_INT, b};
        T(MPI_ERR_TYPE, MPI_Type_contiguous(1, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_contiguous_c(1, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_vector(1, 1, 1, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_vector_c(1, 1, 1, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_hvector(1, 1, 8, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_hvector_c(1, 1, 8, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_indexed(2, bl, ds, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_indexed_c(2, cbl, cds, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_hindexed(2, bl, ad, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_hindexed_c(2, cbl, cad, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_indexed_block(2, 1, ds, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_indexed_block_c(2, 1, cds, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_hindexed_block(2, 1, ad, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_hindexed_block_c(2, 1, cad, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_struct(2, bl, ad, ts, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_struct_c(2, cbl, cad, ts, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_subarray(1, sizes, subs, starts, MPI_ORDER_C, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_subarray_c(1, cbl, cbl, cds, MPI_ORDER_C, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_darray(1, 0, 1, sizes, (int[]){MPI_DISTRIBUTE_BLOCK}, (int[]){MPI_DISTRIBUTE_DFLT_DARG}, (int[]){1}, MPI_ORDER_C, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_darray_c(1, 0, 1, cbl, (int[]){MPI_DISTRIBUTE_BLOCK}, (int[]){MPI_DISTRIBUTE_DFLT_DARG}, (int[]){1}, MPI_ORDER_C, b, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_resized(b, 0, 8, &t));
        T(MPI_ERR_TYPE, MPI_Type_create_resized_c(b, 0, 8, &t));
        T(MPI_ERR_TYPE, MPI_Type_dup(b, &t));
        t = b;
        T(MPI_ERR_TYPE, MPI_Type_commit(&t));
        t = b;
        T(MPI_ERR_TYPE, MPI_Type_free(&t));
        T(MPI_ERR_TYPE, MPI_Type_size(b, &n));
        T(MPI_ERR_TYPE, MPI_Type_size_c(b, &cn));
        T(MPI_ERR_TYPE, MPI_Type_size_x(b, &cn));
        T(MPI_ERR_TYPE, MPI_Type_get_extent(b, &lb, &ext));
        T(MPI_ERR_TYPE, MPI_Type_get_extent_c(b, &clb, &cext));
        T(MPI_ERR_TYPE, MPI_Type_get_extent_x(b, &clb, &cext));
        T(MPI_ERR_TYPE, MPI_Type_get_true_extent(b, &lb, &ext));
        T(MPI_ERR_TYPE, MPI_Type_get_true_extent_c(b, &clb, &cext));
        T(MPI_ERR_TYPE, MPI_Type_get_true_extent_x(b, &clb, &cext));
        T(MPI_ERR_TYPE, MPI_Type_get_envelope(b, &ni, &na, &nd, &comb));
        T(MPI_ERR_TYPE, MPI_Type_get_envelope_c(b, &cn, &cn, &cn, &cn, &comb));
        T(MPI_ERR_TYPE, MPI_Type_get_contents(b, 0, 0, 0, NULL, NULL, NULL));
        T(MPI_ERR_TYPE, MPI_Type_get_contents_c(b, 0, 0, 0, 0, NULL, NULL, NULL, NULL));
        T(MPI_ERR_TYPE, MPI_Type_set_name(b, "x"));
        T(MPI_ERR_TYPE, MPI_Type_get_name(b, name, &n));
        T(MPI_ERR_TYPE, MPI_Pack(buf, 1, b, out, sizeof out, &(int){0}, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Pack_c(buf, 1, b, out, sizeof out, &(MPI_Count){0}, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Unpack(out, sizeof out, &(int){0}, buf, 1, b, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Unpack_c(out, sizeof out, &(MPI_Count){0}, buf, 1, b, MPI_COMM_WORLD));
        T(MPI_ERR_TYPE, MPI_Pack_size(1, b, MPI_COMM_WORLD, &n));
        T(MPI_ERR_TYPE, MPI_Pack_size_c(1, b, MPI_COMM_WORLD, &cn));
#if HAVE_MPI41
        T(MPI_ERR_TYPE, MPI_Type_get_value_index(b, MPI_INT, &t));
#endif
    }
    T(MPI_ERR_COUNT, MPI_Type_contiguous(-1, MPI_INT, &t));
    T(MPI_ERR_COUNT, MPI_Type_contiguous_c(-1, MPI_INT, &t));
    T(MPI_ERR_COUNT, MPI_Type_vector(-1, 1, 1, MPI_INT, &t));
    T(MPI_ERR_COUNT, MPI_Type_vector(1, -1, 1, MPI_INT, &t));
    T(MPI_ERR_COUNT, MPI_Type_create_hvector(-1, 1, 8, MPI_INT, &t));
    T(MPI_ERR_COUNT, MPI_Type_indexed(-1, bl, ds, MPI_INT, &t));
    bl[1] = -1;
    T(MPI_ERR_COUNT, MPI_Type_indexed(2, bl, ds, MPI_INT, &t));
    T(MPI_ERR_COUNT, MPI_Type_create_hindexed(2, bl, ad, MPI_INT, &t));
    bl[1] = 1;
    T(MPI_ERR_COUNT, MPI_Type_create_indexed_block(-1, 1, ds, MPI_INT, &t));
    T(MPI_ERR_COUNT, MPI_Type_create_indexed_block(2, -1, ds, MPI_INT, &t));
    T(MPI_ERR_COUNT, MPI_Type_create_hindexed_block(-1, 1, ad, MPI_INT, &t));
    T(MPI_ERR_COUNT, MPI_Type_create_struct(-1, bl, ad, (MPI_Datatype[]){MPI_INT, MPI_INT}, &t));
    T(MPI_ERR_ARG, MPI_Type_indexed(2, NULL, ds, MPI_INT, &t));
    T(MPI_ERR_ARG, MPI_Type_contiguous(1, MPI_INT, NULL));
    T(MPI_ERR_ARG, MPI_Type_create_struct(2, bl, NULL, (MPI_Datatype[]){MPI_INT, MPI_INT}, &t));
    T(MPI_ERR_ARG, MPI_Type_create_subarray(0, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t));
    subs[0] = 5; /* larger than the array */
    T(MPI_ERR_ARG, MPI_Type_create_subarray(1, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t));
    subs[0] = 2;
    T(MPI_ERR_ARG, MPI_Type_create_subarray(1, sizes, subs, starts, 12345, MPI_INT, &t));
    T(MPI_ERR_RANK, MPI_Type_create_darray(1, 1, 1, sizes, (int[]){MPI_DISTRIBUTE_BLOCK}, (int[]){MPI_DISTRIBUTE_DFLT_DARG}, (int[]){1}, MPI_ORDER_C, MPI_INT, &t));
    t = MPI_INT;
    T(MPI_ERR_TYPE, MPI_Type_free(&t));
    T(MPI_ERR_ARG, MPI_Type_free(NULL));
    T(MPI_ERR_ARG, MPI_Type_commit(NULL));
    T(MPI_ERR_ARG, MPI_Type_size(MPI_INT, NULL));
    T(MPI_ERR_ARG, MPI_Type_get_extent(MPI_INT, NULL, &ext));
    T(MPI_ERR_ARG, MPI_Type_get_envelope(MPI_INT, NULL, &na, &nd, &comb));
    /* get_contents is erroneous on a predefined type. */
    T(MPI_ERR_TYPE, MPI_Type_get_contents(MPI_INT, 0, 0, 0, NULL, NULL, NULL));
    T(MPI_ERR_ARG, MPI_Type_set_name(MPI_INT, NULL));
    T(MPI_ERR_ARG, MPI_Type_get_name(MPI_INT, NULL, &n));
    T(MPI_ERR_ARG, MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &t));
    T(MPI_ERR_ARG, MPI_Type_match_size(12345, 4, &t));
    T(MPI_ERR_ARG, MPI_Type_match_size(MPI_TYPECLASS_REAL, 4, NULL));
    /* Packing: counts, sizes, positions, communicators. */
    pos = 0;
    T(MPI_ERR_COUNT, MPI_Pack(buf, -1, MPI_INT, out, sizeof out, &pos, MPI_COMM_WORLD));
    T(MPI_ERR_TRUNCATE, MPI_Pack(buf, 32, MPI_INT, out, sizeof out, &pos, MPI_COMM_WORLD));
    T(MPI_ERR_COMM, MPI_Pack(buf, 1, MPI_INT, out, sizeof out, &pos, MPI_COMM_NULL));
    T(MPI_ERR_ARG, MPI_Pack(buf, 1, MPI_INT, out, sizeof out, NULL, MPI_COMM_WORLD));
    T(MPI_ERR_BUFFER, MPI_Pack(NULL, 1, MPI_INT, out, sizeof out, &pos, MPI_COMM_WORLD));
    T(MPI_ERR_COUNT, MPI_Unpack(out, sizeof out, &pos, buf, -1, MPI_INT, MPI_COMM_WORLD));
    pos = 0;
    T(MPI_ERR_TRUNCATE, MPI_Unpack(out, 8, &pos, buf, 4, MPI_INT, MPI_COMM_WORLD));
    T(MPI_ERR_COMM, MPI_Unpack(out, sizeof out, &pos, buf, 1, MPI_INT, MPI_COMM_NULL));
    T(MPI_ERR_COUNT, MPI_Pack_size(-1, MPI_INT, MPI_COMM_WORLD, &n));
    T(MPI_ERR_ARG, MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, NULL));
    T(MPI_ERR_COMM, MPI_Pack_size(1, MPI_INT, MPI_COMM_NULL, &n));
    T(MPI_ERR_ARG, MPI_Get_address(buf, NULL));
    T(MPI_SUCCESS, MPI_Get_address(buf, &a));
    if (MPI_Aint_diff(MPI_Aint_add(a, 8), a) != 8)
        ct_fail(x->rank, &x->errs, __LINE__, "MPI_Aint_add/MPI_Aint_diff");
}

static void op_family(bx_t *x)
{
    MPI_Op o, freed;
    int c;
    T(MPI_ERR_ARG, MPI_Op_create(NULL, 1, &o));
    T(MPI_ERR_ARG, MPI_Op_create(user_op_fn, 1, NULL));
    T(MPI_SUCCESS, MPI_Op_create(user_op_fn, 1, &freed));
    o = freed;
    T(MPI_SUCCESS, MPI_Op_free(&o));
    MPI_Op bad[3] = {MPI_OP_NULL, BOGUS(MPI_Op), freed};
    for (int i = 0; i < NBAD; i++) {
        o = bad[i];
        T(MPI_ERR_OP, MPI_Op_free(&o));
        T(MPI_ERR_OP, MPI_Op_commutative(bad[i], &c));
    }
    o = MPI_SUM;
    T(MPI_ERR_OP, MPI_Op_free(&o));
    T(MPI_ERR_ARG, MPI_Op_free(NULL));
    T(MPI_ERR_ARG, MPI_Op_commutative(MPI_SUM, NULL));
}

/* ---- attributes and info ---- */

static void attr_family(bx_t *x, MPI_Comm freedc)
{
    int k, freedk, flag, *v;
    void *val = &k;
    MPI_Comm null = MPI_COMM_NULL;
    T(MPI_ERR_ARG, MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, NULL, NULL));
    T(MPI_ERR_ARG, MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, NULL, NULL));
    T(MPI_SUCCESS, MPI_Comm_create_keyval(dummy_copy, MPI_COMM_NULL_DELETE_FN, &freedk, NULL));
    k = freedk;
    T(MPI_SUCCESS, MPI_Comm_free_keyval(&k));
    int badk[3] = {MPI_KEYVAL_INVALID, 987654, freedk};
    for (int i = 0; i < 3; i++) {
        k = badk[i];
        T(MPI_ERR_KEYVAL, MPI_Comm_set_attr(MPI_COMM_WORLD, badk[i], val));
        T(MPI_ERR_KEYVAL, MPI_Comm_get_attr(MPI_COMM_WORLD, badk[i], &v, &flag));
        T(MPI_ERR_KEYVAL, MPI_Comm_delete_attr(MPI_COMM_WORLD, badk[i]));
        T(MPI_ERR_KEYVAL, MPI_Attr_put(MPI_COMM_WORLD, badk[i], val));
        T(MPI_ERR_KEYVAL, MPI_Attr_get(MPI_COMM_WORLD, badk[i], &v, &flag));
        T(MPI_ERR_KEYVAL, MPI_Attr_delete(MPI_COMM_WORLD, badk[i]));
        T(MPI_ERR_KEYVAL, MPI_Comm_free_keyval(&k));
        k = badk[i];
        T(MPI_ERR_KEYVAL, MPI_Keyval_free(&k));
    }
    /* Predefined attributes can be read, not set, deleted or freed. */
    T(MPI_ERR_KEYVAL, MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, val));
    T(MPI_ERR_KEYVAL, MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_TAG_UB));
    k = MPI_TAG_UB;
    T(MPI_ERR_KEYVAL, MPI_Comm_free_keyval(&k));
    T(MPI_ERR_ARG, MPI_Comm_free_keyval(NULL));
    T(MPI_ERR_ARG, MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, NULL));
    T(MPI_ERR_ARG, MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL, &flag));
    T(MPI_SUCCESS, MPI_Comm_create_keyval(dummy_copy, MPI_COMM_NULL_DELETE_FN, &k, NULL));
    MPI_Comm badc[3] = {MPI_COMM_NULL, BOGUS(MPI_Comm), freedc};
    for (int i = 0; i < NBAD; i++) {
        T(MPI_ERR_COMM, MPI_Comm_set_attr(badc[i], k, val));
        T(MPI_ERR_COMM, MPI_Comm_get_attr(badc[i], k, &v, &flag));
        T(MPI_ERR_COMM, MPI_Comm_delete_attr(badc[i], k));
        T(MPI_ERR_COMM, MPI_Attr_put(badc[i], k, val));
        T(MPI_ERR_COMM, MPI_Attr_get(badc[i], k, &v, &flag));
        T(MPI_ERR_COMM, MPI_Attr_delete(badc[i], k));
    }
    (void) null;
    T(MPI_SUCCESS, MPI_Comm_free_keyval(&k));
}

static void info_family(bx_t *x, int argc, char **argv)
{
    MPI_Info i, freed, d;
    int n, flag;
    char key[MPI_MAX_INFO_KEY + 20], val[MPI_MAX_INFO_VAL + 20];
    memset(key, 'k', sizeof key - 1), key[sizeof key - 1] = 0;
    memset(val, 'v', sizeof val - 1), val[sizeof val - 1] = 0;
    T(MPI_ERR_ARG, MPI_Info_create(NULL));
    T(MPI_ERR_ARG, MPI_Info_create_env(argc, argv, NULL));
    T(MPI_SUCCESS, MPI_Info_create(&freed));
    d = freed;
    T(MPI_SUCCESS, MPI_Info_free(&d));
    MPI_Info bad[3] = {MPI_INFO_NULL, BOGUS(MPI_Info), freed};
    for (int k = 0; k < NBAD; k++) {
        MPI_Info b = bad[k];
        T(MPI_ERR_INFO, MPI_Info_set(b, "key", "value"));
        T(MPI_ERR_INFO, MPI_Info_get(b, "key", 10, val, &flag));
        T(MPI_ERR_INFO, MPI_Info_get_string(b, "key", &n, val, &flag));
        T(MPI_ERR_INFO, MPI_Info_get_valuelen(b, "key", &n, &flag));
        T(MPI_ERR_INFO, MPI_Info_delete(b, "key"));
        T(MPI_ERR_INFO, MPI_Info_get_nkeys(b, &n));
        T(MPI_ERR_INFO, MPI_Info_get_nthkey(b, 0, key));
        T(MPI_ERR_INFO, MPI_Info_dup(b, &d));
        d = b;
        T(MPI_ERR_INFO, MPI_Info_free(&d));
    }
    T(MPI_SUCCESS, MPI_Info_create(&i));
    T(MPI_ERR_INFO_KEY, MPI_Info_set(i, key, "value"));
    T(MPI_ERR_INFO_KEY, MPI_Info_set(i, "", "value"));
    T(MPI_ERR_INFO_VALUE, MPI_Info_set(i, "key", val));
    T(MPI_ERR_INFO_KEY, MPI_Info_get(i, key, 10, val, &flag));
    T(MPI_ERR_INFO_KEY, MPI_Info_get_valuelen(i, key, &n, &flag));
    T(MPI_ERR_INFO_KEY, MPI_Info_delete(i, key));
    T(MPI_ERR_INFO_NOKEY, MPI_Info_delete(i, "absent"));
    T(MPI_ERR_ARG, MPI_Info_get(i, "key", -1, val, &flag));
    T(MPI_ERR_ARG, MPI_Info_get_nthkey(i, 0, key)); /* no keys */
    T(MPI_ERR_ARG, MPI_Info_get_nthkey(i, -1, key));
    T(MPI_ERR_ARG, MPI_Info_get_nkeys(i, NULL));
    T(MPI_ERR_ARG, MPI_Info_dup(i, NULL));
    T(MPI_ERR_ARG, MPI_Info_free(NULL));
    T(MPI_SUCCESS, MPI_Info_get_nkeys(i, &n));
    if (n != 0)
        ct_fail(x->rank, &x->errs, __LINE__, "failed Info_set calls added %d keys", n);
    MPI_Info_free(&i);
}

/* ---- MPI-IO (issue 19): every file function on MPI_FILE_NULL and on an invalid handle is
 * MPI_ERR_FILE (through MPI_FILE_NULL's handler, MPI_ERRORS_RETURN); then argument errors on an
 * open file (its handler is MPI_ERRORS_RETURN by default). */
static void file_family(bx_t *x, MPI_Datatype unc)
{
    MPI_File f, fh, bad[2] = {MPI_FILE_NULL, BOGUS(MPI_File)};
    MPI_Status st;
    MPI_Request rq;
    MPI_Group g;
    MPI_Info inf;
    MPI_Datatype t;
    MPI_Offset off;
    MPI_Aint ext;
    MPI_Count cext;
    int iv, buf[4] = {0}, k;
    char rep[MPI_MAX_DATAREP_STRING], path[64];
    for (k = 0; k < NBAD && k < 2; k++) {
        f = bad[k];
        T(MPI_ERR_FILE, MPI_File_close(&f));
        T(MPI_ERR_FILE, MPI_File_set_size(f, 0));
        T(MPI_ERR_FILE, MPI_File_preallocate(f, 0));
        T(MPI_ERR_FILE, MPI_File_get_size(f, &off));
        T(MPI_ERR_FILE, MPI_File_get_group(f, &g));
        T(MPI_ERR_FILE, MPI_File_get_amode(f, &iv));
        T(MPI_ERR_FILE, MPI_File_set_info(f, MPI_INFO_NULL));
        T(MPI_ERR_FILE, MPI_File_get_info(f, &inf));
        T(MPI_ERR_FILE, MPI_File_set_view(f, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
        T(MPI_ERR_FILE, MPI_File_get_view(f, &off, &t, &t, rep));
        T(MPI_ERR_FILE, MPI_File_seek(f, 0, MPI_SEEK_SET));
        T(MPI_ERR_FILE, MPI_File_get_position(f, &off));
        T(MPI_ERR_FILE, MPI_File_get_byte_offset(f, 0, &off));
        T(MPI_ERR_FILE, MPI_File_seek_shared(f, 0, MPI_SEEK_SET));
        T(MPI_ERR_FILE, MPI_File_get_position_shared(f, &off));
        T(MPI_ERR_FILE, MPI_File_get_type_extent(f, MPI_INT, &ext));
        T(MPI_ERR_FILE, MPI_File_get_type_extent_c(f, MPI_INT, &cext));
        T(MPI_ERR_FILE, MPI_File_set_atomicity(f, 0));
        T(MPI_ERR_FILE, MPI_File_get_atomicity(f, &iv));
        T(MPI_ERR_FILE, MPI_File_sync(f));
        T(MPI_ERR_FILE, MPI_File_read_at(f, 0, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_read_at_c(f, 0, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_at(f, 0, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_at_c(f, 0, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_read_at_all(f, 0, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_read_at_all_c(f, 0, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_at_all(f, 0, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_at_all_c(f, 0, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_iread_at(f, 0, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iread_at_c(f, 0, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite_at(f, 0, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite_at_c(f, 0, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iread_at_all(f, 0, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iread_at_all_c(f, 0, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite_at_all(f, 0, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite_at_all_c(f, 0, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_read_at_all_begin(f, 0, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_read_at_all_begin_c(f, 0, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_write_at_all_begin(f, 0, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_write_at_all_begin_c(f, 0, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_read(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_read_c(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_c(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_read_all(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_read_all_c(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_all(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_all_c(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_iread(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iread_c(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite_c(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iread_all(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iread_all_c(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite_all(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite_all_c(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_read_all_begin(f, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_read_all_begin_c(f, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_write_all_begin(f, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_write_all_begin_c(f, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_read_shared(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_read_shared_c(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_shared(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_shared_c(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_iread_shared(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iread_shared_c(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite_shared(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_iwrite_shared_c(f, buf, 1, MPI_INT, &rq));
        T(MPI_ERR_FILE, MPI_File_read_ordered(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_read_ordered_c(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_ordered(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_write_ordered_c(f, buf, 1, MPI_INT, &st));
        T(MPI_ERR_FILE, MPI_File_read_ordered_begin(f, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_read_ordered_begin_c(f, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_write_ordered_begin(f, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_write_ordered_begin_c(f, buf, 1, MPI_INT));
        T(MPI_ERR_FILE, MPI_File_read_at_all_end(f, buf, &st));
        T(MPI_ERR_FILE, MPI_File_write_at_all_end(f, buf, &st));
        T(MPI_ERR_FILE, MPI_File_read_all_end(f, buf, &st));
        T(MPI_ERR_FILE, MPI_File_write_all_end(f, buf, &st));
        T(MPI_ERR_FILE, MPI_File_read_ordered_end(f, buf, &st));
        T(MPI_ERR_FILE, MPI_File_write_ordered_end(f, buf, &st));
    }
    {
        MPI_Errhandler eh;
        T(MPI_ERR_FILE, MPI_File_set_errhandler(BOGUS(MPI_File), MPI_ERRORS_RETURN));
        T(MPI_ERR_FILE, MPI_File_get_errhandler(BOGUS(MPI_File), &eh));
        T(MPI_ERR_ARG, MPI_File_create_errhandler(NULL, &eh));
        T(MPI_ERR_FILE, MPI_File_call_errhandler(BOGUS(MPI_File), MPI_ERR_OTHER));
        T(MPI_SUCCESS, MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    }
    T(MPI_ERR_COMM, MPI_File_open(MPI_COMM_NULL, "x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    T(MPI_ERR_ARG, MPI_File_open(MPI_COMM_WORLD, NULL, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    T(MPI_ERR_AMODE, MPI_File_open(MPI_COMM_WORLD, "x", MPI_MODE_RDONLY | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    T(MPI_ERR_ARG, MPI_File_delete(NULL, MPI_INFO_NULL));
    snprintf(path, sizeof path, "/tmp/badinput-io-%d.dat", (int)getpid());
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    T(MPI_SUCCESS, MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    T(MPI_ERR_COUNT, MPI_File_write_at(fh, 0, buf, -1, MPI_INT, &st));
    T(MPI_ERR_TYPE, MPI_File_write_at(fh, 0, buf, 1, unc, &st));
    T(MPI_ERR_TYPE, MPI_File_write_at(fh, 0, buf, 1, MPI_DATATYPE_NULL, &st));
    T(MPI_ERR_BUFFER, MPI_File_write_at(fh, 0, NULL, 1, MPI_INT, &st));
    T(MPI_ERR_ARG, MPI_File_read_at(fh, -1, buf, 1, MPI_INT, &st));
    T(MPI_ERR_ARG, MPI_File_seek(fh, 0, 12345));
    T(MPI_ERR_ARG, MPI_File_get_size(fh, NULL));
    T(MPI_ERR_TYPE, MPI_File_set_view(fh, 0, unc, MPI_INT, "native", MPI_INFO_NULL));
    T(MPI_ERR_ARG, MPI_File_set_view(fh, -2, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    T(MPI_ERR_UNSUPPORTED_DATAREP, MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "nope", MPI_INFO_NULL));
    T(MPI_ERR_OTHER, MPI_File_read_all_end(fh, buf, &st));
    T(MPI_SUCCESS, MPI_File_close(&fh));
}
/* ---- end of MPI-IO (issue 19) ---- */

/* ---- after the table: the library still works ---- */

static void traffic(bx_t *x)
{
    int P = x->size, me = x->rank, right = (me + 1) % P, left = (me + P - 1) % P, got = -1, sum = 0;
    MPI_Comm d;
    MPI_Status st;
    int rc = MPI_Sendrecv(&me, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
    if (rc != MPI_SUCCESS || got != left)
        ct_fail(me, &x->errs, __LINE__, "ring after the table: got %d from %d (class %d)", got, left, ct_class(rc));
    rc = MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS || sum != P * (P - 1) / 2)
        ct_fail(me, &x->errs, __LINE__, "Allreduce after the table: %d", sum);
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &d);
    if (rc == MPI_SUCCESS) {
        int r = -1;
        MPI_Bcast(&r, 1, MPI_INT, 0, d);
        r = me;
        MPI_Bcast(&r, 1, MPI_INT, P - 1, d);
        if (r != P - 1)
            ct_fail(me, &x->errs, __LINE__, "Bcast on a new communicator: %d", r);
        MPI_Comm_free(&d);
    } else
        ct_fail(me, &x->errs, __LINE__, "MPI_Comm_dup after the table: class %d", ct_class(rc));
    /* Nothing may wait in the queues: a probe for any message finds none. */
    int flag = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (flag)
        ct_fail(me, &x->errs, __LINE__, "a message from %d (tag %d) was left by a failed call", st.MPI_SOURCE, st.MPI_TAG);
}

/* issue 18 (RMA): every window call with a null, invalid and freed window (MPI_ERR_WIN on
 * MPI_COMM_WORLD's handler), then argument and epoch errors on a live window. */
static void win_eh_fn(MPI_Win *w, int *code, ...)
{
    (void) w, (void) code;
}

static void rma_family(bx_t *x, MPI_Comm freedc)
{
    int b[4] = {0}, flag, k, du;
    MPI_Win w, freedw, t;
    MPI_Request rq;
    MPI_Group g;
    MPI_Info info;
    MPI_Errhandler eh;
    MPI_Aint sz;
    void *p;
    char name[MPI_MAX_OBJECT_NAME];
    int n;
    T(MPI_SUCCESS, MPI_Win_create(b, sizeof b, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &freedw));
    t = freedw;
    T(MPI_SUCCESS, MPI_Win_free(&t));
    MPI_Win bad[3] = {MPI_WIN_NULL, BOGUS(MPI_Win), freedw};
    for (int i = 0; i < NBAD; i++) {
        MPI_Win v = bad[i];
        T(MPI_ERR_WIN, MPI_Put(b, 1, MPI_INT, 0, 0, 1, MPI_INT, v));
        T(MPI_ERR_WIN, MPI_Put_c(b, 1, MPI_INT, 0, 0, 1, MPI_INT, v));
        T(MPI_ERR_WIN, MPI_Get(b, 1, MPI_INT, 0, 0, 1, MPI_INT, v));
        T(MPI_ERR_WIN, MPI_Get_c(b, 1, MPI_INT, 0, 0, 1, MPI_INT, v));
        T(MPI_ERR_WIN, MPI_Rput(b, 1, MPI_INT, 0, 0, 1, MPI_INT, v, &rq));
        T(MPI_ERR_WIN, MPI_Rput_c(b, 1, MPI_INT, 0, 0, 1, MPI_INT, v, &rq));
        T(MPI_ERR_WIN, MPI_Rget(b, 1, MPI_INT, 0, 0, 1, MPI_INT, v, &rq));
        T(MPI_ERR_WIN, MPI_Rget_c(b, 1, MPI_INT, 0, 0, 1, MPI_INT, v, &rq));
        T(MPI_ERR_WIN, MPI_Accumulate(b, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, v));
        T(MPI_ERR_WIN, MPI_Accumulate_c(b, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, v));
        T(MPI_ERR_WIN, MPI_Raccumulate(b, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, v, &rq));
        T(MPI_ERR_WIN, MPI_Raccumulate_c(b, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, v, &rq));
        T(MPI_ERR_WIN, MPI_Get_accumulate(b, 1, MPI_INT, b + 1, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, v));
        T(MPI_ERR_WIN, MPI_Get_accumulate_c(b, 1, MPI_INT, b + 1, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, v));
        T(MPI_ERR_WIN, MPI_Rget_accumulate(b, 1, MPI_INT, b + 1, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, v, &rq));
        T(MPI_ERR_WIN, MPI_Rget_accumulate_c(b, 1, MPI_INT, b + 1, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, v, &rq));
        T(MPI_ERR_WIN, MPI_Fetch_and_op(b, b + 1, MPI_INT, 0, 0, MPI_SUM, v));
        T(MPI_ERR_WIN, MPI_Compare_and_swap(b, b + 1, b + 2, MPI_INT, 0, 0, v));
        T(MPI_ERR_WIN, MPI_Win_fence(0, v));
        T(MPI_ERR_WIN, MPI_Win_post(MPI_GROUP_EMPTY, 0, v));
        T(MPI_ERR_WIN, MPI_Win_start(MPI_GROUP_EMPTY, 0, v));
        T(MPI_ERR_WIN, MPI_Win_complete(v));
        T(MPI_ERR_WIN, MPI_Win_wait(v));
        T(MPI_ERR_WIN, MPI_Win_test(v, &flag));
        T(MPI_ERR_WIN, MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, v));
        T(MPI_ERR_WIN, MPI_Win_unlock(0, v));
        T(MPI_ERR_WIN, MPI_Win_lock_all(0, v));
        T(MPI_ERR_WIN, MPI_Win_unlock_all(v));
        T(MPI_ERR_WIN, MPI_Win_flush(0, v));
        T(MPI_ERR_WIN, MPI_Win_flush_all(v));
        T(MPI_ERR_WIN, MPI_Win_flush_local(0, v));
        T(MPI_ERR_WIN, MPI_Win_flush_local_all(v));
        T(MPI_ERR_WIN, MPI_Win_sync(v));
        T(MPI_ERR_WIN, MPI_Win_attach(v, b, sizeof b));
        T(MPI_ERR_WIN, MPI_Win_detach(v, b));
        T(MPI_ERR_WIN, MPI_Win_get_group(v, &g));
        T(MPI_ERR_WIN, MPI_Win_shared_query(v, 0, &sz, &du, &p));
        T(MPI_ERR_WIN, MPI_Win_shared_query_c(v, 0, &sz, &sz, &p));
        T(MPI_ERR_WIN, MPI_Win_set_attr(v, MPI_KEYVAL_INVALID, NULL));
        T(MPI_ERR_WIN, MPI_Win_get_attr(v, MPI_WIN_BASE, &p, &flag));
        T(MPI_ERR_WIN, MPI_Win_delete_attr(v, MPI_KEYVAL_INVALID));
        T(MPI_ERR_WIN, MPI_Win_set_info(v, MPI_INFO_NULL));
        T(MPI_ERR_WIN, MPI_Win_get_info(v, &info));
        T(MPI_ERR_WIN, MPI_Win_set_name(v, "x"));
        T(MPI_ERR_WIN, MPI_Win_get_name(v, name, &n));
        T(MPI_ERR_WIN, MPI_Win_set_errhandler(v, MPI_ERRORS_RETURN));
        T(MPI_ERR_WIN, MPI_Win_get_errhandler(v, &eh));
        T(MPI_ERR_WIN, MPI_Win_call_errhandler(v, MPI_ERR_OTHER));
        T(MPI_ERR_WIN, MPI_Win_free(&v));
    }
    T(MPI_ERR_ARG, MPI_Win_free(NULL));
    /* Creation: bad communicator, size, unit, output pointer. */
    T(MPI_ERR_COMM, MPI_Win_create(b, sizeof b, 1, MPI_INFO_NULL, MPI_COMM_NULL, &w));
    T(MPI_ERR_COMM, MPI_Win_create(b, sizeof b, 1, MPI_INFO_NULL, freedc, &w));
    T(MPI_ERR_SIZE, MPI_Win_create(b, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    T(MPI_ERR_SIZE, MPI_Win_create_c(b, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    T(MPI_ERR_DISP, MPI_Win_create(b, sizeof b, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    T(MPI_ERR_SIZE, MPI_Win_allocate(-1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &w));
    T(MPI_ERR_SIZE, MPI_Win_allocate_c(-1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &w));
    T(MPI_ERR_ARG, MPI_Win_allocate(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, NULL, &w));
    T(MPI_ERR_SIZE, MPI_Win_allocate_shared(-1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &w));
    T(MPI_ERR_DISP, MPI_Win_allocate_shared_c(8, -1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &w));
    T(MPI_ERR_COMM, MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_NULL, &w));
#if HAVE_MPI41 /* MPICH 4.0 crashes on invalid handles */
    T(MPI_ERR_INFO, MPI_Win_create_dynamic(BOGUS(MPI_Info), MPI_COMM_WORLD, &w));
#endif
    /* A live window: argument and epoch errors. */
    T(MPI_SUCCESS, MPI_Win_create(b, sizeof b, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    T(MPI_SUCCESS, MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    T(MPI_ERR_RMA_SYNC, MPI_Put(b, 1, MPI_INT, 0, 0, 1, MPI_INT, w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_complete(w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_wait(w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_unlock(0, w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_unlock_all(w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_flush(0, w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_flush_all(w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_flush_local(0, w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_flush_local_all(w));
    T(MPI_ERR_LOCKTYPE, MPI_Win_lock(77, 0, 0, w));
    T(MPI_ERR_ASSERT, MPI_Win_fence(-1, w));
    T(MPI_ERR_RANK, MPI_Win_lock(MPI_LOCK_SHARED, x->size, 0, w));
    T(MPI_ERR_RMA_FLAVOR, MPI_Win_attach(w, b, sizeof b));
    T(MPI_ERR_RMA_FLAVOR, MPI_Win_detach(w, b));
    T(MPI_ERR_RMA_FLAVOR, MPI_Win_shared_query(w, 0, &sz, &du, &p));
    T(MPI_ERR_GROUP, MPI_Win_post(MPI_GROUP_NULL, 0, w));
#if HAVE_MPI41 /* MPICH 4.0 crashes on invalid handles */
    T(MPI_ERR_GROUP, MPI_Win_start(BOGUS(MPI_Group), 0, w));
#endif
    T(MPI_ERR_ARG, MPI_Win_get_group(w, NULL));
    T(MPI_ERR_ARG, MPI_Win_test(w, NULL));
    T(MPI_ERR_ARG, MPI_Win_set_name(w, NULL));
    T(MPI_ERR_ARG, MPI_Win_get_errhandler(w, NULL));
#if HAVE_MPI41 /* MPICH 4.0 crashes on invalid handles */
    T(ERR_ERRHANDLER, MPI_Win_set_errhandler(w, BOGUS(MPI_Errhandler)));
#endif
    T(MPI_ERR_ARG, MPI_Win_create_errhandler(NULL, &eh));
    T(MPI_SUCCESS, MPI_Win_create_errhandler(win_eh_fn, &eh));
    T(MPI_SUCCESS, MPI_Errhandler_free(&eh));
    T(MPI_ERR_ARG, MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, NULL, NULL));
    T(MPI_SUCCESS, MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &k, NULL));
    T(MPI_ERR_KEYVAL, MPI_Win_set_attr(w, MPI_WIN_BASE, NULL));
    T(MPI_ERR_KEYVAL, MPI_Win_delete_attr(w, k));
    T(MPI_SUCCESS, MPI_Win_set_attr(w, k, b));
    T(MPI_SUCCESS, MPI_Win_get_attr(w, k, &p, &flag));
    T(MPI_ERR_ARG, MPI_Win_get_attr(w, k, &p, NULL));
    T(MPI_SUCCESS, MPI_Win_delete_attr(w, k));
    T(MPI_SUCCESS, MPI_Win_free_keyval(&k));
    T(MPI_ERR_KEYVAL, MPI_Win_free_keyval(&k));
    T(MPI_ERR_ARG, MPI_Win_free_keyval(NULL));
#if HAVE_MPI41 /* MPICH 4.0 crashes on invalid handles */
    T(MPI_ERR_INFO, MPI_Win_set_info(w, BOGUS(MPI_Info)));
#endif
    T(MPI_ERR_ARG, MPI_Win_get_info(w, NULL));
    T(MPI_ERR_ARG, MPI_Win_get_name(w, NULL, &n));
    T(MPI_SUCCESS, MPI_Win_fence(0, w));
    T(MPI_ERR_RANK, MPI_Put(b, 1, MPI_INT, x->size, 0, 1, MPI_INT, w));
    T(MPI_ERR_COUNT, MPI_Get(b, -1, MPI_INT, 0, 0, 1, MPI_INT, w));
    T(MPI_ERR_TYPE, MPI_Put(b, 1, MPI_DATATYPE_NULL, 0, 0, 1, MPI_INT, w));
    T(MPI_ERR_TYPE, MPI_Put(b, 2, MPI_INT, 0, 0, 1, MPI_INT, w));
    T(MPI_ERR_RMA_RANGE, MPI_Put(b, 1, MPI_INT, 0, 4, 1, MPI_INT, w));
    T(MPI_ERR_DISP, MPI_Get(b, 1, MPI_INT, 0, -1, 1, MPI_INT, w));
    T(MPI_ERR_OP, MPI_Accumulate(b, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_OP_NULL, w));
    T(MPI_ERR_OP, MPI_Accumulate(b, 1, MPI_FLOAT, 0, 0, 1, MPI_FLOAT, MPI_BAND, w));
    T(MPI_ERR_TYPE, MPI_Compare_and_swap(b, b + 1, b + 2, MPI_FLOAT, 0, 0, w));
    T(MPI_ERR_ARG, MPI_Rput(b, 1, MPI_INT, 0, 0, 1, MPI_INT, w, NULL));
    T(MPI_SUCCESS, MPI_Put(b, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w));
    T(MPI_SUCCESS, MPI_Win_fence(MPI_MODE_NOSUCCEED, w));
    T(MPI_SUCCESS, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, x->rank, 0, w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_lock(MPI_LOCK_SHARED, x->rank, 0, w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_lock_all(0, w));
    T(MPI_ERR_RMA_SYNC, MPI_Win_free(&w));
    T(MPI_SUCCESS, MPI_Win_unlock(x->rank, w));
    T(MPI_SUCCESS, MPI_Win_call_errhandler(w, MPI_ERR_OTHER));
    T(MPI_SUCCESS, MPI_Win_free(&w));
}

int main(int argc, char **argv)
{
    bx_t ctx, *x = &ctx;
    memset(x, 0, sizeof ctx);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &x->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &x->size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* Objects that are invalid because they were freed, or not committed. */
    MPI_Comm freedc, c2;
    MPI_Comm_dup(MPI_COMM_WORLD, &freedc);
    c2 = freedc;
    MPI_Comm_free(&c2);
    MPI_Datatype unc, freedt, t2;
    MPI_Type_contiguous(2, MPI_INT, &unc);
    MPI_Type_contiguous(3, MPI_INT, &freedt);
    MPI_Type_commit(&freedt);
    t2 = freedt;
    MPI_Type_free(&t2);

    env_family(x, &argc, &argv);
    error_family(x);
    comm_family(x, freedc);
    group_family(x);
    p2p_family(x, unc, freedt, freedc);
    coll_family(x, unc, freedc);
    topo_family(x);
    type_family(x, unc, freedt);
    op_family(x);
    attr_family(x, freedc);
    info_family(x, argc, argv);
    rma_family(x, freedc); /* issue 18 */
    file_family(x, unc); /* MPI-IO (issue 19) */
    traffic(x);
    MPI_Type_free(&unc);

    int lines = x->lines, all = 0;
    MPI_Allreduce(&lines, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (x->rank == 0)
        printf("rank 0: %d table lines per rank\n", lines);
    MPI_Finalize();

    /* After MPI_Finalize: only the few calls the standard allows still work. */
    int flag = 0, v, sv;
    T(MPI_SUCCESS, MPI_Finalized(&flag));
    if (!flag)
        ct_fail(x->rank, &x->errs, __LINE__, "MPI_Finalized says no after MPI_Finalize");
    T(MPI_SUCCESS, MPI_Initialized(&flag));
    T(MPI_SUCCESS, MPI_Get_version(&v, &sv));
    T(MPI_ERR_OTHER, MPI_Init(&argc, &argv));
    T(MPI_ERR_OTHER, MPI_Comm_rank(MPI_COMM_WORLD, &v));
    T(MPI_ERR_OTHER, MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD));
    T(MPI_ERR_OTHER, MPI_Barrier(MPI_COMM_WORLD));
    T(MPI_ERR_OTHER, MPI_Finalize());
    if (x->errs == 0)
        printf("rank %d: OK\n", x->rank);
    else
        printf("rank %d: FAILED with %d errors\n", x->rank, x->errs);
    return x->errs ? 1 : 0;
}
