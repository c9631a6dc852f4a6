! f_io_datarep: MPI_Register_datarep from Fortran (mpif.h and use mpi; issue 19). A representation
! "f_x3" written in Fortran: each INTEGER is 8 bytes in the file, 3*v+extra_state (extra_state
! 7 given at registration, seen by reference in every callback); its conversion procedures
! get the buffers as arrays, the datatype as its INTEGER handle, count and position (in
! items of the datatype) and must use them. Each rank writes its integers collectively
! through an f_x3 view (write_at_all), gets the file extent of MPI_INTEGER (8), reads them
! back (read_at), and reads the file's 8-byte values through a native view (3*v+7). A second
! representation with MPI_CONVERSION_FN_NULL and native extents holds memory's bytes.
! Registering a name twice is MPI_ERR_DUP_DATAREP (MPI_FILE_NULL's handler: errors return);
! a conversion that fails gives MPI_ERR_CONVERSION. MPI_Register_datarep_c (session io5; an
! extension in mpif.h, where the standard has it in mpi_f08 only): "f_x5c" with the large-count
! conversion procedures (count INTEGER(KIND=MPI_COUNT_KIND)) stores 5*v+extra_state, written
! collectively, read back converted and as the file's 8-byte values; twice is ERR_DUP_DATAREP.
! (.expect: MPICH 4.0.2's ROMIO refuses conversion functions at registration, so there is no
! MPICH reference; its Fortran library has no MPI_Register_datarep_c: the C half gives the
! MPICH build a stub that aborts, never run.)
program f_io_datarep
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

! File extent of a datatype in f_x3: 8 bytes per INTEGER.
subroutine x3_extent(datatype, extent, extra_state, ierror)
  use mpi
  implicit none
  integer :: datatype, ierror
  integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
  if (datatype == MPI_INTEGER .and. extra_state == 7) then
    extent = 8
    ierror = MPI_SUCCESS
  else
    ierror = MPI_ERR_TYPE
  end if
end subroutine

subroutine x3_write(userbuf, datatype, count, filebuf, position, extra_state, ierror)
  use mpi
  implicit none
  integer :: userbuf(*), datatype, count, ierror, i
  integer(kind=8) :: filebuf(*)
  integer(kind=MPI_OFFSET_KIND) :: position
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  if (datatype /= MPI_INTEGER) then
    ierror = MPI_ERR_TYPE
    return
  end if
  do i = 1, count
    if (userbuf(position + i) < 0) then
      ierror = MPI_ERR_OTHER
      return
    end if
    filebuf(i) = 3_8 * userbuf(position + i) + extra_state
  end do
  ierror = MPI_SUCCESS
end subroutine

subroutine x3_read(userbuf, datatype, count, filebuf, position, extra_state, ierror)
  use mpi
  implicit none
  integer :: userbuf(*), datatype, count, ierror, i
  integer(kind=8) :: filebuf(*)
  integer(kind=MPI_OFFSET_KIND) :: position
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  do i = 1, count
    userbuf(position + i) = int((filebuf(i) - extra_state) / 3_8)
  end do
  ierror = MPI_SUCCESS
end subroutine

! f_x5c's conversions: MPI_Datarep_conversion_function_c (the count is an MPI_Count).
subroutine x5c_write(userbuf, datatype, count, filebuf, position, extra_state, ierror)
  use mpi
  implicit none
  integer :: userbuf(*), datatype, ierror
  integer(kind=MPI_COUNT_KIND) :: count, i
  integer(kind=8) :: filebuf(*)
  integer(kind=MPI_OFFSET_KIND) :: position
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  if (datatype /= MPI_INTEGER) then
    ierror = MPI_ERR_TYPE
    return
  end if
  do i = 1, count
    if (userbuf(position + i) < 0) then
      ierror = MPI_ERR_OTHER
      return
    end if
    filebuf(i) = 5_8 * userbuf(position + i) + extra_state
  end do
  ierror = MPI_SUCCESS
end subroutine

subroutine x5c_read(userbuf, datatype, count, filebuf, position, extra_state, ierror)
  use mpi
  implicit none
  integer :: userbuf(*), datatype, ierror
  integer(kind=MPI_COUNT_KIND) :: count, i
  integer(kind=8) :: filebuf(*)
  integer(kind=MPI_OFFSET_KIND) :: position
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  do i = 1, count
    userbuf(position + i) = int((filebuf(i) - extra_state) / 5_8)
  end do
  ierror = MPI_SUCCESS
end subroutine

! Native extents for the representation without conversions.
subroutine native_extent(datatype, extent, extra_state, ierror)
  use mpi
  implicit none
  integer :: datatype, ierror, sz
  integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
  call MPI_Type_size(datatype, sz, ierror)
  extent = sz
end subroutine

! A fresh directory (rank 0), made with the C library's mkdtemp.
subroutine make_dir(dir)
  use iso_c_binding
  implicit none
  character(len=*), intent(out) :: dir
  interface
    function c_mkdtemp(t) bind(C, name='mkdtemp') result(p)
      import :: c_char, c_ptr
      character(kind=c_char) :: t(*)
      type(c_ptr) :: p
    end function
  end interface
  character(len=256) :: base
  character(kind=c_char, len=300) :: t
  integer :: l, st
  call get_environment_variable('TMPDIR', base, l, st)
  if (st /= 0 .or. l == 0) base = '/tmp'
  t = trim(base)//'/ct-fio-XXXXXX'//c_null_char
  if (.not. c_associated(c_mkdtemp(t))) then
    dir = ' '
    return
  end if
  dir = t(1:index(t, c_null_char) - 1)
end subroutine

integer function remove_dir(dir)
  use iso_c_binding
  implicit none
  character(len=*), intent(in) :: dir
  interface
    function c_rmdir(p) bind(C, name='rmdir') result(r)
      import :: c_char, c_int
      character(kind=c_char) :: p(*)
      integer(c_int) :: r
    end function
  end interface
  remove_dir = c_rmdir(trim(dir)//c_null_char)
end function


! (mpif.h here: MPICH's `mpi` module leaves MPI_CONVERSION_FN_NULL out, its mpif.h has it)
subroutine body()
  implicit none
  include 'mpif.h'
  external :: x3_extent, x3_write, x3_read, native_extent, x5c_write, x5c_read
  integer, external :: remove_dir
  integer, parameter :: N = 10
  integer :: ierr, rank, nprocs, nerr, fh, cls, i, cnt
  integer :: status(MPI_STATUS_SIZE)
  integer(kind=MPI_OFFSET_KIND) :: disp, sz
  integer(kind=MPI_ADDRESS_KIND) :: extra, ext
  character(len=256) :: dir, fa
  integer :: wbuf(N), rbuf(N)
  integer(kind=8) :: raw(N)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  nerr = 0
  dir = ' '
  if (rank == 0) call make_dir(dir)
  call MPI_Bcast(dir, len(dir), MPI_CHARACTER, 0, MPI_COMM_WORLD, ierr)
  if (dir == ' ') call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  fa = trim(dir)//'/x3.dat'
  do i = 1, N
    wbuf(i) = rank * 100 + i
  end do

  extra = 7
  call MPI_Register_datarep('f_x3', x3_read, x3_write, x3_extent, extra, ierr)
  if (ierr /= MPI_SUCCESS) call fail(rank, nerr, 'register f_x3')
  call MPI_Register_datarep('f_x3', x3_read, x3_write, x3_extent, extra, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (cls /= MPI_ERR_DUP_DATAREP) call fail(rank, nerr, 'second registration not ERR_DUP_DATAREP')

  call MPI_File_open(MPI_COMM_WORLD, fa, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  disp = 0
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'f_x3', MPI_INFO_NULL, ierr)
  if (ierr /= MPI_SUCCESS) call fail(rank, nerr, 'set_view f_x3')
  call MPI_File_get_type_extent(fh, MPI_INTEGER, ext, ierr)
  if (ext /= 8) call fail(rank, nerr, 'file extent of MPI_INTEGER is not 8')
  disp = rank * N
  call MPI_File_write_at_all(fh, disp, wbuf, N, MPI_INTEGER, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, cnt, i)
  if (ierr /= MPI_SUCCESS .or. cnt /= N) call fail(rank, nerr, 'write_at_all through f_x3')
  call MPI_File_get_size(fh, sz, ierr)
  if (sz /= 8 * N * nprocs) call fail(rank, nerr, 'file size is not 8 bytes per integer')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  ! the neighbour's integers, converted back
  rbuf = -1
  disp = mod(rank + 1, nprocs) * N
  call MPI_File_read_at(fh, disp, rbuf, N, MPI_INTEGER, status, ierr)
  do i = 1, N
    if (rbuf(i) /= mod(rank + 1, nprocs) * 100 + i) then
      call fail(rank, nerr, 'read_at through f_x3')
      exit
    end if
  end do
  ! the file's own bytes: 3*v+7 in 8 bytes
  disp = 0
  call MPI_File_set_view(fh, disp, MPI_INTEGER8, MPI_INTEGER8, 'native', MPI_INFO_NULL, ierr)
  disp = rank * N
  call MPI_File_read_at(fh, disp, raw, N, MPI_INTEGER8, status, ierr)
  do i = 1, N
    if (raw(i) /= 3_8 * wbuf(i) + 7) then
      call fail(rank, nerr, 'the file does not hold 3*v+7')
      exit
    end if
  end do
  ! a failing conversion (negative values are refused by x3_write): MPI_ERR_CONVERSION
  disp = 0
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'f_x3', MPI_INFO_NULL, ierr)
  rbuf = -5
  disp = rank * N
  call MPI_File_write_at(fh, disp, rbuf, N, MPI_INTEGER, status, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (cls /= MPI_ERR_CONVERSION) call fail(rank, nerr, 'failing conversion not ERR_CONVERSION')
  call MPI_File_close(fh, ierr)

  ! no conversion: memory's bytes
  call MPI_Register_datarep('f_plain', MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, native_extent, extra, ierr)
  if (ierr /= MPI_SUCCESS) call fail(rank, nerr, 'register f_plain')
  call MPI_File_open(MPI_COMM_WORLD, fa, MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  disp = 0
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'f_plain', MPI_INFO_NULL, ierr)
  disp = rank * N
  call MPI_File_write_at_all(fh, disp, wbuf, N, MPI_INTEGER, status, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  disp = 0
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL, ierr)
  rbuf = -1
  disp = rank * N
  call MPI_File_read_at(fh, disp, rbuf, N, MPI_INTEGER, status, ierr)
  do i = 1, N
    if (rbuf(i) /= wbuf(i)) then
      call fail(rank, nerr, 'f_plain does not hold memory''s bytes')
      exit
    end if
  end do
  call MPI_File_close(fh, ierr)

  ! MPI_Register_datarep_c: large-count conversion procedures
  call MPI_Register_datarep_c('f_x5c', x5c_read, x5c_write, x3_extent, extra, ierr)
  if (ierr /= MPI_SUCCESS) call fail(rank, nerr, 'register_c f_x5c')
  call MPI_Register_datarep_c('f_x5c', x5c_read, x5c_write, x3_extent, extra, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (cls /= MPI_ERR_DUP_DATAREP) call fail(rank, nerr, 'second register_c not ERR_DUP_DATAREP')
  call MPI_File_open(MPI_COMM_WORLD, fa, MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  disp = 0
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'f_x5c', MPI_INFO_NULL, ierr)
  if (ierr /= MPI_SUCCESS) call fail(rank, nerr, 'set_view f_x5c')
  disp = rank * N
  call MPI_File_write_at_all(fh, disp, wbuf, N, MPI_INTEGER, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, cnt, i)
  if (ierr /= MPI_SUCCESS .or. cnt /= N) call fail(rank, nerr, 'write_at_all through f_x5c')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  rbuf = -1
  disp = mod(rank + 1, nprocs) * N
  call MPI_File_read_at(fh, disp, rbuf, N, MPI_INTEGER, status, ierr)
  do i = 1, N
    if (rbuf(i) /= mod(rank + 1, nprocs) * 100 + i) then
      call fail(rank, nerr, 'read_at through f_x5c')
      exit
    end if
  end do
  disp = 0
  call MPI_File_set_view(fh, disp, MPI_INTEGER8, MPI_INTEGER8, 'native', MPI_INFO_NULL, ierr)
  disp = rank * N
  call MPI_File_read_at(fh, disp, raw, N, MPI_INTEGER8, status, ierr)
  do i = 1, N
    if (raw(i) /= 5_8 * wbuf(i) + 7) then
      call fail(rank, nerr, 'the file does not hold 5*v+7')
      exit
    end if
  end do
  disp = 0
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'f_x5c', MPI_INFO_NULL, ierr)
  rbuf = -5
  disp = rank * N
  call MPI_File_write_at(fh, disp, rbuf, N, MPI_INTEGER, status, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (cls /= MPI_ERR_CONVERSION) call fail(rank, nerr, 'failing _c conversion not ERR_CONVERSION')
  call MPI_File_close(fh, ierr)

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) call MPI_File_delete(fa, MPI_INFO_NULL, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (remove_dir(dir) /= 0) call fail(rank, nerr, 'the directory was not empty at the end')
  end if
  if (nerr == 0) write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  call MPI_Finalize(ierr)
end subroutine
