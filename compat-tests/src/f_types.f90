! f_types: derived datatypes over Fortran arrays (use mpi): a row of a column-major matrix
! (Type_vector), a block (Type_create_subarray, MPI_ORDER_FORTRAN), Type_contiguous, a
! struct of an INTEGER, a DOUBLE PRECISION array and a LOGICAL built with MPI_Get_address and
! sent from MPI_BOTTOM, Type_size / Type_get_extent / Type_get_name, Pack / Unpack, and
! Get_elements on a derived type.
program f_types
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
  use mpi
  implicit none
  integer, parameter :: n = 6
  integer :: ierr, rank, np, nerr, i, j, left, right, rowtype, blocktype, ctype, stype
  integer :: sz, cnt, pos, namelen, st(MPI_STATUS_SIZE)
  integer :: a(n, n), b(n, n)
  integer(kind=MPI_ADDRESS_KIND) :: lb, extent, addr(3)
  integer :: blens(3), types(3)
  integer :: jval
  ! Reached through MPI_BOTTOM: the compiler must not keep them in registers.
  integer, volatile :: ival
  double precision, volatile :: dv(3)
  logical, volatile :: lv
  double precision :: dw(3)
  logical :: lw
  character(len=MPI_MAX_OBJECT_NAME) :: tname
  character(len=1) :: packbuf(200)

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  right = mod(rank + 1, np)
  left = mod(rank + np - 1, np)
  do j = 1, n
    do i = 1, n
      a(i, j) = 1000 * rank + 10 * i + j
    end do
  end do

  ! Row 2 of a (stride n in column-major order) into column 3 of b
  call MPI_Type_vector(n, 1, n, MPI_INTEGER, rowtype, ierr)
  call MPI_Type_commit(rowtype, ierr)
  call MPI_Type_size(rowtype, sz, ierr)
  call MPI_Type_get_extent(rowtype, lb, extent, ierr)
  if (rank == 0) write (*, '(a,i0,a,i0,a,i0)') 'rank 0: row type size ', sz, ' lb ', lb, &
                                                ' extent ', extent
  b = 0
  call MPI_Sendrecv(a(2, 1), 1, rowtype, right, 1, b(1, 3), n, MPI_INTEGER, left, 1, &
                    MPI_COMM_WORLD, st, ierr)
  call MPI_Get_elements(st, MPI_INTEGER, cnt, ierr)
  do j = 1, n
    if (b(j, 3) /= 1000 * left + 20 + j) call fail(rank, nerr, 'row vector')
  end do
  if (cnt /= n) call fail(rank, nerr, 'row elements')

  ! A 2x3 block starting at (3,2), as a subarray in Fortran order, into the same place
  call MPI_Type_create_subarray(2, [n, n], [2, 3], [2, 1], MPI_ORDER_FORTRAN, MPI_INTEGER, &
                                blocktype, ierr)
  call MPI_Type_commit(blocktype, ierr)
  b = -1
  call MPI_Sendrecv(a, 1, blocktype, right, 2, b, 1, blocktype, left, 2, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  do j = 1, n
    do i = 1, n
      if (i >= 3 .and. i <= 4 .and. j >= 2 .and. j <= 4) then
        if (b(i, j) /= 1000 * left + 10 * i + j) call fail(rank, nerr, 'subarray data')
      else if (b(i, j) /= -1) then
        call fail(rank, nerr, 'subarray outside')
      end if
    end do
  end do

  ! Contiguous
  call MPI_Type_contiguous(3, MPI_DOUBLE_PRECISION, ctype, ierr)
  call MPI_Type_commit(ctype, ierr)
  dv = [rank * 1.5d0, -1d0, 2d0**40]
  call MPI_Sendrecv(dv, 1, ctype, right, 3, dw, 3, MPI_DOUBLE_PRECISION, left, 3, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (dw(1) /= left * 1.5d0 .or. dw(3) /= 2d0**40) call fail(rank, nerr, 'contiguous')

  ! Struct of absolute addresses, sent from and received at MPI_BOTTOM
  ival = rank
  dv = [dble(rank), 2d0, 3d0]
  lv = mod(rank, 2) == 0
  call MPI_Get_address(ival, addr(1), ierr)
  call MPI_Get_address(dv, addr(2), ierr)
  call MPI_Get_address(lv, addr(3), ierr)
  blens = [1, 3, 1]
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION, MPI_LOGICAL]
  call MPI_Type_create_struct(3, blens, addr, types, stype, ierr)
  call MPI_Type_commit(stype, ierr)
  call MPI_Type_size(stype, sz, ierr)
  if (sz /= 4 + 24 + 4) call fail(rank, nerr, 'struct size')
  call MPI_Send(MPI_BOTTOM, 1, stype, right, 4, MPI_COMM_WORLD, ierr)
  call MPI_Recv(packbuf, 200, MPI_PACKED, left, 4, MPI_COMM_WORLD, st, ierr)
  call MPI_Get_count(st, MPI_PACKED, cnt, ierr)
  pos = 0
  call MPI_Unpack(packbuf, cnt, pos, jval, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_Unpack(packbuf, cnt, pos, dw, 3, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call MPI_Unpack(packbuf, cnt, pos, lw, 1, MPI_LOGICAL, MPI_COMM_WORLD, ierr)
  if (jval /= left .or. dw(1) /= left .or. dw(3) /= 3d0 .or. (lw .neqv. mod(left, 2) == 0)) &
    call fail(rank, nerr, 'struct from MPI_BOTTOM')

  ! Pack into a buffer, send it as MPI_PACKED, receive into the struct at MPI_BOTTOM
  pos = 0
  call MPI_Pack(rank + 7, 1, MPI_INTEGER, packbuf, 200, pos, MPI_COMM_WORLD, ierr)
  call MPI_Pack([1d0, 2d0, dble(rank)], 3, MPI_DOUBLE_PRECISION, packbuf, 200, pos, &
                MPI_COMM_WORLD, ierr)
  call MPI_Pack(.true., 1, MPI_LOGICAL, packbuf, 200, pos, MPI_COMM_WORLD, ierr)
  call MPI_Sendrecv(packbuf, pos, MPI_PACKED, right, 5, MPI_BOTTOM, 1, stype, left, 5, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (ival /= left + 7 .or. dv(3) /= left .or. .not. lv) call fail(rank, nerr, 'unpack at bottom')

  ! Names
  call MPI_Type_get_name(MPI_DOUBLE_PRECISION, tname, namelen, ierr)
  if (rank == 0) write (*, '(3a,i0)') 'rank 0: name ', trim(tname), ' length ', namelen
  call MPI_Type_set_name(rowtype, 'matrix row   ', ierr)
  tname = 'x'
  call MPI_Type_get_name(rowtype, tname, namelen, ierr)
  if (rank == 0) write (*, '(3a,i0)') 'rank 0: name [', trim(tname), '] length ', namelen

  call MPI_Type_free(rowtype, ierr)
  call MPI_Type_free(blocktype, ierr)
  call MPI_Type_free(ctype, ierr)
  call MPI_Type_free(stype, ierr)
  if (stype /= MPI_DATATYPE_NULL) call fail(rank, nerr, 'type_free')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (nerr == 0) then
    write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  else
    write (*, '(a,i0,a,i0,a)') 'rank ', rank, ': FAILED with ', nerr, ' errors'
  end if
  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1
end subroutine
