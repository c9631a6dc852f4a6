! f_mpi1 (mpif.h): the routines Fortran binds by hand or through trampolines: the MPI-1
! names with INTEGER addresses (MPI_ADDRESS, MPI_TYPE_HVECTOR/HINDEXED/STRUCT with INTEGER
! strides and displacements, MPI_TYPE_EXTENT/LB/UB), MPI-1 keyvals with copy and delete
! callbacks written in Fortran (MPI_KEYVAL_CREATE, MPI_DUP_FN, MPI_NULL_COPY_FN), a
! generalized request whose query/free/cancel callbacks are Fortran (MPI_GREQUEST_START),
! MPI_TYPE_CREATE_F90_INTEGER/REAL/COMPLEX, and MPI_NEIGHBOR_ALLTOALLW on a ring.
program f_mpi1
  call body()
end program

subroutine fail(rank, nerr, what)
  implicit none
  integer, intent(in) :: rank
  integer, intent(inout) :: nerr
  character(len=*), intent(in) :: what
  nerr = nerr + 1
  write (*, '(a,i0,2a)') 'rank ', rank, ': FAIL ', what
end subroutine

! MPI-1 copy callback: the copy gets the value plus 1000 (every argument an INTEGER).
subroutine copy1(oldcomm, keyval, extra, valin, valout, flag, ierr)
  implicit none
  integer :: oldcomm, keyval, extra, valin, valout, ierr
  logical :: flag
  valout = valin + 1000 + extra
  flag = .true.
  ierr = 0
end subroutine

! MPI-1 delete callback: says so (tests have no writable globals to count in).
subroutine delete1(comm, keyval, val, extra, ierr)
  implicit none
  integer :: comm, keyval, val, extra, ierr, r
  call MPI_Comm_rank(comm, r, ierr)
  write (*, '(a,i0,a,2i6)') 'rank ', r, ': delete callback value, extra', val, extra
  ierr = 0
end subroutine

! Generalized request callbacks: the query fills the status from the extra_state.
subroutine gquery(extra, status, ierr)
  implicit none
  include 'mpif.h'
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer :: status(MPI_STATUS_SIZE), ierr
  call MPI_Status_set_elements(status, MPI_INTEGER, int(extra), ierr)
  call MPI_Status_set_cancelled(status, .false., ierr)
  status(MPI_SOURCE) = MPI_UNDEFINED
  status(MPI_TAG) = MPI_UNDEFINED
  ierr = 0
end subroutine

subroutine gfree(extra, ierr)
  implicit none
  include 'mpif.h'
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer :: ierr, r
  call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)
  write (*, '(a,i0,a,i0)') 'rank ', r, ': grequest free callback, extra ', extra
  ierr = 0
end subroutine

subroutine gcancel(extra, complete, ierr)
  implicit none
  include 'mpif.h'
  integer(kind=MPI_ADDRESS_KIND) :: extra
  logical :: complete
  integer :: ierr, r
  call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)
  write (*, '(a,i0,a,i0,a,l1)') 'rank ', r, ': grequest cancel callback, extra ', extra, &
    ', complete ', complete
  ierr = 0
end subroutine

