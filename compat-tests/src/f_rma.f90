! f_rma: one-sided communication from Fortran (issue 18), with `use mpi` and `use mpi_f08`:
! Win_create over an INTEGER array, fence + Put of a ring, Win_get_attr(MPI_WIN_DISP_UNIT),
! Win_allocate with a TYPE(C_PTR) base, lock_all + Fetch_and_op on rank 0's counter, Accumulate
! with MPI_SUM, PSCW is left to the C tests; Win_set_name/get_name; Win_free.
program f_rma
  call legacy()
  call modern()
end program

subroutine legacy()
  use mpi
  implicit none
  integer :: rank, size, ierr, win, right, left, nerr, i
  integer, asynchronous :: buf(4)
  integer :: vals(4)
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp, unit
  logical :: flag
  character(len=MPI_MAX_OBJECT_NAME) :: name
  integer :: nlen
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  nerr = 0
  right = mod(rank + 1, size)
  left = mod(rank - 1 + size, size)
  buf = -1
  wsize = 16
  call MPI_Win_create(buf, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, unit, flag, ierr)
  if (.not. flag .or. unit /= 4) nerr = nerr + 1
  call MPI_Win_set_name(win, 'fortran window', ierr)
  call MPI_Win_get_name(win, name, nlen, ierr)
  if (name /= 'fortran window' .or. nlen /= 14) nerr = nerr + 1
  call MPI_Win_fence(0, win, ierr)
  do i = 1, 4
    vals(i) = 10 * rank + i
  end do
  disp = 0
  call MPI_Put(vals, 4, MPI_INTEGER, right, disp, 4, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  do i = 1, 4
    if (buf(i) /= 10 * left + i) nerr = nerr + 1
  end do
  ! Every rank has read its window before anyone accumulates into it.
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  disp = 1
  call MPI_Accumulate(vals, 1, MPI_INTEGER, 0, disp, 1, MPI_INTEGER, MPI_SUM, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (rank == 0) then
    if (buf(2) /= 10 * left + 2 + size * (size - 1) / 2 * 10 + size) nerr = nerr + 1
  end if
  call MPI_Win_free(win, ierr)
  if (win /= MPI_WIN_NULL) nerr = nerr + 1
  if (nerr == 0) then
    write (*, '(a,i0,a)') 'rank ', rank, ': mpi OK'
  else
    write (*, '(a,i0,a,i0)') 'rank ', rank, ': mpi FAILED ', nerr
  end if
end subroutine

subroutine modern()
  use mpi_f08
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: rank, size, nerr
  type(MPI_Win) :: win
  type(c_ptr) :: base
  integer(kind=MPI_ADDRESS_KIND) :: disp
  integer(kind=8), pointer :: counter(:)
  integer(kind=8) :: one, old, total
  nerr = 0
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  call MPI_Win_allocate(8_MPI_ADDRESS_KIND, 8, MPI_INFO_NULL, MPI_COMM_WORLD, base, win)
  call c_f_pointer(base, counter, [1])
  counter(1) = 0
  call MPI_Barrier(MPI_COMM_WORLD)
  one = 1
  disp = 0
  call MPI_Win_lock_all(0, win)
  call MPI_Fetch_and_op(one, old, MPI_INTEGER8, 0, disp, MPI_SUM, win)
  call MPI_Win_flush(0, win)
  call MPI_Win_unlock_all(win)
  if (old < 0 .or. old >= size) nerr = nerr + 1
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) then
    call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win)
    total = counter(1)
    call MPI_Win_unlock(0, win)
    if (total /= size) nerr = nerr + 1
  end if
  call MPI_Win_free(win)
  if (nerr == 0) then
    write (*, '(a,i0,a)') 'rank ', rank, ': mpi_f08 OK'
  else
    write (*, '(a,i0,a,i0)') 'rank ', rank, ': mpi_f08 FAILED ', nerr
  end if
  write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  call MPI_Finalize()
end subroutine
