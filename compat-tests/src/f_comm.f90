! f_comm: communicators, groups, Cartesian topologies and errors from Fortran (use mpi):
! Comm_dup/split/compare/free, names (strings with hidden lengths, blank-padded), groups
! (incl, excl, range_incl, translate_ranks, union, compare), Dims_create, Cart_create with
! LOGICAL periods, Cart_coords/rank/shift/get/sub, MPI_TAG_UB through Comm_get_attr, user
! attributes with copy/delete callbacks written in Fortran and MPI_COMM_DUP_FN, an unweighted
! distributed graph (MPI_UNWEIGHTED) with Neighbor_allgather, MPI_ERRORS_RETURN with the error classes of bad
! arguments, Error_string, an error handler written in Fortran, and the MPI-1 names
! MPI_Errhandler_set/get.
program f_comm
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

! An error handler written in Fortran: says which error class it is given.
subroutine my_handler(comm, code)
  use mpi
  implicit none
  integer :: comm, code, cls, ierr, rank, res
  call MPI_Error_class(code, cls, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_compare(comm, MPI_COMM_WORLD, res, ierr)
  write (*, '(a,i0,a,l1,a,l1,a,l1)') 'rank ', rank, ': handler called, ERR_OTHER ', &
    cls == MPI_ERR_OTHER, ' ERR_TAG ', cls == MPI_ERR_TAG, ' on world ', res == MPI_IDENT
end subroutine

! Attribute callbacks written in Fortran: the copy gives in + extra_state, the delete says
! what it deletes.
subroutine my_copy(oldcomm, keyval, extra, valin, valout, flag, ierr)
  use mpi
  implicit none
  integer :: oldcomm, keyval, ierr, rank, e
  integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
  logical :: flag
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, e)
  write (*, '(a,i0,a,i0,a,i0)') 'rank ', rank, ': copy callback, value ', valin, ' extra ', extra
  valout = valin + extra
  flag = .true.
  ierr = MPI_SUCCESS
end subroutine

subroutine my_delete(comm, keyval, val, extra, ierr)
  use mpi
  implicit none
  integer :: comm, keyval, ierr, rank, e
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, e)
  write (*, '(a,i0,a,i0,a,i0)') 'rank ', rank, ': delete callback, value ', val, ' extra ', extra
  ierr = MPI_SUCCESS
end subroutine

! A rank as text, "null" for MPI_PROC_NULL (whose value differs between MPI libraries).
character(len=8) function rk(r)
  use mpi
  implicit none
  integer, intent(in) :: r
  if (r == MPI_PROC_NULL) then
    rk = 'null'
  else
    write (rk, '(i0)') r
  end if
end function

