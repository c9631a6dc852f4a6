! pingpong_f08: 8-byte ping-pong latency between ranks 0 and 1 through mpi_f08
! (bench/run-pingpong-fortran.sh). Prints "lat 8 US" (half the mean round trip, microseconds)
! on rank 0; argument 1 = iterations (default 20000).
program pingpong_f08
  use mpi_f08
  implicit none
  integer :: rank, i, n, warm
  type(MPI_Status) :: st
  double precision :: buf, t0, t1
  character(len=16) :: arg
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  n = 20000
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  warm = n / 10
  buf = 1d0
  do i = 1, warm + n
    if (i == warm + 1) then
      call MPI_Barrier(MPI_COMM_WORLD)
      t0 = MPI_Wtime()
    end if
    if (rank == 0) then
      call MPI_Send(buf, 1, MPI_DOUBLE_PRECISION, 1, 1, MPI_COMM_WORLD)
      call MPI_Recv(buf, 1, MPI_DOUBLE_PRECISION, 1, 1, MPI_COMM_WORLD, st)
    else if (rank == 1) then
      call MPI_Recv(buf, 1, MPI_DOUBLE_PRECISION, 0, 1, MPI_COMM_WORLD, st)
      call MPI_Send(buf, 1, MPI_DOUBLE_PRECISION, 0, 1, MPI_COMM_WORLD)
    end if
  end do
  t1 = MPI_Wtime()
  if (rank == 0) write (*, '(a,f0.3)') 'lat 8 ', (t1 - t0) / n / 2 * 1d6
  call MPI_Finalize()
end program
