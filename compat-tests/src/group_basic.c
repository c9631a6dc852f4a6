/* Groups: size, rank, translate_ranks, incl/excl/range_incl, union,
 * intersection, difference, compare, MPI_GROUP_EMPTY, free. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, r, s, res;
    MPI_Group wg, rg, eg, og, ug, ig, dg, reg;
    int *all, *out, *rev, *evens;
    int ne, no;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ne = (size + 1) / 2;
    no = size / 2;

    all = ct_malloc(sizeof(int) * size);
    out = ct_malloc(sizeof(int) * size);
    rev = ct_malloc(sizeof(int) * size);
    evens = ct_malloc(sizeof(int) * ne);
    for (i = 0; i < size; i++) {
        all[i] = i;
        rev[i] = size - 1 - i;
    }
    for (i = 0; i < ne; i++)
        evens[i] = 2 * i;

    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_size(wg, &s);
    MPI_Group_rank(wg, &r);
    CHECK(s == size && r == rank, "world group size %d rank %d", s, r);
    MPI_Group_compare(wg, wg, &res);
    CHECK(res == MPI_IDENT, "compare(wg, wg) = %d", res);

    /* reversed */
    MPI_Group_incl(wg, size, rev, &rg);
    MPI_Group_rank(rg, &r);
    CHECK(r == size - 1 - rank, "reversed group rank %d", r);
    MPI_Group_translate_ranks(wg, size, all, rg, out);
    for (i = 0; i < size; i++)
        CHECK(out[i] == size - 1 - i, "translate %d -> %d", i, out[i]);
    MPI_Group_compare(wg, rg, &res);
    CHECK(res == (size == 1 ? MPI_IDENT : MPI_SIMILAR), "compare(wg, rg) = %d", res);

    /* evens and odds */
    MPI_Group_incl(wg, ne, evens, &eg);
    MPI_Group_excl(wg, ne, evens, &og);
    MPI_Group_size(eg, &s);
    CHECK(s == ne, "evens size %d", s);
    MPI_Group_size(og, &s);
    CHECK(s == no, "odds size %d", s);
    MPI_Group_rank(og, &r);
    CHECK(r == (rank % 2 ? rank / 2 : MPI_UNDEFINED), "rank in odds %d", r);
    MPI_Group_rank(eg, &r);
    CHECK(r == (rank % 2 ? MPI_UNDEFINED : rank / 2), "rank in evens %d", r);
    MPI_Group_translate_ranks(wg, size, all, og, out);
    for (i = 0; i < size; i++)
        CHECK(out[i] == (i % 2 ? i / 2 : MPI_UNDEFINED), "translate to odds %d -> %d", i, out[i]);
    {
        int pn = MPI_PROC_NULL, o = -5;
        MPI_Group_translate_ranks(wg, 1, &pn, eg, &o);
        CHECK(o == MPI_PROC_NULL, "translate PROC_NULL -> %d", o);
    }

    {
        int ranges[1][3];
        ranges[0][0] = 0;
        ranges[0][1] = size - 1;
        ranges[0][2] = 2;
        MPI_Group_range_incl(wg, 1, ranges, &reg);
    }
    MPI_Group_compare(eg, reg, &res);
    CHECK(res == MPI_IDENT, "compare(evens, range evens) = %d", res);

    MPI_Group_union(eg, og, &ug);
    MPI_Group_size(ug, &s);
    CHECK(s == size, "union size %d", s);
    MPI_Group_compare(ug, wg, &res);
    CHECK(res == (size <= 2 ? MPI_IDENT : MPI_SIMILAR), "compare(union, wg) = %d", res);
    MPI_Group_translate_ranks(ug, size, all, wg, out);
    for (i = 0; i < size; i++) {
        int expect = i < ne ? 2 * i : 2 * (i - ne) + 1;
        CHECK(out[i] == expect, "union member %d is world %d", i, out[i]);
    }

    MPI_Group_intersection(eg, og, &ig);
    MPI_Group_size(ig, &s);
    CHECK(s == 0, "intersection size %d", s);
    MPI_Group_compare(ig, MPI_GROUP_EMPTY, &res);
    CHECK(res == MPI_IDENT, "compare(intersection, GROUP_EMPTY) = %d", res);
    MPI_Group_size(MPI_GROUP_EMPTY, &s);
    MPI_Group_rank(MPI_GROUP_EMPTY, &r);
    CHECK(s == 0 && r == MPI_UNDEFINED, "GROUP_EMPTY size %d rank %d", s, r);

    MPI_Group_difference(wg, eg, &dg);
    MPI_Group_compare(dg, og, &res);
    CHECK(res == MPI_IDENT, "compare(world - evens, odds) = %d", res);

    /* group of a split communicator matches the group built by hand */
    {
        MPI_Comm c;
        MPI_Group cg;
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c);
        MPI_Comm_group(c, &cg);
        MPI_Group_compare(cg, rg, &res);
        CHECK(res == MPI_IDENT, "compare(group(rev comm), rg) = %d", res);
        MPI_Group_free(&cg);
        MPI_Comm_free(&c);
    }

    MPI_Group_free(&dg);
    MPI_Group_free(&ig);
    MPI_Group_free(&ug);
    MPI_Group_free(&reg);
    MPI_Group_free(&og);
    MPI_Group_free(&eg);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    CHECK(wg == MPI_GROUP_NULL && rg == MPI_GROUP_NULL, "Group_free did not null handles");

    free(all);
    free(out);
    free(rev);
    free(evens);
    return ct_finish(rank, errs);
}
