! f08_io: MPI-IO from Fortran in mpi_f08 (f_io is the same in `use mpi`): TYPE(MPI_File),
! TYPE(MPI_Status) and the other handle types, optional ierror, INTEGER(KIND=MPI_OFFSET_KIND)
! offsets, a file error handler with the MPI_File_errhandler_function interface, and array
! sections (non-contiguous buffers) given to the blocking write_at/read_at. Three files in a
! fresh directory: (a) interleaved blocks through a view whose filetype is a resized
! contiguous type, written with write_all, read back with read_all and read_at, get_view
! (datarep as a blank-padded string), get_position/get_byte_offset, get_size; (b) write_at
! from a strided section and iwrite + MPI_Wait, the error handler (read on a write-only file,
! File_call_errhandler), get_errhandler/get_amode, reopened read-only and read with read_at
! into a strided section and iread_at; (c) the shared file pointer: write_ordered,
! write_shared in rank order, get_position_shared, seek_shared, read_ordered; reopened
! with MPI_MODE_SEQUENTIAL, a view at MPI_DISPLACEMENT_CURRENT. Rank 0 prints
! each file's size and checksum (read with Fortran stream I/O) to compare the bytes with
! MPICH's; then MPI_File_delete, and the errors of a missing file through MPI_FILE_NULL's
! handler (MPI_ERRORS_RETURN). The directory must be empty at the end.
module f08_io_handlers
  use mpi_f08
  implicit none
contains
  ! A file error handler written in Fortran: says which error class it is given.
  subroutine file_handler(fh, code)
    type(MPI_File) :: fh
    integer :: code, cls, rank
    call MPI_Error_class(code, cls)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    write (*, '(a,i0,a,l1,a,l1)') 'rank ', rank, ': file handler called, ERR_ACCESS ', &
      cls == MPI_ERR_ACCESS, ' ERR_OTHER ', cls == MPI_ERR_OTHER
  end subroutine
end module

program f08_io
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

! Rank 0's view of a file as plain Fortran stream I/O sees it: size and an Adler-like sum.
subroutine print_file(what, path)
  implicit none
  character(len=*), intent(in) :: what, path
  integer(kind=8), parameter :: m = 2147483647_8
  integer(kind=8) :: a, b, n
  integer :: u, ios
  character(len=1) :: c
  a = 1
  b = 0
  n = 0
  open (newunit=u, file=path, access='stream', form='unformatted', status='old', &
    action='read', iostat=ios)
  if (ios /= 0) then
    write (*, '(3a)') 'rank 0: ', what, ': cannot open'
    return
  end if
  do
    read (u, iostat=ios) c
    if (ios /= 0) exit
    n = n + 1
    a = mod(a + ichar(c), m)
    b = mod(b + a, m)
  end do
  close (u)
  write (*, '(3a,i0,a,z8.8,z8.8)') 'rank 0: ', what, ': ', n, ' bytes, sum ', b, a
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

