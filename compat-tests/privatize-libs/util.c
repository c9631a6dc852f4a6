/* libputil.so: a second library, needed by libphysics.so only. */
int util_calls;                  /* zero-initialised global of a library */
__thread int util_tls = 3;       /* a thread-local of a library */
int util_count(int rank)
{
    util_tls = rank;
    return ++util_calls;
}
int util_tls_value(void) { return util_tls; }
