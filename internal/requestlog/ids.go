package requestlog

import (
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/security"
)

// logIDs gives the writer's row ids: PocketBase's shape (15 characters of
// [a-z0-9], as core.GenerateDefaultRandomId), but ascending.
//
// _logs' primary key is an index on id. With random ids, each row went to a
// random page of that index, which in a log of some 100,000 rows is not in
// the page cache: every row read a page, split pages all over the index, and
// had its page written to the WAL at commit. Ascending ids all go to the same
// few pages, and the writer's CPU per row fell by more than half.
//
// An id is 11 base-36 digits (0-9 then a-z, so that text order is number
// order) of unix seconds × idsPerSecond plus a count, then a tag of 4 random
// characters drawn when the writer starts. One writer's ids never repeat, even
// if the clock steps back. Two writers at once (another instance on the same
// data directory, or a restart within the second) share ids only if their
// tags are equal, one chance in 1.7 million; write then sees the clash and
// writes the batch again under a new tag.
type logIDs struct {
	last uint64
	tag  string
}

const (
	idsPerSecond = 36 * 36 * 36 * 36 // beyond, ids run into the next second's
	idTagLength  = 4
	idAlphabet   = "0123456789abcdefghijklmnopqrstuvwxyz"
)

func newLogIDs() *logIDs {
	ids := &logIDs{}
	ids.newTag()
	return ids
}

func (ids *logIDs) newTag() {
	ids.tag = security.RandomStringWithAlphabet(idTagLength, core.DefaultIdAlphabet)
}

func (ids *logIDs) next(now time.Time) string {
	n := max(uint64(max(now.Unix(), 0))*idsPerSecond, ids.last+1)
	ids.last = n
	var id [15]byte
	copy(id[len(id)-idTagLength:], ids.tag)
	for i := len(id) - idTagLength - 1; i >= 0; i-- {
		id[i] = idAlphabet[n%36]
		n /= 36
	}
	return string(id[:])
}
