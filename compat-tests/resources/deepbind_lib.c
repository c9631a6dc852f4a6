/* compat-tests/resources/deepbind_lib.c: a library that deepbind.c opens with RTLD_DEEPBIND
 * (its own scope first: the C library's malloc family before the program's). Blocks cross
 * the boundary both ways, and the C library allocates for it (strdup). */
#include <stdlib.h>
#include <string.h>

/* Frees a block the program allocated. */
void deep_free(void *p)
{
    free(p);
}

/* Grows a block the program allocated. */
void *deep_realloc(void *p, size_t n)
{
    return realloc(p, n);
}

/* A block for the program to free. */
void *deep_alloc(size_t n)
{
    return malloc(n);
}

/* strdup allocates inside the C library; this library frees the copy. */
size_t deep_strdup_len(const char *s)
{
    char *d = strdup(s);
    size_t n = d ? strlen(d) : 0;
    free(d);
    return n;
}
