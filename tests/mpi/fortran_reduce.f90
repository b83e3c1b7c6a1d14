! tests/mpi/fortran_reduce.f90 -- every predefined reduction on every
! Fortran datatype, through the Fortran bindings (use mpi_f08: its
! interfaces take call_k's assumed-type buffer, MPI_IN_PLACE or data,
! under any MPI; MPICH's mpi module declares none for choice buffers).
!
! Types: MPI_INTEGER, MPI_INTEGER1/2/4/8, MPI_REAL, MPI_REAL4/8 (and 16),
! MPI_DOUBLE_PRECISION, MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_COMPLEX8/16 (32),
! MPI_LOGICAL, MPI_2REAL, MPI_2DOUBLE_PRECISION, MPI_2INTEGER, each with
! every op MPI defines for it (integers: SUM PROD MIN MAX BAND BOR BXOR;
! reals: SUM PROD MIN MAX; complex: SUM PROD; logical: LAND LOR LXOR; pairs:
! MINLOC MAXLOC), at 1, 7, 300 elements and 66000 bytes' worth (above
! 64 KiB): MPI_Allreduce, MPI_Reduce at every root, MPI_Reduce_scatter_block,
! MPI_Reduce_scatter (uneven counts, zeros), MPI_Scan and MPI_Exscan, each
! plain and with MPI_IN_PLACE, on MPI_COMM_WORLD. Every call has data of
! its own per rank and element; each rank computes every rank's data
! itself and folds a reference, compared byte for byte (logicals: with
! .eqv.), with the bytes after the result untouched. The values make every
! combining order exact: small integers for sums, +-1 and +-2 (few 2s) for
! real and integer products, Gaussian integers near the real axis for
! complex products (no signed zero can arise; up to 8 ranks), ties for
! MINLOC/MAXLOC.
! Allreduce results must also hash alike on every rank.
!
! MPI_REAL16 and MPI_COMPLEX32 run with numacoll only (NUMACOLL_EXPECT=core,
! where numacoll reduces them as binary128): gfortran's REAL(16) is IEEE
! quad, not C's long double, and Open MPI (Debian's 4.1.4 and 5.0.7) has
! no real op for them: MPI_SUM returns MPI_SUCCESS with one rank's data
! instead of the sum.
!
! Reports through tests/mpi/mpit.c (tests/mpi/mpit_f.c): with
! NUMACOLL_EXPECT=core numacoll's MPI_T counters must show every call run
! by numacoll and none handed back.

module fr_shim
  use, intrinsic :: iso_c_binding, only: c_int, c_char, c_long_long
  implicit none
  interface
    subroutine mpitf_init(name) bind(C)
      import :: c_char
      character(kind=c_char), intent(in) :: name(*)
    end subroutine
    subroutine mpitf_check(ok, msg) bind(C)
      import :: c_int, c_char
      integer(c_int), value :: ok
      character(kind=c_char), intent(in) :: msg(*)
    end subroutine
    integer(c_int) function mpitf_finish() bind(C)
      import :: c_int
    end function
    integer(c_int) function mpitf_mpich() bind(C)
      import :: c_int
    end function
    subroutine mpitf_counters_begin() bind(C)
    end subroutine
    subroutine mpitf_counters_end(made) bind(C)
      import :: c_long_long
      integer(c_long_long), intent(in) :: made(6)
    end subroutine
  end interface
end module fr_shim

