! f_p2p: point-to-point from Fortran through mpif.h (fixed source form).
! Sendrecv ring, Isend/Irecv/Waitall, Waitany and Waitsome (1-based
! indices), Issend/Testall (LOGICAL flag), wildcard receives at rank 0,
! Probe/Iprobe/Get_count, MPI_PROC_NULL, Bsend with Buffer_attach and
! detach, persistent requests, MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE.
! Buffers of nonblocking calls are VOLATILE: otherwise the compiler may
! keep their values in registers across MPI_Wait (MPI 4.1, 19.1.17).
      program fp2p
      call body()
      end

      subroutine fail(rank, nerr, line, what)
      integer rank, nerr, line
      character*(*) what
      nerr = nerr + 1
      write(*,'(a,i0,a,i0,2a)') 'rank ', rank, ': FAIL line ', line,
     &    ': ', what
      end

      subroutine body()
      implicit none
      include 'mpif.h'
      integer ierr, rank, np, nerr, i, k, left, right, cnt, idx, n
      integer sbuf(8), rbuf(8), st(MPI_STATUS_SIZE)
      integer sts(MPI_STATUS_SIZE, 4), reqs(4), idxs(4)
      integer pairs(2, 64), tmp(2), bsbuf(2000), bsize
      integer seen(2)
      double precision dsend(3), drecv(3)
      logical flag
      volatile sbuf, rbuf
      nerr = 0
      call MPI_Init(ierr)
      call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
      call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
      right = mod(rank + 1, np)
      left = mod(rank + np - 1, np)

! 1. Sendrecv around the ring
      sbuf(1) = 100 + rank
      call MPI_Sendrecv(sbuf, 1, MPI_INTEGER, right, 1, rbuf, 1,
     &    MPI_INTEGER, left, 1, MPI_COMM_WORLD, st, ierr)
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      if (rbuf(1) .ne. 100 + left .or. st(MPI_SOURCE) .ne. left .or.
     &    st(MPI_TAG) .ne. 1 .or. cnt .ne. 1 .or. ierr .ne. 0)
     &    call fail(rank, nerr, 38, 'sendrecv')

! 2. Isend/Irecv both ways, Waitall with statuses
      do i = 1, 8
         sbuf(i) = rank * 10 + i
      end do
      call MPI_Irecv(rbuf, 4, MPI_INTEGER, left, 2, MPI_COMM_WORLD,
     &    reqs(1), ierr)
      call MPI_Irecv(rbuf(5), 4, MPI_INTEGER, right, 3,
     &    MPI_COMM_WORLD, reqs(2), ierr)
      call MPI_Isend(sbuf, 4, MPI_INTEGER, right, 2, MPI_COMM_WORLD,
     &    reqs(3), ierr)
      call MPI_Isend(sbuf(5), 4, MPI_INTEGER, left, 3, MPI_COMM_WORLD,
     &    reqs(4), ierr)
      call MPI_Waitall(4, reqs, sts, ierr)
      if (rbuf(1) .ne. left * 10 + 1 .or. rbuf(4) .ne. left * 10 + 4
     &    .or. rbuf(5) .ne. right * 10 + 5 .or.
     &    rbuf(8) .ne. right * 10 + 8) call fail(rank, nerr, 56, 'data')
      if (sts(MPI_SOURCE, 1) .ne. left .or. sts(MPI_TAG, 2) .ne. 3
     &    .or. sts(MPI_SOURCE, 2) .ne. right)
     &    call fail(rank, nerr, 59, 'waitall statuses')
      do i = 1, 4
         if (reqs(i) .ne. MPI_REQUEST_NULL)
     &       call fail(rank, nerr, 62, 'request not null')
      end do

! 3. Waitany and Waitsome: indices are 1-based in Fortran
      seen(1) = 0
      seen(2) = 0
      call MPI_Irecv(rbuf, 1, MPI_INTEGER, left, 4, MPI_COMM_WORLD,
     &    reqs(1), ierr)
      call MPI_Irecv(rbuf(2), 1, MPI_INTEGER, right, 5,
     &    MPI_COMM_WORLD, reqs(2), ierr)
      call MPI_Send(rank, 1, MPI_INTEGER, right, 4, MPI_COMM_WORLD,
     &    ierr)
      call MPI_Send(rank, 1, MPI_INTEGER, left, 5, MPI_COMM_WORLD,
     &    ierr)
      do k = 1, 2
         call MPI_Waitany(2, reqs, idx, st, ierr)
         if (idx .lt. 1 .or. idx .gt. 2) then
            call fail(rank, nerr, 78, 'waitany index')
         else
            seen(idx) = seen(idx) + 1
         end if
      end do
! (Waitany on null requests only: MPICH 4.0.2's Fortran binding gives
! MPI_UNDEFINED + 1 as the index, so the index is not checked there.)
      call MPI_Waitany(2, reqs, idx, st, ierr)
      if (seen(1) .ne. 1 .or. seen(2) .ne. 1 .or.
     &    rbuf(1) .ne. left .or. rbuf(2) .ne. right)
     &    call fail(rank, nerr, 86, 'waitany')
      call MPI_Irecv(rbuf, 1, MPI_INTEGER, left, 6, MPI_COMM_WORLD,
     &    reqs(1), ierr)
      call MPI_Send(rank, 1, MPI_INTEGER, right, 6, MPI_COMM_WORLD,
     &    ierr)
      reqs(2) = MPI_REQUEST_NULL
      n = 0
      do while (n .ne. MPI_UNDEFINED)
         call MPI_Waitsome(2, reqs, n, idxs, MPI_STATUSES_IGNORE, ierr)
         if (n .eq. 1 .and. idxs(1) .ne. 1)
     &       call fail(rank, nerr, 96, 'waitsome index')
      end do

