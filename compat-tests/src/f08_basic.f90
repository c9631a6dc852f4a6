! f08_basic: the mpi_f08 module: TYPE(MPI_Comm)/MPI_Datatype/MPI_Request/MPI_Status handles
! and their == / /=, optional ierror, assumed-rank buffers (scalars, 1-D and 2-D arrays, array
! constructors), wildcard receives reading TYPE(MPI_Status) components, Isend/Irecv/Waitall
! on TYPE(MPI_Request) arrays with MPI_STATUSES_IGNORE, Waitany's 1-based index,
! collectives with MPI_IN_PLACE, Comm_split and names, a Type_vector column of a matrix,
! Cartesian shift, MPI_ERRORS_RETURN, and a user operation in the mpi_f08 form (C pointers).
program f08_basic
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

! inoutvec = max(invec, inoutvec) element-wise on INTEGERs, in the mpi_f08 form.
subroutine my_max(invec, inoutvec, len, datatype)
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  use mpi_f08, only: MPI_Datatype, MPI_INTEGER, operator(==)
  implicit none
  type(c_ptr), value :: invec, inoutvec
  integer :: len
  type(MPI_Datatype) :: datatype
  integer, pointer :: a(:), b(:)
  call c_f_pointer(invec, a, [len])
  call c_f_pointer(inoutvec, b, [len])
  if (datatype == MPI_INTEGER) then
    b = max(a, b)
  else
    b = -999
  end if
end subroutine

