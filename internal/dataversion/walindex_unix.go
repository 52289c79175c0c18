//go:build unix

package dataversion

import (
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// walIndex is a read-only view of the header of a database's WAL index:
// the start of its "-shm" file, which SQLite maps in every process that has
// the database open in WAL mode, and which a writer's commit rewrites
// (https://sqlite.org/walformat.html#the_wal_index_file_format).
type walIndex struct{ mem []byte }

// walIndexHeaderSize is the first copy of the header, the one a commit
// writes last, and its second copy: the part of the file mapped.
const walIndexHeaderSize = 96

// openWALIndex maps the header of dbPath's WAL index. The caller keeps a
// connection to the database open for as long as it reads the header: SQLite
// truncates the file only when it opens the database with no connection
// open anywhere, and reading a truncated mapping would fault.
func openWALIndex(dbPath string) (*walIndex, error) {
	f, err := os.Open(dbPath + "-shm")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() < walIndexHeaderSize {
		return nil, errors.New("the WAL index has no header yet")
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, walIndexHeaderSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	x := &walIndex{mem: mem}
	// Unmapped once no caller can read it any more, not at the Watch's
	// Close, which a read under way may outlast.
	runtime.AddCleanup(x, func(mem []byte) { _ = syscall.Munmap(mem) }, mem)
	return x, nil
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