! 4. Issend completed by a Testall loop
      call MPI_Irecv(rbuf, 2, MPI_INTEGER, left, 7, MPI_COMM_WORLD,
     &    reqs(1), ierr)
      sbuf(1) = -rank
      sbuf(2) = rank
      call MPI_Issend(sbuf, 2, MPI_INTEGER, right, 7, MPI_COMM_WORLD,
     &    reqs(2), ierr)
      flag = .false.
      k = 0
      do while (.not. flag)
         call MPI_Testall(2, reqs, flag, MPI_STATUSES_IGNORE, ierr)
         k = k + 1
      end do
      if (rbuf(1) .ne. -left .or. rbuf(2) .ne. left)
     &    call fail(rank, nerr, 112, 'testall')

! 5. Wildcards: every other rank sends two messages to rank 0
      if (rank .eq. 0) then
         do i = 1, 2 * (np - 1)
            call MPI_Recv(tmp, 2, MPI_INTEGER, MPI_ANY_SOURCE,
     &          MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
            pairs(1, i) = st(MPI_SOURCE)
            pairs(2, i) = st(MPI_TAG)
            if (tmp(1) .ne. st(MPI_SOURCE) .or. tmp(2) .ne. st(MPI_TAG))
     &          call fail(rank, nerr, 122, 'wildcard payload')
         end do
         call sortpairs(pairs, 2 * (np - 1))
         do i = 1, 2 * (np - 1)
            write(*,'(a,i0,a,i0)') 'rank 0: from ', pairs(1, i),
     &          ' tag ', pairs(2, i)
         end do
      else
         do k = 1, 2
            tmp(1) = rank
            tmp(2) = 1000 + rank * 10 + k
            call MPI_Ssend(tmp, 2, MPI_INTEGER, 0, tmp(2),
     &          MPI_COMM_WORLD, ierr)
         end do
      end if
      call MPI_Barrier(MPI_COMM_WORLD, ierr)

! 6. Probe, Iprobe and Get_count
      call MPI_Send(sbuf, 3, MPI_INTEGER, right, 8, MPI_COMM_WORLD,
     &    ierr)
      call MPI_Probe(left, 8, MPI_COMM_WORLD, st, ierr)
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      if (cnt .ne. 3) call fail(rank, nerr, 143, 'probe count')
      flag = .false.
      do while (.not. flag)
         call MPI_Iprobe(MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, flag, st,
     &       ierr)
      end do
      call MPI_Recv(rbuf, cnt, MPI_INTEGER, st(MPI_SOURCE), 8,
     &    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Iprobe(left, 8, MPI_COMM_WORLD, flag, st, ierr)
      if (flag) call fail(rank, nerr, 152, 'iprobe after receive')

! 7. MPI_PROC_NULL
      call MPI_Send(sbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 9,
     &    MPI_COMM_WORLD, ierr)
      call MPI_Recv(rbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 9,
     &    MPI_COMM_WORLD, st, ierr)
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      if (st(MPI_SOURCE) .ne. MPI_PROC_NULL .or.
     &    st(MPI_TAG) .ne. MPI_ANY_TAG .or. cnt .ne. 0)
     &    call fail(rank, nerr, 162, 'proc_null status')

! 8. Bsend through an attached buffer
      call MPI_Buffer_attach(bsbuf, 8000, ierr)
      dsend(1) = rank + 0.5d0
      dsend(2) = -rank
      dsend(3) = 1.0d10
      call MPI_Bsend(dsend, 3, MPI_DOUBLE_PRECISION, right, 10,
     &    MPI_COMM_WORLD, ierr)
      call MPI_Recv(drecv, 3, MPI_DOUBLE_PRECISION, left, 10,
     &    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Buffer_detach(bsbuf, bsize, ierr)
      if (drecv(1) .ne. left + 0.5d0 .or. drecv(3) .ne. 1.0d10 .or.
     &    bsize .ne. 8000) call fail(rank, nerr, 175, 'bsend')

! 9. Persistent requests, three rounds
      call MPI_Recv_init(rbuf, 1, MPI_INTEGER, left, 11,
     &    MPI_COMM_WORLD, reqs(1), ierr)
      call MPI_Send_init(sbuf, 1, MPI_INTEGER, right, 11,
     &    MPI_COMM_WORLD, reqs(2), ierr)
      do k = 1, 3
         sbuf(1) = rank * 100 + k
         call MPI_Startall(2, reqs, ierr)
         call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
         if (rbuf(1) .ne. left * 100 + k)
     &       call fail(rank, nerr, 187, 'persistent')
      end do
      call MPI_Request_free(reqs(1), ierr)
      call MPI_Request_free(reqs(2), ierr)
      if (reqs(1) .ne. MPI_REQUEST_NULL)
     &    call fail(rank, nerr, 192, 'request_free')

      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      if (nerr .eq. 0) then
         write(*,'(a,i0,a)') 'rank ', rank, ': OK'
      else
         write(*,'(a,i0,a,i0,a)') 'rank ', rank, ': FAILED with ',
     &       nerr, ' errors'
      end if
      call MPI_Finalize(ierr)
      if (nerr .ne. 0) stop 1
      end

      subroutine sortpairs(p, n)
      integer n, p(2, n), i, j, t1, t2
      do i = 2, n
         t1 = p(1, i)
         t2 = p(2, i)
         j = i - 1
         do while (j .ge. 1)
            if (p(1, j) * 100000 + p(2, j) .le. t1 * 100000 + t2) exit
            p(1, j + 1) = p(1, j)
            p(2, j + 1) = p(2, j)
            j = j - 1
         end do
         p(1, j + 1) = t1
         p(2, j + 1) = t2
      end do
      end
