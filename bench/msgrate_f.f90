! msgrate_f: ranks in pairs (0-1, 2-3, ...) exchange windows of 8 eight-byte messages
! (8 Irecv + 8 Isend + Waitall of 16) through `use mpi`; prints "rate MSGS_PER_S" on rank 0.
program msgrate_f
  use mpi
  implicit none
  integer, parameter :: win = 8
  integer :: rank, size, peer, i, j, n, ierr
  integer :: req(2 * win)
  double precision :: sbuf(win), rbuf(win), t0, t1
  character(len=16) :: arg
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  n = 20000
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  peer = ieor(rank, 1)
  sbuf = 1d0
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  t0 = MPI_Wtime()
  do i = 1, n
    do j = 1, win
      call MPI_Irecv(rbuf(j), 1, MPI_DOUBLE_PRECISION, peer, j, MPI_COMM_WORLD, req(j), ierr)
    end do
    do j = 1, win
      call MPI_Isend(sbuf(j), 1, MPI_DOUBLE_PRECISION, peer, j, MPI_COMM_WORLD, req(win + j), ierr)
    end do
    call MPI_Waitall(2 * win, req, MPI_STATUSES_IGNORE, ierr)
  end do
  t1 = MPI_Wtime()
  if (rank == 0) write (*, '(a,f0.0)') 'rate ', dble(n) * win * size / (t1 - t0)
  call MPI_Finalize(ierr)
end program
