! f_attrlang: attributes between Fortran and C in one program (issue 17; MPI 4.1 §19.3.7).
! An attribute set from Fortran is an integer: C code reading it (MPI_Comm_get_attr,
! MPI_Attr_get, MPI_Type_get_attr) gets a pointer to that integer, and C callbacks get the
! same pointer; Fortran reading it and Fortran callbacks get the integer. An attribute set
! from C is a pointer, which Fortran reads as an integer. The C half is f_attrlang.cside.
program f_attrlang
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

! A copy callback written in Fortran: sees the integer, copies it plus one.
subroutine f_copy(oldcomm, keyval, extra, valin, valout, flag, ierr)
  use mpi
  implicit none
  integer :: oldcomm, keyval, ierr, rank, e
  integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
  logical :: flag
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, e)
  write (*, '(a,i0,a,i0)') 'rank ', rank, ': Fortran copy callback sees ', valin
  valout = valin + 1
  flag = .true.
  ierr = MPI_SUCCESS
end subroutine

subroutine f_delete(comm, keyval, val, extra, ierr)
  use mpi
  implicit none
  integer :: comm, keyval, ierr, rank, e
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, e)
  write (*, '(a,i0,a,i0)') 'rank ', rank, ': Fortran delete callback sees ', val
  ierr = MPI_SUCCESS
end subroutine

! A window delete callback written in Fortran: gets the integer. (Its window handle is not
! checked: MPICH 4.0.2 passes Fortran window delete callbacks the attribute value in place of
! the keyval's extra_state, so the handle cannot be handed over that way.)
subroutine f_win_delete(win, keyval, val, extra, ierr)
  use mpi
  implicit none
  integer :: win, keyval, ierr, rank, e
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, e)
  write (*, '(a,i0,a,i0)') 'rank ', rank, ': Fortran window delete callback sees ', val
  ierr = MPI_SUCCESS
end subroutine

subroutine body()
  use mpi
  implicit none
  external :: f_copy, f_delete, f_win_delete
  integer :: rank, ierr, nerr, comm, dup, fkey, ckey, tkey, ty, flag1, win, wkey
  integer :: buf(4)
  integer :: ival
  integer(kind=MPI_ADDRESS_KIND) :: val, cval
  logical :: flag

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)

  ! A Fortran keyval with Fortran callbacks, set from Fortran: C reads the integer through a
  ! pointer; the copy callback and Fortran reads see the integer.
  call MPI_Comm_create_keyval(f_copy, f_delete, fkey, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(comm, fkey, int(100 + rank, MPI_ADDRESS_KIND), ierr)
  call c_read(comm, fkey, cval, flag1)
  if (flag1 == 0 .or. cval /= 100 + rank) call fail(rank, nerr, 'C reads a Fortran attribute')
  call MPI_Comm_dup(comm, dup, ierr)
  call MPI_Comm_get_attr(dup, fkey, val, flag, ierr)
  if (.not. flag .or. val /= 101 + rank) call fail(rank, nerr, 'Fortran reads the copy')
  call c_read(dup, fkey, cval, flag1)
  if (flag1 == 0 .or. cval /= 101 + rank) call fail(rank, nerr, 'C reads the copy')
  call MPI_Comm_free(dup, ierr)

  ! Set from C (a pointer-sized value): Fortran reads it and its callbacks see it as is.
  call c_set(comm, fkey, int(7000 + rank, MPI_ADDRESS_KIND))
  call MPI_Comm_get_attr(comm, fkey, val, flag, ierr)
  if (.not. flag .or. val /= 7000 + rank) call fail(rank, nerr, 'Fortran reads a C attribute')
  call MPI_Comm_dup(comm, dup, ierr)
  call MPI_Comm_get_attr(dup, fkey, val, flag, ierr)
  if (.not. flag .or. val /= 7001 + rank) call fail(rank, nerr, 'Fortran reads the C copy')
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_delete_attr(comm, fkey, ierr)

  ! A C keyval with C callbacks, set from Fortran: the callbacks see a pointer to the integer.
  call c_keyval(ckey)
  call MPI_Comm_set_attr(comm, ckey, int(300 + rank, MPI_ADDRESS_KIND), ierr)
  call MPI_Comm_get_attr(comm, ckey, val, flag, ierr)
  if (.not. flag .or. val /= 300 + rank) call fail(rank, nerr, 'Fortran reads its own value')
  call MPI_Comm_dup(comm, dup, ierr)
  call c_flush()
  call MPI_Comm_get_attr(dup, ckey, val, flag, ierr)
  if (flag) call fail(rank, nerr, 'the C copy callback said not to copy')
  call MPI_Comm_free(dup, ierr)
  ! MPI-1: an INTEGER put from Fortran, read by C's MPI_Attr_get through an int pointer;
  ! replacing it runs the C delete callback on the old value.
  call MPI_Attr_put(comm, ckey, 400 + rank, ierr)
  call c_flush()
  call c_read1(comm, ckey, ival, flag1)
  if (flag1 == 0 .or. ival /= 400 + rank) call fail(rank, nerr, 'C reads an MPI_Attr_put value')
  call MPI_Attr_get(comm, ckey, ival, flag, ierr)
  if (.not. flag .or. ival /= 400 + rank) call fail(rank, nerr, 'MPI_Attr_get of MPI_Attr_put')
  call MPI_Comm_free(comm, ierr)
  call c_flush()
  call c_free_keyval(ckey)
  call MPI_Comm_free_keyval(fkey, ierr)

  ! A datatype attribute set from Fortran, read from C.
  call MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, tkey, &
    0_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_dup(MPI_INTEGER, ty, ierr)
  call MPI_Type_set_attr(ty, tkey, int(500 + rank, MPI_ADDRESS_KIND), ierr)
  call c_read_type(ty, tkey, cval, flag1)
  if (flag1 == 0 .or. cval /= 500 + rank) call fail(rank, nerr, 'C reads a datatype attribute')
  call MPI_Type_get_attr(ty, tkey, val, flag, ierr)
  if (.not. flag .or. val /= 500 + rank) call fail(rank, nerr, 'Fortran reads a datatype attribute')
  call MPI_Type_free(ty, ierr)
  call MPI_Type_free_keyval(tkey, ierr)

  ! A window attribute set from Fortran, read from C, deleted by a Fortran callback.
  call MPI_Win_create(buf, int(16, MPI_ADDRESS_KIND), 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, f_win_delete, wkey, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Win_set_attr(win, wkey, int(600 + rank, MPI_ADDRESS_KIND), ierr)
  call c_read_win(win, wkey, cval, flag1)
  if (flag1 == 0 .or. cval /= 600 + rank) call fail(rank, nerr, 'C reads a window attribute')
  call MPI_Win_free(win, ierr)
  call MPI_Win_free_keyval(wkey, ierr)

  if (nerr == 0) write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  call MPI_Finalize(ierr)
end subroutine
