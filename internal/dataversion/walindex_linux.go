package dataversion

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// walIndex is a read-only view of the header of a database's WAL index:
// the start of its "-shm" file, which SQLite maps in every process that has
// the database open in WAL mode, and which a writer's commit rewrites
// (https://sqlite.org/walformat.html#the_wal_index_file_format).
type walIndex struct{ mem []byte }

// walIndexHeaderSize is the header's first copy, the one a commit writes
// last: the part of the file mapped.
const walIndexHeaderSize = 48

// openWALIndex maps the header of dbPath's WAL index from the descriptor
// SQLite holds open on it in this process, which it finds in /proc/self/fd.
// It opens no descriptor of its own: closing one would release every POSIX
// lock the process holds on the file, SQLite's included, and another process
// that then opened the database would take itself for the first and truncate
// the file under this one's writers. The caller keeps a connection to the
// database open while it reads the header: SQLite keeps its descriptor open
// meanwhile, and truncates the file only when a process opens the database
// with no connection open anywhere (reading a truncated mapping would fault).
func openWALIndex(dbPath string) (*walIndex, error) {
	fd, err := sqliteDescriptor(dbPath + "-shm")
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Size < walIndexHeaderSize {
		return nil, errors.New("the WAL index has no header yet")
	}
	mem, err := syscall.Mmap(fd, 0, walIndexHeaderSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	x := &walIndex{mem: mem}
	// Unmapped once no caller can read it any more, not at the Watch's
	// Close, which a read under way may outlast.
	runtime.AddCleanup(x, func(mem []byte) { _ = syscall.Munmap(mem) }, mem)
	return x, nil
}

// sqliteDescriptor is the descriptor this process holds open on path.
func sqliteDescriptor(path string) (int, error) {
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		return -1, err
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1, err
	}
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == want {
			return strconv.Atoi(e.Name())
		}
	}
	return -1, fmt.Errorf("no descriptor of %s is open", path)
}

// stamp reads the fields of the header's first copy that every commit
// changes: iChange (the count of commits, with isInit, the byte order of
// its checksums and the page size), mxFrame and nPage, and the WAL's salts,
// which change when a writer starts the WAL over. Each is loaded whole; a
// stamp read while a commit writes them is a mixture, which compares equal
// to no stamp read before that commit began.
func (x *walIndex) stamp() walStamp {
	p := unsafe.Pointer(unsafe.SliceData(x.mem))
	return walStamp{
		atomic.LoadUint64((*uint64)(unsafe.Add(p, 8))),
		atomic.LoadUint64((*uint64)(unsafe.Add(p, 16))),
		atomic.LoadUint64((*uint64)(unsafe.Add(p, 32))),
	}
}
