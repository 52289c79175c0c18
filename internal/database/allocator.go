package database

import (
	"sync"

	"modernc.org/libc"
)

// holdAllocatorPages keeps heldPagesPerClass pages of each of the C
// allocator's size classes mapped for the life of the process, by holding
// one block in each.
//
// SQLite as modernc.org/sqlite builds it allocates through modernc.org/libc,
// whose allocator (modernc.org/memory) carves 64 KiB pages into slots of one
// size class (16 B to 16 KiB) and unmaps a page as soon as its last slot is
// freed. Work that allocates and frees past the pages that stay in use maps
// a page and unmaps it each time: a create's savepoint, its statement
// journal and its triggers' frames did, several times per create. munmap is
// a system call that also interrupts every other CPU running the process
// (to drop the page from its TLB), so the writer slowed the readers: in a
// CPU profile of the benchmark's mixed target, mapping and unmapping took
// 8 % with one page held per class and nothing with eight, the writer's
// transactions 6 % of the CPU instead of 16 to 19 %. Eight pages of the
// eleven classes are 5.5 MiB, resident once used.
var holdAllocatorPages = sync.OnceFunc(func() {
	tls := libc.NewTLS()
	defer tls.Close()
	for log := minSizeClassLog; log <= maxSizeClassLog; log++ {
		size := 1 << log
		perPage := (allocatorPage - allocatorPageHeader) / size
		blocks := make([]uintptr, 0, heldPagesPerClass*perPage)
		for range heldPagesPerClass * perPage {
			blocks = append(blocks, libc.Xmalloc(tls, libc.Tsize_t(size)))
		}
		held := make(map[uintptr]bool, heldPagesPerClass)
		for _, b := range blocks {
			if page := b &^ (allocatorPage - 1); !held[page] {
				held[page] = true // never freed
				continue
			}
			libc.Xfree(tls, b)
		}
	}
})

// The allocator's pages, their header, and its size classes: 1<<4 to 1<<14
// bytes.
const (
	allocatorPage       = 64 << 10
	allocatorPageHeader = 32
	minSizeClassLog     = 4
	maxSizeClassLog     = 14
	heldPagesPerClass   = 8
)
