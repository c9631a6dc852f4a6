! f_fault_segv: a null store in virtual rank 1 of a Fortran program is reported with the rank
! and the signal (toucanfort compiles with -fno-backtrace, so gfortran's own handler does not
! take the signal first); the job ends with the signal's status, as for C (fault_segv).
program f_fault_segv
  use mpi
  implicit none
  integer :: ierr, rank
  integer, pointer :: p
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  nullify (p)
  if (rank == 1) then
    write (*, '(a)') 'rank 1: storing through a null pointer'
    flush (6)
    p = 5
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  write (*, '(a,i0,a)') 'rank ', rank, ': OK'
  call MPI_Finalize(ierr)
end program
