package apikeys

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/routine"

	"petstore/internal/writegate"
)

// LastUse writes keys' last use (last_used) off the request path, through
// the node's write gate, with at most one write in flight per key: while
// SQLite's writer is busy, the requests of a key whose write waits add no
// other.
type LastUse struct {
	app    core.App
	writes writegate.Gate
	log    *slog.Logger

	mu       sync.Mutex
	inFlight map[string]bool // by key record id
}

// NewLastUse returns the last-use writer of app's keys.
func NewLastUse(app core.App, writes writegate.Gate, log *slog.Logger) *LastUse {
	return &LastUse{app: app, writes: writes, log: log, inFlight: map[string]bool{}}
}

// Record writes that k was used at now, unless k's last_used is recent
// (LastUsedStale) or a write of k's is in flight.
func (u *LastUse) Record(k *Key, now time.Time) {
	if !k.LastUsedStale(now) {
		return
	}
	u.mu.Lock()
	if u.inFlight[k.ID] {
		u.mu.Unlock()
		return
	}
	u.inFlight[k.ID] = true
	u.mu.Unlock()
	routine.FireAndForget(func() {
		defer func() {
			u.mu.Lock()
			delete(u.inFlight, k.ID)
			u.mu.Unlock()
		}()
		err := u.writes.Write(u.app, func(tx core.App) error {
			return setColumns(tx, k.ID, dbx.Params{LastUsedField: dateString(now)})
		})
		if err != nil && !errors.Is(err, writegate.ErrClosed) {
			u.log.Warn("Could not record an API key's last use", "keyId", k.ID, "error", err)
		}
	})
}
