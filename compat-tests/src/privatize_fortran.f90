! privatize_fortran: privatized Fortran globals. Deliberately uses them (the runner allows
! writable globals in tests named privatize_*): a named COMMON block initialised by BLOCK DATA,
! a blank COMMON, module variables (one initialised, one allocatable), SAVE variables of a
! subroutine (one initialised, one counting calls), main-program variables, and the Fortran
! I/O unit state (unit 10 connected to a scratch file of the rank's own). Every rank
! first checks they hold the values the program gives them (no sibling wrote them before),
! writes values derived from its rank, lets the other ranks run (barriers and a ring
! exchange, so siblings interleave), then checks that they still hold its own values. With
! separate processes this is trivially true; under Toucan it needs one copy per subrank.
module state
  implicit none
  integer :: modcount = 7
  double precision, allocatable :: field(:)
end module

block data init_named
  integer :: cnamed(4)
  double precision :: cscale
  common /named/ cnamed, cscale
  data cnamed /1, 2, 3, 4/, cscale /0.5d0/
end block data

program privatize_fortran
  use mpi
  use state
  implicit none
  integer :: ierr, rank, np, nerr, round, v, cnamed(4), blank(1000), i, token, back
  logical :: opened
  double precision :: cscale
  common /named/ cnamed, cscale
  common blank
  integer, save :: mainsave = -1

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  ! Initial values, before any write
  if (any(cnamed /= [1, 2, 3, 4]) .or. cscale /= 0.5d0) call fail('named COMMON not as BLOCK DATA left it')
  if (any(blank /= 0)) call fail('blank COMMON not zero')
  if (modcount /= 7 .or. allocated(field)) call fail('module variables not initial')
  if (mainsave /= -1) call fail('main program SAVE variable not initial')
  call counter(0, i)
  if (i /= 1) call fail('SAVE call counter not initial')
  inquire (unit=10, opened=opened)
  if (opened) call fail('unit 10 already connected (by another rank?)')
  open (unit=10, status='scratch', form='formatted', action='readwrite')
  allocate (field(100))
  do round = 1, 3
    v = rank * 10 + round
    cnamed = v
    cscale = v + 0.25d0
    blank = [(v + i, i = 1, 1000)]
    modcount = 1000 + v
    field = -v
    mainsave = v
    call counter(v, i)
    write (10, '(i0)') v
    ! let the siblings run
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Sendrecv(rank, 1, MPI_INTEGER, mod(rank + 1, np), 0, token, 1, MPI_INTEGER, &
                      mod(rank + np - 1, np), 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    if (any(cnamed /= v) .or. cscale /= v + 0.25d0) call fail('named COMMON holds another rank''s values')
    if (any(blank /= [(v + i, i = 1, 1000)])) call fail('blank COMMON holds another rank''s values')
    if (modcount /= 1000 + v) call fail('module variable holds another rank''s value')
    if (any(field /= -v)) call fail('allocatable module array replaced')
    if (mainsave /= v) call fail('main program SAVE variable holds another rank''s value')
    call counter(-1, i)
    if (i /= v) call fail('SAVE variable of a subroutine holds another rank''s value')
  end do
  rewind (10)
  do round = 1, 3
    read (10, *) back
    if (back /= rank * 10 + round) call fail('unit 10 holds another rank''s records')
  end do
  close (10)
  call counter(-2, i)
  if (i /= 1 + 3 * 2 + 1) call fail('SAVE call counter counts other ranks'' calls')
  write (*, '(a,i0,a,i0,a,i0)') 'rank ', rank, ': module ', modcount, ' common ', cnamed(1)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (nerr == 0) then
    write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  else
    write (*, '(a,i0,a,i0,a)') 'rank ', rank, ': FAILED with ', nerr, ' errors'
  end if
  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    nerr = nerr + 1
    write (*, '(a,i0,2a)') 'rank ', rank, ': FAIL ', what
  end subroutine
end program

! counter(x, out): with x >= 0 stores x in an initialised SAVE variable; with x = -1 returns
! it; out is also the number of calls so far (x = -2: only that).
subroutine counter(x, out)
  implicit none
  integer, intent(in) :: x
  integer, intent(out) :: out
  integer, save :: calls = 0
  integer :: last = -100
  save last
  calls = calls + 1
  if (x >= 0) then
    last = x
    out = calls
  else if (x == -1) then
    out = last
  else
    out = calls
  end if
end subroutine