subroutine body()
  implicit none
  include 'mpif.h'
  external copy1, delete1, gquery, gfree, gcancel
  integer :: ierr, rank, np, nerr, i, right, left, key, key2, val, dup, t, t2, t3, ext, lb, ub
  integer :: st(MPI_STATUS_SIZE), req, cnt, addr, addr2, ierr2, isz, dsz, ni, na, nd, comb, ints(2), cart
  integer :: bl(2), displs(2), types(2), dims(1), sc(2), rc(2)
  integer :: tsend(2), trecv(2), ti, tr, tc, tr2, ti2
  integer(kind=MPI_ADDRESS_KIND) :: aints(1), sd(2), rd(2), extra
  integer :: a(12), b(12), pair(3)
  double precision :: dp(3)
  real(kind=selected_real_kind(15, 300)) :: r8(4), r8b(4)
  logical :: flag, periods(1)

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  right = mod(rank + 1, np)
  left = mod(rank + np - 1, np)
  call MPI_Type_size(MPI_INTEGER, isz, ierr)
  call MPI_Type_size(MPI_DOUBLE_PRECISION, dsz, ierr)

  ! MPI_ADDRESS: the absolute address of a variable; on a 64-bit machine it may not fit an
  ! INTEGER, which both libraries report as MPI_ERR_OTHER (its value is per rank: not printed)
  call MPI_Address(a(1), addr, ierr)
  call MPI_Address(a(2), addr2, ierr2)
  write (*, '(a,i0,a,l1)') 'rank ', rank, ': MPI_ADDRESS consistent: ', &
    (ierr == MPI_SUCCESS .and. ierr2 == MPI_SUCCESS .and. addr2 - addr == isz) .or. &
    (ierr == MPI_ERR_OTHER .and. ierr2 == MPI_ERR_OTHER)

  ! TYPE_HVECTOR with an INTEGER byte stride: every third INTEGER, 4 of them
  call MPI_Type_hvector(4, 1, 3 * isz, MPI_INTEGER, t, ierr)
  call MPI_Type_commit(t, ierr)
  call MPI_Type_extent(t, ext, ierr)
  if (ext /= 10 * isz) call fail(rank, nerr, 'hvector extent')
  a = [(100 * rank + i, i = 1, 12)]
  b = -1
  call MPI_Sendrecv(a, 1, t, right, 1, b, 4, MPI_INTEGER, left, 1, MPI_COMM_WORLD, st, ierr)
  write (*, '(a,i0,a,4i6)') 'rank ', rank, ': hvector got', b(1:4)
  call MPI_Type_free(t, ierr)

  ! TYPE_HINDEXED with INTEGER byte displacements, then LB/UB/EXTENT
  bl = [2, 1]
  displs = [isz, 6 * isz]
  call MPI_Type_hindexed(2, bl, displs, MPI_INTEGER, t, ierr)
  call MPI_Type_commit(t, ierr)
  call MPI_Type_lb(t, lb, ierr)
  call MPI_Type_ub(t, ub, ierr)
  call MPI_Type_extent(t, ext, ierr)
  write (*, '(a,i0,a,3i4)') 'rank ', rank, ': hindexed lb/ub/extent in INTEGERs', &
    lb / isz, ub / isz, ext / isz
  b = -1
  call MPI_Sendrecv(a, 1, t, right, 2, b, 3, MPI_INTEGER, left, 2, MPI_COMM_WORLD, st, ierr)
  write (*, '(a,i0,a,3i6)') 'rank ', rank, ': hindexed got', b(1:3)
  call MPI_Type_free(t, ierr)

  ! TYPE_STRUCT with INTEGER displacements: (INTEGER, DOUBLE PRECISION) pairs laid out by hand
  bl = [1, 1]
  displs = [0, dsz]
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
  call MPI_Type_struct(2, bl, displs, types, t, ierr)
  call MPI_Type_commit(t, ierr)
  call MPI_Type_size(t, cnt, ierr)
  call MPI_Type_extent(t, ext, ierr)
  if (cnt /= isz + dsz .or. ext /= 2 * dsz) call fail(rank, nerr, 'struct size/extent')
  call MPI_Type_free(t, ierr)

  ! MPI-1 keyvals with Fortran callbacks
  call MPI_Keyval_create(copy1, delete1, key, 7, ierr)
  call MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, key2, 0, ierr)
  call MPI_Attr_put(MPI_COMM_WORLD, key, 40 + rank, ierr)
  call MPI_Attr_put(MPI_COMM_WORLD, key2, 50 + rank, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Attr_get(dup, key, val, flag, ierr)
  write (*, '(a,i0,a,l1,i6)') 'rank ', rank, ': keyval copied by Fortran ', flag, val
  call MPI_Attr_get(dup, key2, val, flag, ierr)
  write (*, '(a,i0,a,l1,i6)') 'rank ', rank, ': keyval MPI_DUP_FN ', flag, val
  call MPI_Comm_free(dup, ierr)
  call MPI_Attr_delete(MPI_COMM_WORLD, key, ierr)
  call MPI_Keyval_free(key, ierr)
  call MPI_Keyval_free(key2, ierr)
  if (key /= MPI_KEYVAL_INVALID) call fail(rank, nerr, 'Keyval_free leaves MPI_KEYVAL_INVALID')

  ! A generalized request with Fortran callbacks
  extra = 3 + rank
  call MPI_Grequest_start(gquery, gfree, gcancel, extra, req, ierr)
  call MPI_Test(req, flag, st, ierr)
  if (flag) call fail(rank, nerr, 'generalized request complete before Grequest_complete')
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, st, ierr)
  call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
  write (*, '(a,i0,a,l1,i4)') 'rank ', rank, ': grequest null/count ', &
    req == MPI_REQUEST_NULL, cnt
  call MPI_Grequest_start(gquery, gfree, gcancel, extra, req, ierr)
  call MPI_Cancel(req, ierr)
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, st, ierr)

  ! MPI_TYPE_CREATE_F90_*: envelopes, contents, the same handle twice, and a transfer
  call MPI_Type_create_f90_integer(9, ti, ierr)
  call MPI_Type_create_f90_integer(9, ti2, ierr)
  call MPI_Type_create_f90_real(15, 300, tr, ierr)
  call MPI_Type_create_f90_real(15, 300, tr2, ierr)
  call MPI_Type_create_f90_complex(6, MPI_UNDEFINED, tc, ierr)
  if (ti /= ti2 .or. tr /= tr2) call fail(rank, nerr, 'f90 types: same arguments, same handle')
  call MPI_Type_get_envelope(ti, ni, na, nd, comb, ierr)
  call MPI_Type_get_contents(ti, 1, 0, 0, ints, aints, types, ierr)
  write (*, '(a,i0,a,5i4)') 'rank ', rank, ': f90 integer envelope/r', ni, na, nd, &
    merge(1, 0, comb == MPI_COMBINER_F90_INTEGER), ints(1)
  call MPI_Type_get_envelope(tr, ni, na, nd, comb, ierr)
  call MPI_Type_get_contents(tr, 2, 0, 0, ints, aints, types, ierr)
  call MPI_Type_size(tr, cnt, ierr)
  write (*, '(a,i0,a,7i5)') 'rank ', rank, ': f90 real envelope/p,r/size', ni, na, nd, &
    merge(1, 0, comb == MPI_COMBINER_F90_REAL), ints(1:2), cnt
  call MPI_Type_get_envelope(tc, ni, na, nd, comb, ierr)
  call MPI_Type_size(tc, cnt, ierr)
  write (*, '(a,i0,a,5i4)') 'rank ', rank, ': f90 complex envelope/size', ni, na, nd, &
    merge(1, 0, comb == MPI_COMBINER_F90_COMPLEX), cnt
  call MPI_Type_create_f90_real(40, 10, t3, ierr)
  if (ierr == MPI_SUCCESS) call fail(rank, nerr, 'f90 real with 40 digits should fail')
  r8 = [(rank + 0.25d0 * i, i = 1, 4)]
  call MPI_Sendrecv(r8, 4, tr, right, 3, r8b, 4, tr, left, 3, MPI_COMM_WORLD, st, ierr)
  write (*, '(a,i0,a,4f8.2)') 'rank ', rank, ': f90 real got', r8b

  ! MPI_NEIGHBOR_ALLTOALLW on a periodic ring, a different datatype and displacement per
  ! neighbour (the same value both ways: at np 2 both neighbours are the same rank)
  dims(1) = np
  periods(1) = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  call MPI_Type_contiguous(1, MPI_INTEGER, t2, ierr)
  call MPI_Type_commit(t2, ierr)
  pair = [7 * rank, 7 * rank, -5]
  sc = [1, 1]
  rc = [1, 1]
  sd = [0_MPI_ADDRESS_KIND, int(isz, MPI_ADDRESS_KIND)]
  rd = [0_MPI_ADDRESS_KIND, int(2 * isz, MPI_ADDRESS_KIND)]
  tsend = [t2, MPI_INTEGER]
  trecv = [MPI_INTEGER, t2]
  b = -1
  call MPI_Neighbor_alltoallw(pair, sc, sd, tsend, b, rc, rd, trecv, cart, ierr)
  write (*, '(a,i0,a,i0,a,3i6)') 'rank ', rank, ': neighbor_alltoallw ierr ', ierr, ' got', b(1:3)
  call MPI_Type_free(t2, ierr)
  call MPI_Comm_free(cart, ierr)

  if (nerr == 0) write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  call MPI_Finalize(ierr)
end subroutine
