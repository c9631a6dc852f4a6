/* The C library's hidden state, per rank: rand/srand, random/srandom/initstate/
 * setstate, the drand48 family and strtok keep their state in the C library,
 * one per process. Under separate processes each rank has its own; under
 * Toucan each subrank must have its own too. Every rank draws its own
 * sequences, with a barrier between any two draws so that the subranks of a
 * process interleave (and, in SMP mode, run at once on two workers), and
 * prints a checksum of each: the output must equal plain MPICH's. */
#define _GNU_SOURCE
#include "ct.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DRAWS 40

/* A checksum of a sequence of values. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    return (h ^ v) * 1099511628211ull;
}

static void sync_all(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i;
    uint64_t h;
    char statebuf[64], *old, *back;
    unsigned short xsubi[3], seed[3], param[7], *prev;
    char text[200], *tok;
    unsigned int r_state;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* rand without srand: the sequence of seed 1, in every rank. */
    h = 14695981039346656037ull;
    for (i = 0; i < DRAWS; i++) {
        h = mix(h, (uint64_t)rand());
        sync_all();
    }
    ct_say(rank, "rand unseeded %016llx", (unsigned long long)h);

    /* srand with a seed of its own. */
    srand(1000 + rank);
    h = 14695981039346656037ull;
    for (i = 0; i < DRAWS; i++) {
        h = mix(h, (uint64_t)rand());
        sync_all();
    }
    ct_say(rank, "rand seeded %016llx", (unsigned long long)h);

    /* rand_r keeps its state in the caller's variable. */
    r_state = 7u * rank;
    h = 14695981039346656037ull;
    for (i = 0; i < DRAWS; i++)
        h = mix(h, (uint64_t)rand_r(&r_state));
    ct_say(rank, "rand_r %016llx", (unsigned long long)h);

    /* random/srandom, then a state of our own with initstate and back with setstate. */
    srandom(77 + 3 * rank);
    h = 14695981039346656037ull;
    for (i = 0; i < DRAWS / 2; i++) {
        h = mix(h, (uint64_t)random());
        sync_all();
    }
    old = initstate(5 + rank, statebuf, sizeof statebuf);
    CHECK(old != NULL, "initstate returned NULL");
    for (i = 0; i < DRAWS / 2; i++) {
        h = mix(h, (uint64_t)random());
        sync_all();
    }
    back = setstate(old);
    CHECK(back == statebuf, "setstate did not return the initstate buffer");
    for (i = 0; i < DRAWS / 2; i++) {
        h = mix(h, (uint64_t)random());
        sync_all();
    }
    back = setstate(statebuf);
    CHECK(back == old, "setstate did not return the previous state");
    for (i = 0; i < DRAWS / 2; i++) {
        h = mix(h, (uint64_t)rand());
        sync_all();
    }
    setstate(old);
    ct_say(rank, "random %016llx", (unsigned long long)h);

    /* drand48 and relatives: unseeded, seeded, seed48, lcong48, and the x-taking forms. */
    h = 14695981039346656037ull;
    for (i = 0; i < DRAWS / 4; i++) {
        h = mix(h, (uint64_t)lrand48());
        sync_all();
    }
    srand48(31 + rank);
    for (i = 0; i < DRAWS / 4; i++) {
        h = mix(h, (uint64_t)(drand48() * 4294967296.0));
        h = mix(h, (uint64_t)lrand48());
        h = mix(h, (uint64_t)(uint32_t)mrand48());
        sync_all();
    }
    seed[0] = (unsigned short)(rank + 1);
    seed[1] = 0x1234;
    seed[2] = 0x5678;
    prev = seed48(seed);
    h = mix(h, ((uint64_t)prev[0] << 32) | ((uint64_t)prev[1] << 16) | prev[2]);
    for (i = 0; i < DRAWS / 4; i++) {
        h = mix(h, (uint64_t)lrand48());
        sync_all();
    }
    xsubi[0] = 1;
    xsubi[1] = (unsigned short)rank;
    xsubi[2] = 3;
    for (i = 0; i < DRAWS / 4; i++) {
        h = mix(h, (uint64_t)(erand48(xsubi) * 4294967296.0));
        h = mix(h, (uint64_t)nrand48(xsubi));
        h = mix(h, (uint64_t)(uint32_t)jrand48(xsubi));
        sync_all();
    }
    /* lcong48 changes the multiplier and addend that erand48 and the others use too. */
    param[0] = 1;
    param[1] = 2;
    param[2] = (unsigned short)rank;
    param[3] = 0xe66d;
    param[4] = 0xdeec;
    param[5] = 0x0005 + (unsigned short)rank;
    param[6] = 0x11 + (unsigned short)rank;
    lcong48(param);
    for (i = 0; i < DRAWS / 4; i++) {
        h = mix(h, (uint64_t)lrand48());
        h = mix(h, (uint64_t)nrand48(xsubi));
        sync_all();
    }
    ct_say(rank, "drand48 family %016llx", (unsigned long long)h);

    /* strtok: each rank walks its own string, one token per barrier. */
    snprintf(text, sizeof text, "alpha,beta;;gamma %d,delta;rank-%d,,epsilon", rank * 11, rank);
    h = 14695981039346656037ull;
    i = 0;
    for (tok = strtok(text, ",; "); tok != NULL; tok = strtok(NULL, ",; ")) {
        size_t k;
        for (k = 0; tok[k]; k++)
            h = mix(h, (unsigned char)tok[k]);
        h = mix(h, 0);
        i++;
        sync_all();
    }
    /* Everybody takes the same number of barriers: ranks with fewer tokens make up. */
    {
        int most = 0;
        MPI_Allreduce(&i, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        for (; i < most; i++)
            sync_all();
    }
    ct_say(rank, "strtok %016llx", (unsigned long long)h);

    return ct_finish(rank, errs);
}
