! f_coll: collectives from Fortran through `use mpi` (free source form), on Fortran types:
! Bcast of CHARACTER and DOUBLE COMPLEX, Reduce/Allreduce of INTEGER, REAL, DOUBLE PRECISION,
! COMPLEX, LOGICAL and the sized INTEGER8/REAL8, MAXLOC/MINLOC on 2INTEGER and
! 2DOUBLE_PRECISION, MPI_IN_PLACE (Allreduce, Reduce at the root, Allgather, Gather,
! Scatter), Gather/Scatter/Allgather/Alltoall(v), Scan/Exscan, Reduce_scatter_block, a
! user operation written in Fortran (MPI_Op_create), Barrier.
program f_coll
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

! A user operation: element-wise sum of INTEGERs; -999 if the datatype handle it receives is
! not MPI_INTEGER.
subroutine my_sum(invec, inoutvec, len, datatype)
  use mpi, only: MPI_INTEGER
  implicit none
  integer, intent(in) :: len, datatype
  integer, intent(in) :: invec(len)
  integer, intent(inout) :: inoutvec(len)
  if (datatype == MPI_INTEGER) then
    inoutvec = invec + inoutvec
  else
    inoutvec = -999
  end if
end subroutine

subroutine body()
  use mpi
  implicit none
  integer :: ierr, rank, np, nerr, i, root, op
  integer :: ia(4), ib(4), pair(2, 2), pres(2, 2)
  integer, allocatable :: all(:), counts(:), displs(:), big(:)
  real :: ra(2), rb(2)
  double precision :: da(3), db(3), dpair(2), dres(2)
  complex :: ca, cb
  double complex :: za(2)
  logical :: la(2), lb(2)
  integer(kind=8) :: i8, r8
  real(kind=8) :: x8, y8
  character(len=12) :: word
  external my_sum

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  allocate (all(4 * np), counts(np), displs(np), big(np * np))

  ! Bcast from every root: CHARACTER and DOUBLE COMPLEX
  do root = 0, np - 1
    word = 'nothing'
    za = (0d0, 0d0)
    if (rank == root) then
      write (word, '(a,i0)') 'root', root
      za(1) = dcmplx(root, -root)
      za(2) = dcmplx(0.5d0, root)
    end if
    call MPI_Bcast(word, 12, MPI_CHARACTER, root, MPI_COMM_WORLD, ierr)
    call MPI_Bcast(za, 2, MPI_DOUBLE_COMPLEX, root, MPI_COMM_WORLD, ierr)
    if (word(1:4) /= 'root' .or. za(1) /= dcmplx(root, -root) .or. &
        za(2) /= dcmplx(0.5d0, root)) call fail(rank, nerr, 'bcast')
  end do
  if (rank == 0) write (*, '(2a)') 'rank 0: last bcast word ', trim(word)

  ! Reduce and Allreduce on each Fortran type
  ia = [rank, -rank, rank * rank, 1]
  call MPI_Allreduce(ia, ib, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a,4(1x,i0))') 'rank 0: integer sum', ib
  call MPI_Allreduce(ia, ib, 4, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a,4(1x,i0))') 'rank 0: integer max', ib
  ra = [real(rank) + 0.25, -real(rank)]
  call MPI_Reduce(ra, rb, 2, MPI_REAL, MPI_MIN, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a,2(1x,f8.2))') 'rank 0: real min', rb
  da = [dble(rank), 1d0, 0.5d0]
  call MPI_Allreduce(da, db, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (db(1) /= dble(np * (np - 1) / 2) .or. db(2) /= dble(np)) call fail(rank, nerr, 'dp sum')
  if (rank == 0) write (*, '(a,3(1x,f10.2))') 'rank 0: double precision sum', db
  call MPI_Allreduce(da, db, 3, MPI_DOUBLE_PRECISION, MPI_PROD, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a,3(1x,es12.4))') 'rank 0: double precision prod', db
  ca = cmplx(1.0, real(rank))
  call MPI_Allreduce(ca, cb, 1, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a,2(1x,f8.2))') 'rank 0: complex sum', real(cb), aimag(cb)
  la = [rank == 0, .true.]
  call MPI_Allreduce(la, lb, 2, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  if (.not. lb(1) .or. .not. lb(2)) call fail(rank, nerr, 'lor')
  call MPI_Allreduce(la, lb, 2, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  if (lb(1) .neqv. (np == 1) .or. .not. lb(2)) call fail(rank, nerr, 'land')
  if (rank == 0) write (*, '(a,2(1x,l1))') 'rank 0: logical and', lb
  i8 = int(rank, 8) * 4000000000_8
  call MPI_Allreduce(i8, r8, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (r8 /= 4000000000_8 * (np * (np - 1) / 2)) call fail(rank, nerr, 'integer8')
  x8 = rank + 1
  call MPI_Allreduce(x8, y8, 1, MPI_REAL8, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (y8 /= np) call fail(rank, nerr, 'real8')

  ! MAXLOC / MINLOC on pair types
  pair(:, 1) = [mod(rank, 3), rank]
  pair(:, 2) = [-rank, rank]
  call MPI_Allreduce(pair, pres, 2, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a,4(1x,i0))') 'rank 0: 2integer maxloc', pres
  dpair = [dble(mod(rank, 2)), dble(rank)]
  call MPI_Allreduce(dpair, dres, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a,2(1x,f6.1))') 'rank 0: 2double_precision minloc', dres

  ! MPI_IN_PLACE
  ib = [rank, 1, 2, 3]
  call MPI_Allreduce(MPI_IN_PLACE, ib, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ib(1) /= np * (np - 1) / 2 .or. ib(4) /= 3 * np) call fail(rank, nerr, 'allreduce in place')
  ib = [rank, 1, 2, 3]
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, ib, 4, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    if (ib(2) /= np) call fail(rank, nerr, 'reduce in place')
  else
    call MPI_Reduce(ib, ia, 4, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  end if
  all = -1
  all(4 * rank + 1:4 * rank + 4) = [rank, rank + 1, rank + 2, rank + 3]
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 4, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 0, np - 1
    if (all(4 * i + 1) /= i .or. all(4 * i + 4) /= i + 3) call fail(rank, nerr, 'allgather in place')
  end do
  all = -1
  if (rank == np - 1) then
    all(4 * rank + 1:4 * rank + 4) = rank
    call MPI_Gather(MPI_IN_PLACE, 4, MPI_INTEGER, all, 4, MPI_INTEGER, np - 1, MPI_COMM_WORLD, ierr)
    do i = 0, np - 1
      if (any(all(4 * i + 1:4 * i + 4) /= i)) call fail(rank, nerr, 'gather in place')
    end do
  else
    ia = rank
    call MPI_Gather(ia, 4, MPI_INTEGER, all, 4, MPI_INTEGER, np - 1, MPI_COMM_WORLD, ierr)
  end if
  if (rank == 0) then
    do i = 0, np - 1
      all(4 * i + 1:4 * i + 4) = 10 * i
    end do
    call MPI_Scatter(all, 4, MPI_INTEGER, MPI_IN_PLACE, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  else
    call MPI_Scatter(all, 4, MPI_INTEGER, ia, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    if (any(ia /= 10 * rank)) call fail(rank, nerr, 'scatter')
  end if

  ! Alltoall and Alltoallv
  do i = 0, np - 1
    big(i + 1) = 100 * rank + i
  end do
  call MPI_Alltoall(big, 1, MPI_INTEGER, all, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 0, np - 1
    if (all(i + 1) /= 100 * i + rank) call fail(rank, nerr, 'alltoall')
  end do
  do i = 0, np - 1
    counts(i + 1) = 1
    displs(i + 1) = np - 1 - i
  end do
  call MPI_Alltoallv(big, counts, displs, MPI_INTEGER, all, counts, displs, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  do i = 0, np - 1
    if (all(np - i) /= 100 * i + (np - 1 - rank)) call fail(rank, nerr, 'alltoallv')
  end do

  ! Scan, Exscan, Reduce_scatter_block
  call MPI_Scan(rank + 1, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (*, '(a,i0,a,i0)') 'rank ', rank, ': scan ', i
  call MPI_Exscan(rank + 1, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank > 0) write (*, '(a,i0,a,i0)') 'rank ', rank, ': exscan ', i
  big = rank
  call MPI_Reduce_scatter_block(big, ia, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ia(1) /= np * (np - 1) / 2) call fail(rank, nerr, 'reduce_scatter_block')

  ! A user operation written in Fortran
  call MPI_Op_create(my_sum, .true., op, ierr)
  ia = [1, rank, 0, 0]
  call MPI_Reduce(ia, ib, 2, MPI_INTEGER, op, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a,2(1x,i0))') 'rank 0: user op', ib(1:2)
  call MPI_Op_free(op, ierr)
  if (op /= MPI_OP_NULL) call fail(rank, nerr, 'op_free')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (nerr == 0) then
    write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  else
    write (*, '(a,i0,a,i0,a)') 'rank ', rank, ': FAILED with ', nerr, ' errors'
  end if
  deallocate (all, counts, displs, big)
  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1
end subroutine