program fortran_reduce
  use mpi_f08
  use fr_shim
  use, intrinsic :: iso_fortran_env, only: int8, int16, int32, int64, &
                                           real32, real64, real128
  use, intrinsic :: iso_c_binding, only: c_null_char, c_long_long
  implicit none

  integer, parameter :: F_INT = 1, F_REAL = 2, F_CPLX = 3, F_LOG = 4, &
                        F_PAIR = 5
  type :: tdesc
    character(len=24) :: name
    type(MPI_Datatype) :: dt
    integer :: fam, csize       ! csize: bytes of one component
    logical :: isreal           ! components are reals, else integers
  end type
  integer, parameter :: NT = 19
  type(tdesc) :: types(NT)

  integer, parameter :: O_SUM = 1, O_PROD = 2, O_MIN = 3, O_MAX = 4, &
                        O_BAND = 5, O_BOR = 6, O_BXOR = 7, O_LAND = 8, &
                        O_LOR = 9, O_LXOR = 10, O_MINLOC = 11, O_MAXLOC = 12
  character(len=6), parameter :: op_names(12) = [character(len=6) :: &
    'sum', 'prod', 'min', 'max', 'band', 'bor', 'bxor', 'land', 'lor', &
    'lxor', 'minloc', 'maxloc']
  type(MPI_Op) :: ops(12)

  ! The collectives, in the order of mpit_f.c's counters.
  integer, parameter :: K_ALL = 1, K_RED = 2, K_RSB = 3, K_RS = 4, &
                        K_SCAN = 5, K_EXSCAN = 6
  character(len=20), parameter :: knames(6) = [character(len=20) :: &
    'Allreduce', 'Reduce', 'Reduce_scatter_block', 'Reduce_scatter', &
    'Scan', 'Exscan']
  integer(c_long_long) :: made(6) = 0

  integer(int8), parameter :: SENTINEL = -52_int8
  integer, parameter :: GUARD = 32
  integer(int64), parameter :: M31 = 2147483647_int64
  integer :: me, p, ierr, ti, o, ci, rc, root, lsize, nrun
  character(len=16) :: expect
  integer(int64) :: seed = 0
  integer :: counts(4)
  logical :: mpich

  call mpitf_init('fortran_reduce' // c_null_char)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  lsize = storage_size(.true.) / 8
  mpich = mpitf_mpich() /= 0
  types = [ &
    tdesc('MPI_INTEGER', MPI_INTEGER, F_INT, storage_size(0) / 8, .false.), &
    tdesc('MPI_INTEGER1', MPI_INTEGER1, F_INT, 1, .false.), &
    tdesc('MPI_INTEGER2', MPI_INTEGER2, F_INT, 2, .false.), &
    tdesc('MPI_INTEGER4', MPI_INTEGER4, F_INT, 4, .false.), &
    tdesc('MPI_INTEGER8', MPI_INTEGER8, F_INT, 8, .false.), &
    tdesc('MPI_REAL', MPI_REAL, F_REAL, storage_size(0.0) / 8, .true.), &
    tdesc('MPI_REAL4', MPI_REAL4, F_REAL, 4, .true.), &
    tdesc('MPI_REAL8', MPI_REAL8, F_REAL, 8, .true.), &
    tdesc('MPI_DOUBLE_PRECISION', MPI_DOUBLE_PRECISION, F_REAL, 8, .true.), &
    tdesc('MPI_COMPLEX', MPI_COMPLEX, F_CPLX, storage_size(0.0) / 8, .true.), &
    tdesc('MPI_DOUBLE_COMPLEX', MPI_DOUBLE_COMPLEX, F_CPLX, 8, .true.), &
    tdesc('MPI_COMPLEX8', MPI_COMPLEX8, F_CPLX, 4, .true.), &
    tdesc('MPI_COMPLEX16', MPI_COMPLEX16, F_CPLX, 8, .true.), &
    tdesc('MPI_LOGICAL', MPI_LOGICAL, F_LOG, lsize, .false.), &
    tdesc('MPI_2REAL', MPI_2REAL, F_PAIR, storage_size(0.0) / 8, .true.), &
    tdesc('MPI_2DOUBLE_PRECISION', MPI_2DOUBLE_PRECISION, F_PAIR, 8, .true.), &
    tdesc('MPI_2INTEGER', MPI_2INTEGER, F_PAIR, storage_size(0) / 8, .false.), &
    tdesc('MPI_REAL16', MPI_REAL16, F_REAL, 16, .true.), &
    tdesc('MPI_COMPLEX32', MPI_COMPLEX32, F_CPLX, 16, .true.)]
  ops = [MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR, MPI_BXOR, &
         MPI_LAND, MPI_LOR, MPI_LXOR, MPI_MINLOC, MPI_MAXLOC]

  ! Complex products stay exact and free of signed zeros up to 8 ranks
  ! (gen); beyond, the program says so instead of failing on them.
  call check(p <= 8, 'at most 8 processes')
  if (p > 8) then
    rc = mpitf_finish()
    stop 1, quiet=.true.
  end if
  ! the last two (binary128) only where numacoll reduces them
  call get_environment_variable('NUMACOLL_EXPECT', expect)
  nrun = merge(NT, NT - 2, expect == 'core')
  call mpitf_counters_begin()
  do ti = 1, nrun
    ! 1, 7, 300 elements and 66000 bytes (a large call above 64 KiB)
    counts = [1, 7, 300, 66000 / esize(types(ti))]
    do o = 1, 12
      if (.not. applies(types(ti), o)) cycle
      do ci = 1, 4
        call one(types(ti), o, counts(ci), K_ALL, -1)
        do root = 0, p - 1
          call one(types(ti), o, counts(ci), K_RED, root)
        end do
        call one(types(ti), o, counts(ci), K_RSB, -1)
        call one(types(ti), o, counts(ci), K_RS, -1)
        call one(types(ti), o, counts(ci), K_SCAN, -1)
        call one(types(ti), o, counts(ci), K_EXSCAN, -1)
      end do
    end do
  end do
  call mpitf_counters_end(made)
  rc = mpitf_finish()
  if (rc /= 0) stop 1, quiet=.true.

contains

  integer function ncomp(t)
    type(tdesc), intent(in) :: t
    ncomp = merge(2, 1, t%fam == F_CPLX .or. t%fam == F_PAIR)
  end function

  integer function esize(t)
    type(tdesc), intent(in) :: t
    esize = t%csize * ncomp(t)
  end function

  logical function applies(t, o)
    type(tdesc), intent(in) :: t
    integer, intent(in) :: o
    select case (t%fam)
    case (F_INT)
      applies = o <= O_BXOR
    case (F_REAL)
      applies = o <= O_MAX
    case (F_CPLX)
      applies = o <= O_PROD
    case (F_LOG)
      applies = o >= O_LAND .and. o <= O_LXOR
    case default
      applies = o >= O_MINLOC
    end select
  end function

  ! A hash of (call, rank, component) below 2^31, without overflow and
  ! without division: rounds of a 31-bit LCG, each folding its high bits
  ! into the low ones. hbits: 64 bits of it (the sign bit included).
  elemental integer(int64) function hsmall(s, r, k)
    integer(int64), intent(in) :: s, k
    integer, intent(in) :: r
    integer :: i
    hsmall = iand(s * 65599_int64 + int(r, int64) * 1000003_int64 + k, M31)
    do i = 1, 3
      hsmall = iand(hsmall * 1103515245_int64 + 12345_int64, M31)
      hsmall = ieor(hsmall, ishft(hsmall, -16))
    end do
  end function

  elemental integer(int64) function hbits(s, r, k)
    integer(int64), intent(in) :: s, k
    integer, intent(in) :: r
    hbits = ieor(ieor(ishft(hsmall(s, r, k), 31), hsmall(s + 1, r, k)), &
                 ishft(hsmall(s + 2, r, k), 33))
  end function

  ! Random bits as an integer of csize bytes (sign-extended).
  elemental integer(int64) function width(t, v)
    type(tdesc), intent(in) :: t
    integer(int64), intent(in) :: v
    integer :: sh
    sh = 64 - 8 * t%csize
    width = shifta(ishft(v, sh), sh)
  end function

  ! Rank r's components of elements [from, from + n) in call s.
  subroutine gen(t, o, s, r, from, n, c)
    type(tdesc), intent(in) :: t
    integer, intent(in) :: o, r, from, n
    integer(int64), intent(in) :: s
    integer(int64), intent(out) :: c(:)
    integer(int64), allocatable :: k(:), h(:)
    integer(int64) :: i
    integer :: nc
    nc = ncomp(t)
    allocate (k(n * nc))
    do i = 1, size(k, kind=int64)   ! the component's number in the call
      k(i) = int(from, int64) * nc + i - 1
    end do
    h = hsmall(s, r, k)
    select case (o)
    case (O_SUM)
      c = mod(h, 7_int64) - 3
    case (O_PROD)
      c = merge(1, -1, mod(h, 2_int64) == 0)
      if (t%fam == F_CPLX) then
        ! 6 or 7 +- i: below 9.5 degrees, so that 8 of them, in any
        ! grouping, keep a positive real part and no signed zero arises
        ! (a tree's (-2, 0) x (-2, 0) gives an imaginary -0); below 2^24
        c(1::2) = 6 + mod(h(1::2) / 2, 2_int64)
      else                        ! a 2 on one rank in 4 only
        c = c * merge(2, 1, mod(r + k + s, 4_int64) == 0)
      end if
    case (O_MIN, O_MAX)
      if (t%fam == F_INT) then
        c = width(t, hbits(s, r, k))
      else
        c = mod(h, 7_int64) - 3
      end if
    case (O_BAND)   ! mostly ones, else the result would be all zeros
      c = width(t, ior(hbits(s, r, k), hbits(s + 5, r, k)))
    case (O_BOR)
      c = width(t, iand(hbits(s, r, k), hbits(s + 5, r, k)))
    case (O_BXOR)
      c = width(t, hbits(s, r, k))
    case (O_LAND)
      c = merge(0, 1, mod(h, 8_int64) == 0)
    case (O_LOR)
      c = merge(1, 0, mod(h, 8_int64) == 0)
    case (O_LXOR)
      c = mod(h, 2_int64)
    case default    ! value and index, with ties in both
      c(1::2) = mod(h(1::2), 5_int64) - 2
      c(2::2) = mod(h(2::2), 5_int64)
    end select
  end subroutine

  ! a = a op x, elementwise on the components
  subroutine combine(t, o, a, x)
    type(tdesc), intent(in) :: t
    integer, intent(in) :: o
    integer(int64), intent(inout) :: a(:)
    integer(int64), intent(in) :: x(:)
    integer(int64), allocatable :: re(:)
    logical, allocatable :: take(:)
    select case (o)
    case (O_SUM)
      a = a + x
    case (O_PROD)
      if (t%fam == F_CPLX) then
        re = a(1::2) * x(1::2) - a(2::2) * x(2::2)
        a(2::2) = a(1::2) * x(2::2) + a(2::2) * x(1::2)
        a(1::2) = re
      else
        a = a * x
      end if
    case (O_MIN)
      a = min(a, x)
    case (O_MAX)
      a = max(a, x)
    case (O_BAND)
      a = iand(a, x)
    case (O_BOR)
      a = ior(a, x)
    case (O_BXOR)
      a = ieor(a, x)
    case (O_LAND)
      a = merge(1, 0, a /= 0 .and. x /= 0)
    case (O_LOR)
      a = merge(1, 0, a /= 0 .or. x /= 0)
    case (O_LXOR)
      a = merge(1, 0, (a /= 0) .neqv. (x /= 0))
    case default
      if (o == O_MINLOC) then
        take = x(1::2) < a(1::2) .or. (x(1::2) == a(1::2) .and. x(2::2) < a(2::2))
      else
        take = x(1::2) > a(1::2) .or. (x(1::2) == a(1::2) .and. x(2::2) < a(2::2))
      end if
      where (take)
        a(1::2) = x(1::2)
        a(2::2) = x(2::2)
      end where
    end select
  end subroutine

  ! Components as the bytes of the MPI datatype.
  subroutine encode(t, c, b)
    type(tdesc), intent(in) :: t
    integer(int64), intent(in) :: c(:)
    integer(int8), intent(inout) :: b(:)
    integer :: nb
    nb = size(c) * t%csize
    if (t%fam == F_LOG) then
      b(1:nb) = transfer(c /= 0, b, nb)
    else if (t%isreal .and. t%csize == 4) then
      b(1:nb) = transfer(real(c, real32), b, nb)
    else if (t%isreal .and. t%csize == 16) then
      b(1:nb) = transfer(real(c, real128), b, nb)
    else if (t%isreal) then
      b(1:nb) = transfer(real(c, real64), b, nb)
    else if (t%csize == 1) then
      b(1:nb) = transfer(int(c, int8), b, nb)
    else if (t%csize == 2) then
      b(1:nb) = transfer(int(c, int16), b, nb)
    else if (t%csize == 4) then
      b(1:nb) = transfer(int(c, int32), b, nb)
    else
      b(1:nb) = transfer(c, b, nb)
    end if
  end subroutine

  ! The reference of ranks [lo, hi) over elements [from, from + n).
  subroutine fold(t, o, s, lo, hi, from, n, a)
    type(tdesc), intent(in) :: t
    integer, intent(in) :: o, lo, hi, from, n
    integer(int64), intent(in) :: s
    integer(int64), intent(out) :: a(:)
    integer(int64), allocatable :: x(:)
    integer :: r
    allocate (x(size(a)))
    call gen(t, o, s, lo, from, n, a)
    do r = lo + 1, hi - 1
      call gen(t, o, s, r, from, n, x)
      call combine(t, o, a, x)
    end do
  end subroutine

  ! Bytes of got against the reference a; the number of the first element
  ! that differs, 0 if none.
  integer function first_bad(t, got, a)
    type(tdesc), intent(in) :: t
    integer(int8), intent(in) :: got(:)
    integer(int64), intent(in) :: a(:)
    integer(int8), allocatable :: want(:)
    integer :: nb
    nb = size(a) * t%csize
    if (t%fam == F_LOG) then
      first_bad = findloc(transfer(got(1:nb), .true., size(a)) .eqv. &
                          (a /= 0), .false., dim=1)
      return
    end if
    allocate (want(nb))
    call encode(t, a, want)
    first_bad = findloc(got(1:nb) == want, .false., dim=1)
    if (first_bad > 0) first_bad = (first_bad - 1) / esize(t) + 1
  end function

  ! A hash of the bytes, below 2^31.
  integer(int64) function hash(b)
    integer(int8), intent(in) :: b(:)
    integer :: i
    hash = 0
    do i = 1, size(b)
      hash = mod(hash * 31 + b(i) + 128, M31)
    end do
  end function

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    call mpitf_check(merge(1, 0, ok), trim(what) // c_null_char)
  end subroutine

  ! Collective k of n elements of type t under op o (per rank: blk), plain
  ! and in place (Reduce: at the root), each call with data of its own.
  subroutine one(t, o, n, k, root)
    type(tdesc), intent(in) :: t
    integer, intent(in) :: o, n, k, root
    integer(int8), allocatable :: sb(:), rb(:)
    integer(int64), allocatable :: c(:), a(:)
    integer(int64) :: h(4), hmax(4)
    integer :: cnts(p), j, ntot, nres, from, hi, es, nc, bad, rend, ip
    logical :: verify
    character(len=200) :: what, desc
    es = esize(t)
    nc = ncomp(t)
    cnts = [(blk(k, n, j), j = 0, p - 1)]
    nres = n
    ntot = n
    from = 0
    if (k == K_RS .or. k == K_RSB) then   ! my block of all ranks' blocks
      nres = blk(k, n, me)
      ntot = sum(cnts)
      from = sum(cnts(1:me))
    end if
    hi = merge(me + 1, merge(me, p, k == K_EXSCAN), k == K_SCAN)
    desc = trim(t%name) // ' ' // trim(op_names(o)) // ', count ' // itoa(n) &
           // ', root ' // itoa(root) // ':'
    verify = (k /= K_RED .or. me == root) .and. (k /= K_EXSCAN .or. me > 0)
    allocate (c(ntot * nc), a(nres * nc), sb(ntot * es), rb(ntot * es + GUARD))
    do ip = 0, 1
      seed = seed + 10   ! gen draws on seeds s .. s + 7
      call gen(t, o, seed, me, 0, ntot, c)
      call encode(t, c, sb)
      rb = SENTINEL
      if (ip == 1) rb(1:ntot * es) = sb
      ! MPICH 4.0.2's MPI_Reduce with MPI_IN_PLACE at a root other than 0
      ! crashes above 2048 bytes (it reads MPI_IN_PLACE as the root's
      ! data): there the root passes its data from sb instead
      if (ip == 1 .and. (k /= K_RED .or. (me == root .and. .not. &
          (mpich .and. root /= 0 .and. n * es > 2048)))) then
        call call_k(MPI_IN_PLACE, rb, t, o, n, k, root, cnts)
      else
        call call_k(sb, rb, t, o, n, k, root, cnts)
      end if
      made(k) = made(k) + 1
      what = trim(knames(k)) // trim(merge(' in place', '         ', ip == 1)) &
             // ': ' // desc
      if (.not. verify) cycle
      call fold(t, o, seed, 0, hi, from, nres, a)
      bad = first_bad(t, rb, a)
      call check(bad == 0, trim(what) // ' element ' // itoa(bad) // &
                 ' of ' // itoa(nres) // ' differs from the reference')
      rend = merge(ntot, nres, ip == 1) * es
      call check(all(rb(rend + 1:) == SENTINEL), trim(what) // &
                 ' bytes after the result were written')
      if (k == K_ALL) h(ip + 1) = hash(rb(1:nres * es))
    end do
    if (k == K_ALL) then   ! the same bits on every rank: max = min
      h(3:4) = -h(1:2)
      call MPI_Allreduce(h, hmax, 4, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD, ierr)
      made(K_ALL) = made(K_ALL) + 1
      call check(hmax(1) == -hmax(3) .and. hmax(2) == -hmax(4), 'Allreduce: ' &
                 // trim(desc) // ' results differ between ranks')
    end if
  end subroutine

  ! Rank j's block of a Reduce_scatter(_block): n, or for Reduce_scatter
  ! none on every third rank and n + j on the others.
  integer function blk(k, n, j)
    integer, intent(in) :: k, n, j
    blk = n
    if (k == K_RS) blk = merge(0, n + j, mod(j, 3) == 1)
  end function

  ! sbuf: the send buffer or MPI_IN_PLACE (assumed type and rank take
  ! either, and pass its address on).
  subroutine call_k(sbuf, rb, t, o, n, k, root, cnts)
    type(*), dimension(..), intent(in) :: sbuf
    integer(int8), intent(inout) :: rb(:)
    type(tdesc), intent(in) :: t
    integer, intent(in) :: o, n, k, root, cnts(:)
    select case (k)
    case (K_ALL)
      call MPI_Allreduce(sbuf, rb, n, t%dt, ops(o), MPI_COMM_WORLD, ierr)
    case (K_RED)
      call MPI_Reduce(sbuf, rb, n, t%dt, ops(o), root, MPI_COMM_WORLD, ierr)
    case (K_RSB)
      call MPI_Reduce_scatter_block(sbuf, rb, n, t%dt, ops(o), MPI_COMM_WORLD, ierr)
    case (K_RS)
      call MPI_Reduce_scatter(sbuf, rb, cnts, t%dt, ops(o), MPI_COMM_WORLD, ierr)
    case (K_SCAN)
      call MPI_Scan(sbuf, rb, n, t%dt, ops(o), MPI_COMM_WORLD, ierr)
    case default
      call MPI_Exscan(sbuf, rb, n, t%dt, ops(o), MPI_COMM_WORLD, ierr)
    end select
    call check(ierr == MPI_SUCCESS, trim(knames(k)) // ': error ' // itoa(ierr))
  end subroutine

  function itoa(i) result(s)
    integer, intent(in) :: i
    character(len=:), allocatable :: s
    character(len=12) :: buf
    write (buf, '(i0)') i
    s = trim(buf)
  end function

end program fortran_reduce
