! f08_large: the large-count forms of mpi_f08 (MPI 4.x): INTEGER(KIND=MPI_COUNT_KIND) counts
! and INTEGER(KIND=MPI_ADDRESS_KIND) displacements select the specifics MPI_X_c_f08(ts) of the
! same generic MPI_X. Point-to-point (Send, Recv, Ssend, Isend/Irecv, Sendrecv, Sendrecv_replace,
! Mprobe/Mrecv, Get_count), collectives (Bcast, Allreduce, Iallreduce, Gatherv, Scatterv,
! Allgatherv, Alltoallv, Alltoallw, Reduce_scatter_block, Scan), datatypes with sizes and
! extents past 2**31 (Type_contiguous, Type_vector, Type_create_hindexed, Type_create_struct,
! Type_size, Type_get_extent, Type_get_envelope/contents with large counts), Status_set_elements
! and Get_elements past 2**31, Pack/Unpack/Pack_size with MPI_Count positions.
program f08_large
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
  implicit none
  integer, parameter :: ck = MPI_COUNT_KIND, ak = MPI_ADDRESS_KIND
  type(MPI_Status) :: st
  type(MPI_Request) :: reqs(2), req
  type(MPI_Message) :: msg
  type(MPI_Datatype) :: big, vec, hix, stt, types(2)
  type(MPI_Datatype), allocatable :: wtypes(:)
  integer :: rank, np, nerr, left, right, i, j, ierr
  integer(ck) :: n, cnt, sz, lb, ext, pos, psize, ni, na, nl, nd
  integer(ck) :: bl(2), cd(2)
  integer :: comb, ints(4)
  integer(ak) :: addrs(4)
  integer(ck) :: larges(8)
  type(MPI_Datatype) :: dts(2)
  integer, allocatable :: sbuf(:), rbuf(:)
  integer(ck), allocatable :: counts(:), rcounts(:)
  integer(ak), allocatable :: displs(:), rdispls(:)
  integer :: a(6), b(6), sum
  double precision :: x(3), y(3)
  character(len=64) :: packed

  nerr = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  right = mod(rank + 1, np)
  left = mod(rank + np - 1, np)

  ! Point-to-point around the ring with MPI_Count counts
  n = 6
  a = [(100 * rank + i, i = 1, 6)]
  b = -1
  if (mod(rank, 2) == 0) then
    call MPI_Send(a, n, MPI_INTEGER, right, 1, MPI_COMM_WORLD)
    call MPI_Recv(b, n, MPI_INTEGER, left, 1, MPI_COMM_WORLD, st)
  else
    call MPI_Recv(b, n, MPI_INTEGER, left, 1, MPI_COMM_WORLD, st)
    call MPI_Send(a, n, MPI_INTEGER, right, 1, MPI_COMM_WORLD)
  end if
  call MPI_Get_count(st, MPI_INTEGER, cnt)
  if (cnt /= 6 .or. b(1) /= 100 * left + 1 .or. b(6) /= 100 * left + 6) call fail(rank, nerr, 'send/recv')
  write (*, '(a,i0,a,i0,a,6i5)') 'rank ', rank, ': recv count ', cnt, ' from left', b

  b = -1
  call MPI_Irecv(b, 4_ck, MPI_INTEGER, left, 2, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a, 4_ck, MPI_INTEGER, right, 2, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  if (any(b(1:4) /= [(100 * left + i, i = 1, 4)]) .or. b(5) /= -1) call fail(rank, nerr, 'isend/irecv')

  b = -1
  call MPI_Sendrecv(a, 3_ck, MPI_INTEGER, right, 3, b, 6_ck, MPI_INTEGER, left, 3, &
    MPI_COMM_WORLD, st)
  call MPI_Get_count(st, MPI_INTEGER, cnt)
  if (cnt /= 3 .or. b(3) /= 100 * left + 3 .or. b(4) /= -1) call fail(rank, nerr, 'sendrecv')
  b = a
  call MPI_Sendrecv_replace(b, 2_ck, MPI_INTEGER, right, 4, left, 4, MPI_COMM_WORLD, st)
  if (b(1) /= 100 * left + 1 .or. b(3) /= a(3)) call fail(rank, nerr, 'sendrecv_replace')

  ! Ssend and a matched probe with a large-count Mrecv
  if (rank == 0) then
    do i = 1, np - 1
      call MPI_Mprobe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, msg, st)
      call MPI_Get_count(st, MPI_INTEGER, cnt)
      b = -1
      call MPI_Mrecv(b, cnt, MPI_INTEGER, msg, st)
      if (msg /= MPI_MESSAGE_NULL .or. cnt /= min(st%MPI_SOURCE, 6) .or. &
          (cnt > 0 .and. b(1) /= 100 * st%MPI_SOURCE + 1)) call fail(rank, nerr, 'mrecv')
    end do
  else
    call MPI_Ssend(a, int(min(rank, 6), ck), MPI_INTEGER, 0, 5, MPI_COMM_WORLD)
  end if

  ! Collectives with MPI_Count counts and MPI_Aint displacements
  x = [1d0, 2d0, 3d0] * (rank + 1)
  call MPI_Allreduce(x, y, 3_ck, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (any(y /= [1d0, 2d0, 3d0] * (np * (np + 1) / 2))) call fail(rank, nerr, 'allreduce')
  a = rank
  if (rank == 0) a = [7, 8, 9, 10, 11, 12]
  call MPI_Bcast(a, 6_ck, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (any(a /= [7, 8, 9, 10, 11, 12])) call fail(rank, nerr, 'bcast')
  sum = rank
  call MPI_Iallreduce(MPI_IN_PLACE, sum, 1_ck, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (sum /= np * (np - 1) / 2) call fail(rank, nerr, 'iallreduce')
  j = rank + 1
  call MPI_Scan(j, sum, 1_ck, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  write (*, '(a,i0,a,i0)') 'rank ', rank, ': scan ', sum

  ! Gatherv: rank r sends r+1 integers, placed at the root from displacement r*(r+1)/2 + r
  allocate (sbuf(np + 1), rbuf(np * (np + 3) / 2 + np), counts(np), displs(np))
  allocate (rcounts(np), rdispls(np))
  sbuf = [(1000 * rank + i, i = 1, np + 1)]
  rbuf = -1
  do i = 0, np - 1
    counts(i + 1) = i + 1
    displs(i + 1) = int(i * (i + 1) / 2 + i, ak)
  end do
  call MPI_Gatherv(sbuf, int(rank + 1, ck), MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, 0, &
    MPI_COMM_WORLD)
  if (rank == 0) then
    do i = 0, np - 1
      do j = 1, i + 1
        if (rbuf(displs(i + 1) + j) /= 1000 * i + j) call fail(rank, nerr, 'gatherv')
      end do
    end do
    write (*, '(a,i0,a,20i6)') 'rank ', rank, ': gatherv', rbuf(1:min(20, size(rbuf)))
  end if
  ! Scatterv back: rank r gets the r+1 integers rank r sent
  sbuf = -1
  call MPI_Scatterv(rbuf, counts, displs, MPI_INTEGER, sbuf, int(rank + 1, ck), MPI_INTEGER, 0, &
    MPI_COMM_WORLD)
  if (any(sbuf(1:rank + 1) /= [(1000 * rank + i, i = 1, rank + 1)])) call fail(rank, nerr, 'scatterv')
  ! Allgatherv of the same layout
  rbuf = -1
  sbuf = [(1000 * rank + i, i = 1, np + 1)]
  call MPI_Allgatherv(sbuf, int(rank + 1, ck), MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, &
    MPI_COMM_WORLD)
  if (rbuf(displs(np) + np) /= 1000 * (np - 1) + np) call fail(rank, nerr, 'allgatherv')
  ! Alltoallv: one integer to each rank, MPI_Aint displacements in reverse order
  do i = 0, np - 1
    counts(i + 1) = 1
    displs(i + 1) = int(np - 1 - i, ak)
    sbuf(np - i) = 100 * rank + i
    rcounts(i + 1) = 1
    rdispls(i + 1) = int(i, ak)
  end do
  rbuf = -1
  call MPI_Alltoallv(sbuf, counts, displs, MPI_INTEGER, rbuf, rcounts, rdispls, MPI_INTEGER, &
    MPI_COMM_WORLD)
  if (any(rbuf(1:np) /= [(100 * i + rank, i = 0, np - 1)])) call fail(rank, nerr, 'alltoallv')
  ! Alltoallw: the same with byte displacements and a type per peer
  allocate (wtypes(np))
  wtypes = MPI_INTEGER
  rdispls = [(int(4 * i, ak), i = 0, np - 1)]
  displs = [(int(4 * (np - 1 - i), ak), i = 0, np - 1)]
  rbuf = -1
  call MPI_Alltoallw(sbuf, counts, displs, wtypes, rbuf, rcounts, rdispls, wtypes, MPI_COMM_WORLD)
  if (any(rbuf(1:np) /= [(100 * i + rank, i = 0, np - 1)])) call fail(rank, nerr, 'alltoallw')
  ! Reduce_scatter_block: each rank gets the sum of its block
  sbuf(1:np) = [(i + rank, i = 0, np - 1)]
  call MPI_Reduce_scatter_block(sbuf, sum, 1_ck, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (sum /= np * rank + np * (np - 1) / 2) call fail(rank, nerr, 'reduce_scatter_block')

  ! Datatypes past 2**31 bytes (never sent: their sizes and extents only)
  call MPI_Type_contiguous(3000000000_ck, MPI_BYTE, big)
  call MPI_Type_size(big, sz)
  call MPI_Type_get_extent(big, lb, ext)
  write (*, '(a,i0,a,3(1x,i0))') 'rank ', rank, ': contiguous 3e9 bytes: size, lb, extent', sz, lb, ext
  call MPI_Type_vector(2_ck, 1_ck, 1000000000_ck, MPI_INTEGER, vec)
  call MPI_Type_size(vec, sz)
  call MPI_Type_get_extent(vec, lb, ext)
  write (*, '(a,i0,a,3(1x,i0))') 'rank ', rank, ': vector stride 1e9: size, lb, extent', sz, lb, ext
  bl = [2_ck, 3_ck]
  cd = [0_ck, 5000000000_ck]
  call MPI_Type_create_hindexed(2_ck, bl, cd, MPI_INTEGER, hix)
  call MPI_Type_size(hix, sz)
  call MPI_Type_get_true_extent(hix, lb, ext)
  write (*, '(a,i0,a,3(1x,i0))') 'rank ', rank, ': hindexed: size, true lb, true extent', sz, lb, ext
  call MPI_Type_get_envelope(hix, ni, na, nl, nd, comb)
  write (*, '(a,i0,a,4(1x,i0),l2)') 'rank ', rank, ': hindexed envelope', ni, na, nl, nd, &
    comb == MPI_COMBINER_HINDEXED
  ints = -1
  addrs = -1
  larges = -1
  call MPI_Type_get_contents(hix, 4_ck, 4_ck, 8_ck, 2_ck, ints, addrs, larges, dts)
  write (*, '(a,i0,a,5(1x,i0))') 'rank ', rank, ': hindexed contents (large counts)', larges(1:5)
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
  call MPI_Type_create_struct(2_ck, [1_ck, 2_ck], [0_ck, 8_ck], types, stt)
  call MPI_Type_size(stt, sz)
  call MPI_Type_get_extent(stt, lb, ext)
  write (*, '(a,i0,a,3(1x,i0))') 'rank ', rank, ': struct: size, lb, extent', sz, lb, ext
  call MPI_Type_free(big)
  call MPI_Type_free(vec)
  call MPI_Type_free(hix)

  ! A status holding more than 2**31 elements
  call MPI_Status_set_elements_x(st, MPI_BYTE, 5000000000_ck)
  call MPI_Get_elements(st, MPI_BYTE, cnt)
  call MPI_Get_count(st, MPI_BYTE, n)
  write (*, '(a,i0,a,2(1x,i0))') 'rank ', rank, ': status of 5e9 bytes: elements, count', cnt, n

  ! Pack / Unpack with MPI_Count sizes and positions
  call MPI_Type_commit(stt)
  call MPI_Pack_size(2_ck, MPI_INTEGER, MPI_COMM_WORLD, psize)
  a = [(rank * 10 + i, i = 1, 6)]
  pos = 0
  call MPI_Pack(a, 2_ck, MPI_INTEGER, packed, int(len(packed), ck), pos, MPI_COMM_WORLD)
  call MPI_Pack(x, 3_ck, MPI_DOUBLE_PRECISION, packed, int(len(packed), ck), pos, MPI_COMM_WORLD)
  b = -1
  y = 0
  n = pos
  pos = 0
  call MPI_Unpack(packed, n, pos, b, 2_ck, MPI_INTEGER, MPI_COMM_WORLD)
  call MPI_Unpack(packed, n, pos, y, 3_ck, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  if (b(1) /= rank * 10 + 1 .or. b(2) /= rank * 10 + 2 .or. b(3) /= -1 .or. any(y /= x)) &
    call fail(rank, nerr, 'pack/unpack')
  write (*, '(a,i0,a,2(1x,i0))') 'rank ', rank, ': pack_size of 2 integers, bytes packed', psize, n
  call MPI_Type_free(stt)

  ! An error under MPI_ERRORS_RETURN through a large-count routine
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPI_Send(a, -1_ck, MPI_INTEGER, right, 9, MPI_COMM_WORLD, ierr)
  call MPI_Error_class(ierr, i)
  write (*, '(a,i0,a,l2)') 'rank ', rank, ': negative MPI_Count count gives MPI_ERR_COUNT', &
    i == MPI_ERR_COUNT

  if (nerr == 0) write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  call MPI_Finalize()
end subroutine
