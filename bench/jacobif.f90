! jacobif: the Fortran stencil of the overlap benchmarks (issue 17): a 5-point Jacobi sweep on
! a 2-D grid, 2-D block decomposition (MPI_Dims_create, non-periodic), four face exchanges
! per iteration with Irecv/Isend/Waitall through `use mpi`. The variants of bench/overlap.h:
!   original  exchange, then compute      toucan  the same (Fortran has no region hints)
!   nocomm    no exchange (the bound)     overlap post, compute the inner cells, wait, the rest
!
!   jacobif [-v variant] [-g N | -l N] [-i iters] [-w warmup]
!     -g N  strong scaling: global grid N x N (default 1024); -l N: N x N cells per rank
!
! Every cell is updated by the same expression in every variant and decomposition, and the
! checksum is a sum of fixed-point values (exact), so it does not depend on the number of
! ranks (except for nocomm). Rank 0 prints
!   RESULT app=jacobif variant=V ranks=P dims=AxB grid=XxY iters=I time=T checksum=S
program jacobif
  use mpi
  implicit none
  integer, parameter :: dp = kind(1d0)
  character(len=16) :: variant, arg, val
  integer :: ierr, rank, np, dims(2), coords(2), cart, nb(4), gn(2), n(2), off(2)
  integer :: iters, warm, it, i, j, k, req(8), nreq, strong_n, weak_n, v
  logical :: periods(2)
  real(dp), allocatable :: u(:, :), un(:, :), sbuf(:, :), rbuf(:, :)
  real(dp) :: t0, t, tmax
  integer(kind=8) :: csum, gsum

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  variant = 'original'
  strong_n = 1024
  weak_n = 0
  iters = 20
  warm = 2
  i = 1
  do while (i <= command_argument_count())
    call get_command_argument(i, arg)
    call get_command_argument(i + 1, val)
    call option(arg, val)
    i = i + 2
  end do
  v = index('original toucan   nocomm   overlap  ', variant(1:8))
  if (v == 0 .or. mod(v - 1, 9) /= 0) then
    if (rank == 0) write (0, '(2a)') 'jacobif: unknown variant ', trim(variant)
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  v = (v - 1) / 9   ! 0 original, 1 toucan, 2 nocomm, 3 overlap

  dims = 0
  call MPI_Dims_create(np, 2, dims, ierr)
  periods = .false.
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call MPI_Cart_coords(cart, rank, 2, coords, ierr)
  call MPI_Cart_shift(cart, 0, 1, nb(1), nb(2), ierr)
  call MPI_Cart_shift(cart, 1, 1, nb(3), nb(4), ierr)
  if (weak_n > 0) then
    gn = weak_n * dims
  else
    gn = strong_n
  end if
  do k = 1, 2
    n(k) = gn(k) / dims(k) + merge(1, 0, coords(k) < mod(gn(k), dims(k)))
    off(k) = coords(k) * (gn(k) / dims(k)) + min(coords(k), mod(gn(k), dims(k)))
  end do
  allocate (u(0:n(1) + 1, 0:n(2) + 1), un(0:n(1) + 1, 0:n(2) + 1))
  allocate (sbuf(max(n(1), n(2)), 4), rbuf(max(n(1), n(2)), 4))
  u = 0
  do j = 1, n(2)
    do i = 1, n(1)
      u(i, j) = mod(7 * (off(1) + i) + 13 * (off(2) + j), 100) / 100d0
    end do
  end do
  un = u

  do it = 1, warm + iters
    if (it == warm + 1) then
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      t0 = MPI_Wtime()
    end if
    if (v /= 2) call post()
    if (v == 3) then
      call sweep(2, n(1) - 1, 2, n(2) - 1)
      call finish()
      call sweep(1, n(1), 1, 1)
      if (n(2) > 1) call sweep(1, n(1), n(2), n(2))
      call sweep(1, 1, 2, n(2) - 1)
      if (n(1) > 1) call sweep(n(1), n(1), 2, n(2) - 1)
    else
      if (v /= 2) call finish()
      call sweep(1, n(1), 1, n(2))
    end if
    u(1:n(1), 1:n(2)) = un(1:n(1), 1:n(2))
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  t = MPI_Wtime() - t0
  call MPI_Reduce(t, tmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  csum = 0
  do j = 1, n(2)
    do i = 1, n(1)
      csum = csum + nint(u(i, j) * 1d9, kind=8)
    end do
  end do
  call MPI_Reduce(csum, gsum, 1, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a,a,a,i0,a,i0,a,i0,a,i0,a,i0,a,i0,a,f0.6,a,i0)') &
    'RESULT app=jacobif variant=', trim(variant), ' ranks=', np, ' dims=', dims(1), 'x', dims(2), &
    ' grid=', gn(1), 'x', gn(2), ' iters=', iters, ' time=', tmax, ' checksum=', gsum
  call MPI_Finalize(ierr)

contains

  ! One option (-v, -g, -l, -i, -w) and its value.
  subroutine option(opt, val)
    character(len=*), intent(in) :: opt, val
    select case (opt)
    case ('-v')
      variant = val
    case ('-g')
      read (val, *) strong_n
    case ('-l')
      read (val, *) weak_n
    case ('-i')
      read (val, *) iters
    case ('-w')
      read (val, *) warm
    case default
      if (rank == 0) write (0, '(2a)') 'jacobif: unknown option ', trim(opt)
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
    end select
  end subroutine

  ! Posts the four face exchanges (faces of dimension 1 are strided: packed).
  subroutine post()
    nreq = 0
    do k = 1, 4
      if (nb(k) == MPI_PROC_NULL) cycle
      nreq = nreq + 1
      call MPI_Irecv(rbuf(1, k), n(3 - (k + 1) / 2), MPI_DOUBLE_PRECISION, nb(k), 0, cart, &
                     req(nreq), ierr)
    end do
    if (nb(1) /= MPI_PROC_NULL) sbuf(1:n(2), 1) = u(1, 1:n(2))
    if (nb(2) /= MPI_PROC_NULL) sbuf(1:n(2), 2) = u(n(1), 1:n(2))
    if (nb(3) /= MPI_PROC_NULL) sbuf(1:n(1), 3) = u(1:n(1), 1)
    if (nb(4) /= MPI_PROC_NULL) sbuf(1:n(1), 4) = u(1:n(1), n(2))
    do k = 1, 4
      if (nb(k) == MPI_PROC_NULL) cycle
      nreq = nreq + 1
      call MPI_Isend(sbuf(1, k), n(3 - (k + 1) / 2), MPI_DOUBLE_PRECISION, nb(k), 0, cart, &
                     req(nreq), ierr)
    end do
  end subroutine

  ! Waits for the exchanges and unpacks the ghost layers.
  subroutine finish()
    call MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE, ierr)
    if (nb(1) /= MPI_PROC_NULL) u(0, 1:n(2)) = rbuf(1:n(2), 1)
    if (nb(2) /= MPI_PROC_NULL) u(n(1) + 1, 1:n(2)) = rbuf(1:n(2), 2)
    if (nb(3) /= MPI_PROC_NULL) u(1:n(1), 0) = rbuf(1:n(1), 3)
    if (nb(4) /= MPI_PROC_NULL) u(1:n(1), n(2) + 1) = rbuf(1:n(1), 4)
  end subroutine

  ! un = the 5-point average of u over cells [i0, i1] x [j0, j1].
  subroutine sweep(i0, i1, j0, j1)
    integer, intent(in) :: i0, i1, j0, j1
    integer :: ii, jj
    do jj = j0, j1
      do ii = i0, i1
        un(ii, jj) = (u(ii - 1, jj) + u(ii + 1, jj) + u(ii, jj - 1) + u(ii, jj + 1) + u(ii, jj)) * 0.2d0
      end do
    end do
  end subroutine
end program
