! f08_more (mpi_f08): array sections as buffers (Send/Recv of strided sections, a Bcast of a
! 2-D section, copied; Isend/Irecv of sections, through datatypes), PMPI_ names,
! MPI_Sizeof, MPI_Alloc_mem/MPI_Free_mem with TYPE(C_PTR), MPI_Type_create_f90_real/integer,
! communicator and datatype keyvals with callbacks written in Fortran and the predefined
! MPI_COMM_DUP_FN / MPI_COMM_NULL_DELETE_FN, and a generalized request with Fortran
! callbacks. (Left out, as MPICH 4.0.2's mpi_f08 gets them wrong: a collective into a strided
! section, which it fills contiguously, and Neighbor_alltoallw on a Cartesian communicator,
! which it rejects; f_mpi1 has Neighbor_alltoallw through mpif.h.)
module f08_more_cb
  use mpi_f08
  implicit none
contains
  subroutine copy_plus(oldcomm, keyval, extra, valin, valout, flag, ierror)
    type(MPI_Comm) :: oldcomm
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
    logical :: flag
    valout = valin + extra
    flag = .true.
    ierror = MPI_SUCCESS
  end subroutine
  subroutine delete_count(comm, keyval, val, extra, ierror)
    type(MPI_Comm) :: comm
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    integer :: r
    call MPI_Comm_rank(comm, r)
    write (*, '(a,i0,a,2i4)') 'rank ', r, ': comm delete callback, value and extra', val, extra
    ierror = MPI_SUCCESS
  end subroutine
  subroutine type_copy_no(oldtype, keyval, extra, valin, valout, flag, ierror)
    type(MPI_Datatype) :: oldtype
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
    logical :: flag
    flag = .false.
    ierror = MPI_SUCCESS
  end subroutine
  subroutine type_delete(dtype, keyval, val, extra, ierror)
    type(MPI_Datatype) :: dtype
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    ierror = MPI_SUCCESS
  end subroutine
  subroutine gquery(extra, status, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    type(MPI_Status) :: status
    integer :: ierror
    call MPI_Status_set_elements(status, MPI_REAL, int(extra))
    call MPI_Status_set_cancelled(status, .false.)
    status%MPI_SOURCE = MPI_UNDEFINED
    status%MPI_TAG = MPI_UNDEFINED
    ierror = MPI_SUCCESS
  end subroutine
  subroutine gfree(extra, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierror, r
    call MPI_Comm_rank(MPI_COMM_WORLD, r)
    write (*, '(a,i0,a,i0)') 'rank ', r, ': grequest free callback, extra ', extra
    ierror = MPI_SUCCESS
  end subroutine
  subroutine gcancel(extra, complete, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierror
    ierror = MPI_SUCCESS
  end subroutine
end module

program f08_more
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

subroutine body()
  use mpi_f08
  use f08_more_cb
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  implicit none
  type(MPI_Comm) :: dup
  type(MPI_Datatype) :: tr, tr2, ti, t1
  type(MPI_Request) :: req, reqs(2)
  type(MPI_Status) :: st
  integer :: rank, np, nerr, i, right, left, ierr, sz, key, tkey, cnt
  integer :: a(12), b(12), m(4, 4)
  integer(kind=MPI_ADDRESS_KIND) :: val, asize
  real(kind=selected_real_kind(15, 300)) :: x(6), y(6)
  double precision :: d
  real, pointer :: p(:)
  type(c_ptr) :: mem
  logical :: flag

  nerr = 0
  call MPI_Init()
  call PMPI_Comm_rank(MPI_COMM_WORLD, rank)
  call PMPI_Comm_size(MPI_COMM_WORLD, np)
  right = mod(rank + 1, np)
  left = mod(rank + np - 1, np)

  ! Strided sections as send and receive buffers
  a = [(100 * rank + i, i = 1, 12)]
  b = -1
  call MPI_Sendrecv(a(1:12:3), 4, MPI_INTEGER, right, 1, b(2:8:2), 4, MPI_INTEGER, left, 1, &
                    MPI_COMM_WORLD, st)
  write (*, '(a,i0,a,12i5)') 'rank ', rank, ': section sendrecv', b
  b = -1
  if (rank == 0) then
    call MPI_Send(a(12:1:-2), 6, MPI_INTEGER, right, 2, MPI_COMM_WORLD)
  else if (rank == 1) then
    call MPI_Recv(b(1:11:2), 6, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, st)
    call MPI_Get_count(st, MPI_INTEGER, cnt)
    write (*, '(a,i0,a,i0,a,12i5)') 'rank ', rank, ': reversed section, count ', cnt, ':', b
  end if
  ! Nonblocking: the sections are described by datatypes (the operation keeps the buffer)
  b = -1
  call MPI_Irecv(b(2:12:2), 6, MPI_INTEGER, left, 4, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a(1:11:2), 6, MPI_INTEGER, right, 4, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  write (*, '(a,i0,a,12i5)') 'rank ', rank, ': nonblocking sections', b
  ! A 2-D section (a row of a matrix is strided in Fortran) broadcast from rank 0
  m = rank
  if (rank == 0) m = reshape([(i, i = 1, 16)], [4, 4])
  call MPI_Bcast(m(2, :), 4, MPI_INTEGER, 0, MPI_COMM_WORLD)
  write (*, '(a,i0,a,16i4)') 'rank ', rank, ': bcast row 2 ->', m
  ! MPI_Sizeof
  call MPI_Sizeof(d, sz)
  call MPI_Sizeof(a, i)
  write (*, '(a,i0,a,2i3)') 'rank ', rank, ': sizeof double, integer array element', sz, i

  ! Alloc_mem / Free_mem with TYPE(C_PTR)
  asize = 40
  call MPI_Alloc_mem(asize, MPI_INFO_NULL, mem, ierr)
  call c_f_pointer(mem, p, [10])
  p = [(real(i + rank), i = 1, 10)]
  write (*, '(a,i0,a,i0,f6.1)') 'rank ', rank, ': alloc_mem ierr ', ierr, sum(p)
  call MPI_Free_mem(p, ierr)
  if (ierr /= MPI_SUCCESS) call fail(rank, nerr, 'Free_mem')

  ! F90 datatypes
  call MPI_Type_create_f90_real(15, 300, tr)
  call MPI_Type_create_f90_real(15, 300, tr2)
  call MPI_Type_create_f90_integer(4, ti)
  if (tr /= tr2) call fail(rank, nerr, 'f90 real: same handle')
  call MPI_Type_size(ti, sz)
  x = [(rank + 0.5d0 * i, i = 1, 6)]
  call MPI_Sendrecv(x, 6, tr, right, 3, y, 6, tr, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  write (*, '(a,i0,a,i2,6f6.1)') 'rank ', rank, ': f90 types: integer(r=4) size, real got', sz, y

  ! Keyvals with Fortran callbacks
  call MPI_Comm_create_keyval(copy_plus, delete_count, key, 5_MPI_ADDRESS_KIND)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, int(rank, MPI_ADDRESS_KIND))
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call MPI_Comm_get_attr(dup, key, val, flag)
  write (*, '(a,i0,a,l1,i4)') 'rank ', rank, ': comm keyval copied ', flag, val
  call MPI_Comm_free(dup)
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key)
  call MPI_Comm_free_keyval(key)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key, 0_MPI_ADDRESS_KIND)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, int(7 * rank, MPI_ADDRESS_KIND))
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call MPI_Comm_get_attr(dup, key, val, flag)
  write (*, '(a,i0,a,l1,i4)') 'rank ', rank, ': MPI_COMM_DUP_FN ', flag, val
  call MPI_Comm_free(dup)
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key)
  call MPI_Comm_free_keyval(key)
  call MPI_Type_contiguous(2, MPI_INTEGER, t1)
  call MPI_Type_create_keyval(type_copy_no, type_delete, tkey, 0_MPI_ADDRESS_KIND)
  call MPI_Type_set_attr(t1, tkey, 11_MPI_ADDRESS_KIND)
  call MPI_Type_dup(t1, tr2)
  call MPI_Type_get_attr(tr2, tkey, val, flag)
  write (*, '(a,i0,a,l1)') 'rank ', rank, ': type keyval not copied ', flag
  call MPI_Type_free(tr2)
  call MPI_Type_free(t1)
  call MPI_Type_free_keyval(tkey)

  ! A generalized request
  call MPI_Grequest_start(gquery, gfree, gcancel, 9_MPI_ADDRESS_KIND, req)
  call MPI_Grequest_complete(req)
  call MPI_Wait(req, st)
  call MPI_Get_count(st, MPI_REAL, cnt)
  write (*, '(a,i0,a,l1,i3)') 'rank ', rank, ': grequest null, count ', &
    req == MPI_REQUEST_NULL, cnt

  if (nerr == 0) write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  call MPI_Finalize()
end subroutine