subroutine body()
  use mpi
  implicit none
  integer :: ierr, rank, np, nerr, i, res, half, hrank, hsize, dup, cart, row, key
  integer :: wgroup, g1, g2, g3, gsize, errh, cls, slen
  integer :: dims(2), coords(2), src, dst, ranks(4), tr(4), rng(3, 1)
  logical :: periods(2), flag
  integer(kind=MPI_ADDRESS_KIND) :: val
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=MPI_MAX_ERROR_STRING) :: msg
  character(len=5) :: short
  character(len=8), external :: rk
  external my_handler, my_copy, my_delete
  integer :: key1, key2, dup2

  nerr = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)

  ! Names: the world's, a set one with trailing blanks, one cut to a short variable
  call MPI_Comm_get_name(MPI_COMM_WORLD, name, slen, ierr)
  if (rank == 0) write (*, '(3a,i0)') 'rank 0: world name [', trim(name), '] length ', slen
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_compare(dup, MPI_COMM_WORLD, res, ierr)
  if (res /= MPI_CONGRUENT) call fail(rank, nerr, 'dup congruent')
  call MPI_Comm_set_name(dup, 'my duplicate    ', ierr)
  name = 'garbage garbage'
  call MPI_Comm_get_name(dup, name, slen, ierr)
  if (name /= 'my duplicate' .or. slen /= 12) call fail(rank, nerr, 'set/get name')
  call MPI_Comm_get_name(dup, short, slen, ierr)
  if (short /= 'my du') call fail(rank, nerr, 'name cut to the variable')

  ! Split in halves, reversed keys
  half = rank / ((np + 1) / 2)
  call MPI_Comm_split(MPI_COMM_WORLD, half, -rank, row, ierr)
  call MPI_Comm_rank(row, hrank, ierr)
  call MPI_Comm_size(row, hsize, ierr)
  write (*, '(a,i0,a,i0,a,i0,a,i0)') 'rank ', rank, ': half ', half, ' rank ', hrank, &
    ' of ', hsize
  call MPI_Allreduce(rank, i, 1, MPI_INTEGER, MPI_MAX, row, ierr)
  write (*, '(a,i0,a,i0)') 'rank ', rank, ': max in half ', i
  call MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, key, ierr)
  if (key /= MPI_COMM_NULL) call fail(rank, nerr, 'split undefined')

  ! Groups
  call MPI_Comm_group(MPI_COMM_WORLD, wgroup, ierr)
  ranks(1:2) = [np - 1, 0]
  call MPI_Group_incl(wgroup, min(np, 2), ranks, g1, ierr)
  call MPI_Group_size(g1, gsize, ierr)
  tr = -5
  ranks(1:2) = [0, 1]
  call MPI_Group_translate_ranks(g1, gsize, ranks, wgroup, tr, ierr)
  if (rank == 0) write (*, '(a,i0,a,2(1x,i0))') 'rank 0: incl size ', gsize, ' translated', &
    tr(1:gsize)
  call MPI_Group_excl(wgroup, 1, [0], g2, ierr)
  call MPI_Group_union(g1, g2, g3, ierr)
  call MPI_Group_compare(g3, wgroup, res, ierr)
  if (rank == 0) write (*, '(a,l1,a,l1)') 'rank 0: union similar ', res == MPI_SIMILAR, &
    ' ident ', res == MPI_IDENT
  call MPI_Group_free(g3, ierr)
  rng(:, 1) = [0, np - 1, 2]
  call MPI_Group_range_incl(wgroup, 1, rng, g3, ierr)
  call MPI_Group_size(g3, gsize, ierr)
  call MPI_Group_rank(g3, i, ierr)
  write (*, '(a,i0,a,i0,a,i0)') 'rank ', rank, ': even group size ', gsize, ' rank ', i
  if (mod(rank, 2) == 1 .and. i /= MPI_UNDEFINED) call fail(rank, nerr, 'group rank undefined')
  call MPI_Group_free(g1, ierr)
  call MPI_Group_free(g2, ierr)
  call MPI_Group_free(g3, ierr)
  call MPI_Group_free(wgroup, ierr)
  if (wgroup /= MPI_GROUP_NULL) call fail(rank, nerr, 'group_free')

  ! Cartesian topology, periodic in the first dimension only
  dims = 0
  call MPI_Dims_create(np, 2, dims, ierr)
  if (rank == 0) write (*, '(a,2(1x,i0))') 'rank 0: dims', dims
  periods = [.true., .false.]
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call MPI_Cart_coords(cart, rank, 2, coords, ierr)
  call MPI_Cart_rank(cart, coords, i, ierr)
  if (i /= rank) call fail(rank, nerr, 'cart_rank')
  call MPI_Cart_shift(cart, 0, 1, src, dst, ierr)
  write (*, '(a,i0,a,2(1x,i0),4a)') 'rank ', rank, ': coords', coords, ' dim0 from ', &
    trim(rk(src)), ' to ', trim(rk(dst))
  call MPI_Cart_shift(cart, 1, 1, src, dst, ierr)
  write (*, '(a,i0,4a)') 'rank ', rank, ': dim1 from ', trim(rk(src)), ' to ', trim(rk(dst))
  periods = [.false., .true.]
  call MPI_Cart_get(cart, 2, dims, periods, coords, ierr)
  if (.not. periods(1) .or. periods(2)) call fail(rank, nerr, 'cart_get periods')
  call MPI_Cart_sub(cart, [.false., .true.], row, ierr)
  call MPI_Comm_size(row, i, ierr)
  if (i /= dims(2)) call fail(rank, nerr, 'cart_sub')
  call MPI_Topo_test(row, i, ierr)
  if (i /= MPI_CART) call fail(rank, nerr, 'topo_test')
  call MPI_Comm_free(row, ierr)
  call MPI_Comm_free(cart, ierr)
  if (cart /= MPI_COMM_NULL) call fail(rank, nerr, 'comm_free')

  ! A distributed graph ring, unweighted (the MPI_UNWEIGHTED sentinel)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, [mod(rank + np - 1, np)], MPI_UNWEIGHTED, &
                                      1, [mod(rank + 1, np)], MPI_UNWEIGHTED, MPI_INFO_NULL, &
                                      .false., row, ierr)
  call MPI_Dist_graph_neighbors_count(row, src, dst, flag, ierr)
  if (src /= 1 .or. dst /= 1 .or. flag) call fail(rank, nerr, 'dist_graph unweighted')
  call MPI_Neighbor_allgather(rank, 1, MPI_INTEGER, i, 1, MPI_INTEGER, row, ierr)
  if (i /= mod(rank + np - 1, np)) call fail(rank, nerr, 'neighbor_allgather')
  call MPI_Comm_free(row, ierr)

  ! Attributes: the tag bound, and a user keyval's value
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (.not. flag .or. val < 32767) call fail(rank, nerr, 'tag_ub')
  call MPI_Comm_create_keyval(my_copy, my_delete, key1, 1000_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key2, 0_MPI_ADDRESS_KIND, &
                              ierr)
  call MPI_Comm_set_attr(dup, key1, int(rank + 5, MPI_ADDRESS_KIND), ierr)
  call MPI_Comm_set_attr(dup, key2, 77_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_dup(dup, dup2, ierr)
  call MPI_Comm_get_attr(dup2, key1, val, flag, ierr)
  if (.not. flag .or. val /= rank + 1005) call fail(rank, nerr, 'attribute copied by my_copy')
  call MPI_Comm_get_attr(dup2, key2, val, flag, ierr)
  if (.not. flag .or. val /= 77) call fail(rank, nerr, 'attribute copied by MPI_COMM_DUP_FN')
  call MPI_Comm_free(dup2, ierr)
  call MPI_Comm_delete_attr(dup, key1, ierr)
  call MPI_Comm_get_attr(dup, key1, val, flag, ierr)
  if (flag) call fail(rank, nerr, 'attribute deleted')
  call MPI_Comm_free_keyval(key1, ierr)
  call MPI_Comm_free_keyval(key2, ierr)

  ! Errors under MPI_ERRORS_RETURN
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(i, 1, MPI_INTEGER, np, 0, dup, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (rank == 0) write (*, '(a,l1)') 'rank 0: bad rank gives MPI_ERR_RANK ', cls == MPI_ERR_RANK
  call MPI_Send(i, -1, MPI_INTEGER, 0, 0, dup, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (rank == 0) write (*, '(a,l1)') 'rank 0: negative count gives MPI_ERR_COUNT ', &
    cls == MPI_ERR_COUNT
  call MPI_Send(i, 1, MPI_INTEGER, 0, -7, dup, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (rank == 0) write (*, '(a,l1)') 'rank 0: negative tag gives MPI_ERR_TAG ', cls == MPI_ERR_TAG
  call MPI_Bcast(i, 1, MPI_DATATYPE_NULL, 0, dup, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (rank == 0) write (*, '(a,l1)') 'rank 0: null datatype gives MPI_ERR_TYPE ', &
    cls == MPI_ERR_TYPE
  msg = '?'
  call MPI_Error_string(ierr, msg, slen, i)
  if (slen <= 0 .or. slen > MPI_MAX_ERROR_STRING .or. len_trim(msg) /= slen) &
    call fail(rank, nerr, 'error_string')
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_ARE_FATAL, ierr)
  call MPI_Comm_get_errhandler(dup, errh, ierr)
  if (errh /= MPI_ERRORS_ARE_FATAL) call fail(rank, nerr, 'get_errhandler')

  ! An error handler written in Fortran, on the world communicator
  call MPI_Comm_create_errhandler(my_handler, errh, ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, errh, ierr)
  call MPI_Errhandler_free(errh, ierr)
  if (rank == 0) call MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER, ierr)
  if (rank == 0) call MPI_Recv(i, 1, MPI_INTEGER, 0, -3, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  ! the deprecated MPI-1 names
  call MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
  call MPI_Errhandler_get(MPI_COMM_WORLD, errh, ierr)
  if (errh /= MPI_ERRORS_ARE_FATAL) call fail(rank, nerr, 'errhandler_get')

  call MPI_Comm_free(dup, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (nerr == 0) then
    write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  else
    write (*, '(a,i0,a,i0,a)') 'rank ', rank, ': FAILED with ', nerr, ' errors'
  end if
  call MPI_Finalize(ierr)
  if (nerr /= 0) stop 1
end subroutine