subroutine body()
  use mpi_f08
  use f08_io_handlers
  implicit none
  integer, external :: remove_dir
  integer, parameter :: B = 4, NB = 3
  integer :: ierr, rank, nprocs, nerr, cls, i, cnt, amode, isz, r, ni
  type(MPI_File) :: fh
  type(MPI_Datatype) :: ftype, ft2, ft3, etype
  type(MPI_Request) :: req
  type(MPI_Errhandler) :: eh, eh2
  type(MPI_Status) :: status
  integer(kind=MPI_OFFSET_KIND) :: disp, disp2, off, sz, pos, boff
  integer(kind=MPI_ADDRESS_KIND) :: lb, ext, ext2
  character(len=256) :: dir, fa, fb, fc
  character(len=MPI_MAX_DATAREP_STRING) :: rep
  integer :: wbuf(B*NB), rbuf(B*NB)
  double precision :: dw(10), dw2(5), dr(10), dr2(5)
  character(len=9) :: line, rline
  character(len=11) :: sline

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  nerr = 0
  dir = ' '
  if (rank == 0) call make_dir(dir)
  call MPI_Bcast(dir, len(dir), MPI_CHARACTER, 0, MPI_COMM_WORLD, ierr)
  if (dir == ' ') call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  fa = trim(dir)//'/a.dat'
  fb = trim(dir)//'/b.dat'
  fc = trim(dir)//'/c.txt'
  call MPI_Type_size(MPI_INTEGER, isz, ierr)

  ! (a) interleaved blocks of B integers through a view with a derived filetype
  call MPI_File_open(MPI_COMM_WORLD, fa, ior(MPI_MODE_CREATE, MPI_MODE_RDWR), MPI_INFO_NULL, &
    fh, ierr)
  if (ierr /= MPI_SUCCESS .or. fh == MPI_FILE_NULL) call fail(rank, nerr, 'open a')
  call MPI_Type_contiguous(B, MPI_INTEGER, ft2, ierr)
  lb = 0
  ext = int(B, MPI_ADDRESS_KIND)*isz*nprocs
  call MPI_Type_create_resized(ft2, lb, ext, ftype, ierr)
  call MPI_Type_commit(ftype, ierr)
  call MPI_Type_free(ft2, ierr)
  disp = int(rank, MPI_OFFSET_KIND)*B*isz
  call MPI_File_set_view(fh, disp, MPI_INTEGER, ftype, 'native', MPI_INFO_NULL, ierr)
  if (ierr /= MPI_SUCCESS) call fail(rank, nerr, 'set_view a')
  do i = 1, B*NB
    wbuf(i) = rank*1000 + i
  end do
  call MPI_File_write_all(fh, wbuf, B*NB, MPI_INTEGER, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  if (cnt /= B*NB) call fail(rank, nerr, 'write_all count')
  call MPI_File_get_position(fh, pos, ierr)
  if (pos /= B*NB) call fail(rank, nerr, 'get_position')
  call MPI_File_get_byte_offset(fh, pos, boff, ierr)
  if (boff /= disp + NB*ext) call fail(rank, nerr, 'get_byte_offset')
  rep = '?'
  call MPI_File_get_view(fh, disp2, etype, ft3, rep, ierr)
  if (disp2 /= disp .or. etype /= MPI_INTEGER .or. rep /= 'native') &
    call fail(rank, nerr, 'get_view')
  call MPI_Type_size(ft3, ni, ierr)
  call MPI_Type_get_extent(ft3, lb, ext2, ierr)
  if (ni /= B*isz .or. lb /= 0 .or. ext2 /= ext) call fail(rank, nerr, 'get_view filetype')
  call MPI_Type_free(ft3, ierr)
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  call MPI_File_get_size(fh, sz, ierr)
  if (sz /= int(nprocs, MPI_OFFSET_KIND)*B*NB*isz) call fail(rank, nerr, 'get_size a')
  call MPI_File_seek(fh, 0_MPI_OFFSET_KIND, MPI_SEEK_SET, ierr)
  rbuf = -1
  call MPI_File_read_all(fh, rbuf, B*NB, MPI_INTEGER, status, ierr)
  if (any(rbuf /= wbuf)) call fail(rank, nerr, 'read_all')
  off = B
  rbuf = -1
  call MPI_File_read_at(fh, off, rbuf, B, MPI_INTEGER, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  if (cnt /= B .or. any(rbuf(1:B) /= wbuf(B + 1:2*B))) call fail(rank, nerr, 'read_at view')
  ! the whole file as integers: the next rank's first block
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', &
    MPI_INFO_NULL, ierr)
  r = mod(rank + 1, nprocs)
  off = int(r, MPI_OFFSET_KIND)*B
  call MPI_File_read_at(fh, off, rbuf, B, MPI_INTEGER, status, ierr)
  do i = 1, B
    if (rbuf(i) /= r*1000 + i) call fail(rank, nerr, 'read_at neighbour')
  end do
  call MPI_File_close(fh, ierr)
  if (fh /= MPI_FILE_NULL) call fail(rank, nerr, 'close a')
  call MPI_Type_free(ftype, ierr)
  if (rank == 0) call print_file('a.dat', fa)
  write (*, '(a,i0,a,i0,a,i0)') 'rank ', rank, ': a.dat size ', sz, ' block ', rbuf(1)

  ! (b) explicit offsets, nonblocking writes and a file error handler written in Fortran
  call MPI_File_open(MPI_COMM_WORLD, fb, ior(MPI_MODE_CREATE, MPI_MODE_WRONLY), &
    MPI_INFO_NULL, fh, ierr)
  call MPI_File_create_errhandler(file_handler, eh, ierr)
  call MPI_File_set_errhandler(fh, eh, ierr)
  dw = 0
  do i = 1, 5
    dw(2*i - 1) = rank + i/10d0
    dw2(i) = -dw(2*i - 1)
  end do
  off = int(rank, MPI_OFFSET_KIND)*5*8
  call MPI_File_write_at(fh, off, dw(1:9:2), 5, MPI_DOUBLE_PRECISION, status, ierr)
  call MPI_Get_count(status, MPI_DOUBLE_PRECISION, cnt, ierr)
  if (ierr /= MPI_SUCCESS .or. cnt /= 5) call fail(rank, nerr, 'write_at')
  off = int(nprocs + rank, MPI_OFFSET_KIND)*5*8
  call MPI_File_seek(fh, off, MPI_SEEK_SET, ierr)
  call MPI_File_iwrite(fh, dw2, 5, MPI_DOUBLE_PRECISION, req, ierr)
  call MPI_Wait(req, status, ierr)
  call MPI_Get_count(status, MPI_DOUBLE_PRECISION, cnt, ierr)
  if (req /= MPI_REQUEST_NULL .or. cnt /= 5) call fail(rank, nerr, 'iwrite')
  call MPI_File_get_position(fh, pos, ierr)
  if (pos /= off + 5*8) call fail(rank, nerr, 'position after iwrite')
  ! reading a write-only file: the handler runs, the call returns the code
  call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, dr2, 5, MPI_DOUBLE_PRECISION, status, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (cls /= MPI_ERR_ACCESS) call fail(rank, nerr, 'read on a write-only file')
  if (rank == 0) call MPI_File_call_errhandler(fh, MPI_ERR_OTHER, ierr)
  call MPI_File_get_errhandler(fh, eh2, ierr)
  if (eh2 /= eh) call fail(rank, nerr, 'get_errhandler')
  call MPI_Errhandler_free(eh2, ierr)
  call MPI_File_get_amode(fh, amode, ierr)
  if (amode /= ior(MPI_MODE_CREATE, MPI_MODE_WRONLY)) call fail(rank, nerr, 'get_amode')
  call MPI_File_close(fh, ierr)
  call MPI_Errhandler_free(eh, ierr)
  call MPI_File_open(MPI_COMM_WORLD, fb, MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  call MPI_File_get_size(fh, sz, ierr)
  if (sz /= int(nprocs, MPI_OFFSET_KIND)*2*5*8) call fail(rank, nerr, 'get_size b')
  r = mod(rank + 1, nprocs)
  off = int(r, MPI_OFFSET_KIND)*5*8
  dr = -99
  call MPI_File_read_at(fh, off, dr(2:10:2), 5, MPI_DOUBLE_PRECISION, status, ierr)
  if (any(dr(1:9:2) /= -99)) call fail(rank, nerr, 'read_at into a section: holes written')
  dr(1:5) = dr(2:10:2)
  off = int(nprocs + r, MPI_OFFSET_KIND)*5*8
  call MPI_File_iread_at(fh, off, dr2, 5, MPI_DOUBLE_PRECISION, req, ierr)
  call MPI_Wait(req, status, ierr)
  call MPI_Get_count(status, MPI_DOUBLE_PRECISION, cnt, ierr)
  do i = 1, 5
    if (dr(i) /= r + i/10d0 .or. dr2(i) /= -dr(i)) call fail(rank, nerr, 'read back b')
  end do
  if (cnt /= 5) call fail(rank, nerr, 'iread_at count')
  call MPI_File_close(fh, ierr)
  if (rank == 0) call print_file('b.dat', fb)
  write (*, '(a,i0,a,i0,a,f4.1)') 'rank ', rank, ': b.dat size ', sz, ' neighbour ', dr(1)

  ! (c) the shared file pointer
  call MPI_File_open(MPI_COMM_WORLD, fc, ior(MPI_MODE_CREATE, MPI_MODE_RDWR), MPI_INFO_NULL, &
    fh, ierr)
  write (line, '(a,i3.3,a)') 'rank ', rank, achar(10)
  call MPI_File_write_ordered(fh, line, len(line), MPI_CHARACTER, status, ierr)
  call MPI_Get_count(status, MPI_CHARACTER, cnt, ierr)
  if (ierr /= MPI_SUCCESS .or. cnt /= len(line)) call fail(rank, nerr, 'write_ordered')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call MPI_File_get_position_shared(fh, pos, ierr)
    if (pos /= nprocs*len(line)) call fail(rank, nerr, 'get_position_shared')
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  write (sline, '(a,i3.3,a)') 'shared ', rank, achar(10)
  do r = 0, nprocs - 1
    if (r == rank) call MPI_File_write_shared(fh, sline, len(sline), MPI_CHARACTER, status, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end do
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  call MPI_File_seek_shared(fh, 0_MPI_OFFSET_KIND, MPI_SEEK_SET, ierr)
  rline = '?'
  call MPI_File_read_ordered(fh, rline, len(rline), MPI_CHARACTER, status, ierr)
  if (rline /= line) call fail(rank, nerr, 'read_ordered')
  call MPI_File_get_size(fh, sz, ierr)
  call MPI_File_close(fh, ierr)
  if (rank == 0) call print_file('c.txt', fc)
  write (*, '(a,i0,a,i0,2a)') 'rank ', rank, ': c.txt size ', sz, ' read ', rline(1:8)

  ! MPI_MODE_SEQUENTIAL: a view at MPI_DISPLACEMENT_CURRENT (an INTEGER(KIND=MPI_OFFSET_KIND)
  ! constant) starts where the shared pointer is, here after the first line
  call MPI_File_open(MPI_COMM_WORLD, fc, ior(MPI_MODE_RDONLY, MPI_MODE_SEQUENTIAL), &
    MPI_INFO_NULL, fh, ierr)
  if (rank == 0) call MPI_File_read_shared(fh, rline, len(rline), MPI_CHARACTER, status, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_CHARACTER, MPI_CHARACTER, &
    'native', MPI_INFO_NULL, ierr)
  if (ierr /= MPI_SUCCESS) call fail(rank, nerr, 'set_view at MPI_DISPLACEMENT_CURRENT')
  call MPI_File_get_view(fh, disp2, etype, ft3, rep, ierr)
  if (disp2 /= len(line)) call fail(rank, nerr, 'MPI_DISPLACEMENT_CURRENT disp')
  rline = '?'
  call MPI_File_read_ordered(fh, rline, len(rline), MPI_CHARACTER, status, ierr)
  call MPI_File_close(fh, ierr)
  write (*, '(a,i0,a,i0,3a)') 'rank ', rank, ': sequential view at ', disp2, ' reads "', &
    rline(1:8), '"'

  ! delete, and a missing file's errors through MPI_FILE_NULL's handler (MPI_ERRORS_RETURN)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call MPI_File_delete(fa, MPI_INFO_NULL, ierr)
    call MPI_File_delete(fb, MPI_INFO_NULL, i)
    if (ierr /= MPI_SUCCESS .or. i /= MPI_SUCCESS) call fail(rank, nerr, 'delete')
    call MPI_File_delete(fc, MPI_INFO_NULL, ierr)
    call MPI_File_delete(fc, MPI_INFO_NULL, ierr)
    call MPI_Error_class(ierr, cls, i)
    write (*, '(a,l1)') 'rank 0: deleting a missing file gives MPI_ERR_NO_SUCH_FILE ', &
      cls == MPI_ERR_NO_SUCH_FILE
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_open(MPI_COMM_SELF, fa, MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (cls /= MPI_ERR_NO_SUCH_FILE .or. fh /= MPI_FILE_NULL) call fail(rank, nerr, 'open missing')
  call MPI_File_open(MPI_COMM_SELF, fa, ior(MPI_MODE_RDONLY, MPI_MODE_WRONLY), MPI_INFO_NULL, &
    fh, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (cls /= MPI_ERR_AMODE) call fail(rank, nerr, 'open with a bad amode')
  call MPI_File_get_errhandler(MPI_FILE_NULL, eh, ierr)
  if (eh /= MPI_ERRORS_RETURN) call fail(rank, nerr, 'MPI_FILE_NULL handler')
  call MPI_Errhandler_free(eh, ierr)

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (remove_dir(dir) /= 0) call fail(rank, nerr, 'directory not empty at the end')
  end if
  if (nerr == 0) then
    write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  else
    write (*, '(a,i0,a,i0,a)') 'rank ', rank, ': FAILED with ', nerr, ' errors'
  end if
  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1
end subroutine
