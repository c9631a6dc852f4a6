! pingpong_f77: 8-byte ping-pong latency between ranks 0 and 1 through mpif.h
! (bench/run-pingpong-fortran.sh). Prints "lat 8 US" (half the mean round trip,
! microseconds) on rank 0; argument 1 = iterations (default 20000).
      program pingpong_f77
      implicit none
      include 'mpif.h'
      integer ierr, rank, i, n, warm
      integer st(MPI_STATUS_SIZE)
      double precision buf, t0, t1
      character*16 arg
      call MPI_Init(ierr)
      call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
      n = 20000
      if (command_argument_count() .ge. 1) then
         call get_command_argument(1, arg)
         read (arg, *) n
      end if
      warm = n / 10
      buf = 1.0d0
      do i = 1, warm + n
         if (i .eq. warm + 1) then
            call MPI_Barrier(MPI_COMM_WORLD, ierr)
            t0 = MPI_Wtime()
         end if
         if (rank .eq. 0) then
            call MPI_Send(buf, 1, MPI_DOUBLE_PRECISION, 1, 1,
     &          MPI_COMM_WORLD, ierr)
            call MPI_Recv(buf, 1, MPI_DOUBLE_PRECISION, 1, 1,
     &          MPI_COMM_WORLD, st, ierr)
         else if (rank .eq. 1) then
            call MPI_Recv(buf, 1, MPI_DOUBLE_PRECISION, 0, 1,
     &          MPI_COMM_WORLD, st, ierr)
            call MPI_Send(buf, 1, MPI_DOUBLE_PRECISION, 0, 1,
     &          MPI_COMM_WORLD, ierr)
         end if
      end do
      t1 = MPI_Wtime()
      if (rank .eq. 0) write (*, '(a,f0.3)') 'lat 8 ',
     &    (t1 - t0) / n / 2 * 1.0d6
      call MPI_Finalize(ierr)
      end