subroutine body()
  use mpi_f08
  implicit none
  interface
    subroutine my_max(invec, inoutvec, len, datatype)
      use, intrinsic :: iso_c_binding, only: c_ptr
      use mpi_f08, only: MPI_Datatype
      type(c_ptr), value :: invec, inoutvec
      integer :: len
      type(MPI_Datatype) :: datatype
    end subroutine
  end interface
  type(MPI_Comm) :: half, cart
  type(MPI_Datatype) :: column
  type(MPI_Request) :: reqs(4)
  type(MPI_Status) :: st
  type(MPI_Op) :: op
  integer :: ierr, rank, np, nerr, i, left, right, idx, cnt, slen, src, dst, cls
  integer :: pairs(2, 64), tmp(2), a(4), b(4), m(3, 3), col(3), dims(1)
  integer, volatile :: rbuf(4)
  double precision :: x
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version

  nerr = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  right = mod(rank + 1, np)
  left = mod(rank + np - 1, np)
  if (MPI_COMM_WORLD == MPI_COMM_SELF .or. .not. (MPI_COMM_WORLD /= MPI_COMM_NULL)) &
    call fail(rank, nerr, 'handle comparison')

  ! Wildcards at rank 0, statuses as TYPE(MPI_Status)
  if (rank == 0) then
    do i = 1, np - 1
      call MPI_Recv(tmp, 2, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st)
      pairs(:, i) = [st%MPI_SOURCE, st%MPI_TAG]
      call MPI_Get_count(st, MPI_INTEGER, cnt)
      if (cnt /= 2 .or. tmp(1) /= st%MPI_SOURCE) call fail(rank, nerr, 'wildcard message')
    end do
    do i = 1, np - 1
      if (count(pairs(1, 1:np - 1) == i .and. pairs(2, 1:np - 1) == 100 + i) /= 1) &
        call fail(rank, nerr, 'wildcard sources')
    end do
    write (*, '(a,i0,a)') 'rank 0: received ', np - 1, ' wildcard messages'
  else
    call MPI_Send([rank, -rank], 2, MPI_INTEGER, 0, 100 + rank, MPI_COMM_WORLD)
  end if
  call MPI_Barrier(MPI_COMM_WORLD)

  ! Nonblocking ring on TYPE(MPI_Request) arrays
  a = [(rank * 10 + i, i = 1, 4)]
  call MPI_Irecv(rbuf, 4, MPI_INTEGER, left, 1, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a, 4, MPI_INTEGER, right, 1, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  if (any(rbuf /= [(left * 10 + i, i = 1, 4)]) .or. reqs(1) /= MPI_REQUEST_NULL) &
    call fail(rank, nerr, 'ring')
  call MPI_Irecv(rbuf(1), 1, MPI_INTEGER, right, 2, MPI_COMM_WORLD, reqs(1))
  reqs(2) = MPI_REQUEST_NULL
  call MPI_Send(rank, 1, MPI_INTEGER, left, 2, MPI_COMM_WORLD)
  call MPI_Waitany(2, reqs, idx, st)
  ! (MPICH 4.0.2's mpi_f08 MPI_Waitany returns the C index, 0 here: allowed under MPICH only.)
  call MPI_Get_library_version(version, slen)
  if (version(1:5) == 'MPICH' .and. idx == 0) idx = 1
  if (idx /= 1 .or. st%MPI_SOURCE /= right .or. rbuf(1) /= right) call fail(rank, nerr, 'waitany')

  ! Collectives
  b = [rank, 1, 2, 3]
  call MPI_Allreduce(MPI_IN_PLACE, b, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (b(1) /= np * (np - 1) / 2 .or. b(2) /= np) call fail(rank, nerr, 'allreduce in place')
  x = rank
  call MPI_Allreduce(MPI_IN_PLACE, x, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
  if (x /= np - 1) call fail(rank, nerr, 'allreduce max')
  call MPI_Bcast(m, 9, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call MPI_Op_create(my_max, .true., op)
  call MPI_Allreduce([rank, -rank], tmp, 2, MPI_INTEGER, op, MPI_COMM_WORLD)
  if (tmp(1) /= np - 1 .or. tmp(2) /= 0) call fail(rank, nerr, 'user op')
  call MPI_Op_free(op)
  if (op /= MPI_OP_NULL) call fail(rank, nerr, 'op_free')

  ! Communicators and names
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half)
  call MPI_Comm_set_name(half, 'half  ')
  call MPI_Comm_get_name(half, name, slen)
  call MPI_Comm_size(half, cnt)
  write (*, '(a,i0,3a,i0,a,i0)') 'rank ', rank, ': in [', trim(name), '] length ', slen, &
    ' size ', cnt
  call MPI_Comm_free(half)
  if (half /= MPI_COMM_NULL) call fail(rank, nerr, 'comm_free')

  ! A column of a 3x3 matrix sent as a vector type, received contiguous
  m = reshape([(rank * 100 + i, i = 1, 9)], [3, 3])
  call MPI_Type_vector(3, 1, 3, MPI_INTEGER, column)
  call MPI_Type_commit(column)
  call MPI_Sendrecv(m(2, 1), 1, column, right, 3, col, 3, MPI_INTEGER, left, 3, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE)
  if (any(col /= [left * 100 + 2, left * 100 + 5, left * 100 + 8])) call fail(rank, nerr, 'row')
  call MPI_Type_free(column)

  ! Cartesian ring
  dims = 0
  call MPI_Dims_create(np, 1, dims)
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, [.true.], .false., cart)
  call MPI_Cart_shift(cart, 0, 1, src, dst)
  if (src /= left .or. dst /= right) call fail(rank, nerr, 'cart_shift')
  call MPI_Comm_free(cart)

  ! Errors returned
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPI_Send(a, 1, MPI_INTEGER, np, 0, MPI_COMM_WORLD, ierr)
  call MPI_Error_class(ierr, cls)
  if (cls /= MPI_ERR_RANK) call fail(rank, nerr, 'error class')
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL)

  call MPI_Barrier(MPI_COMM_WORLD)
  if (nerr == 0) then
    write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  else
    write (*, '(a,i0,a,i0,a)') 'rank ', rank, ': FAILED with ', nerr, ' errors'
  end if
  call MPI_Finalize()
  if (nerr /= 0) stop 1
end subroutine
