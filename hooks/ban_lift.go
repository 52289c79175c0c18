package hooks

import (
	"sync"
	"time"

	"petstore/apikeys"
)

// liftedBans notices bans lifted since this instance last saw them. A ban is
// lifted in one way, apikeys.Unban (the staff page, `petstore keys unban`),
// possibly in another process; the limiter must then also forget the key's
// recent rejections, or the key's next request, still over its minute quota,
// would ban it again at once. Each instance learns of the lift from the key
// it reads on every request.
type liftedBans struct {
	seen sync.Map // key id -> time.Time: the end of a ban this instance answered
}

// saw records that the key's request was refused for a ban until until.
func (b *liftedBans) saw(keyID string, until time.Time) {
	b.seen.Store(keyID, until)
}

// lifted reports, once, whether k's ban that this instance saw was lifted
// before its end.
func (b *liftedBans) lifted(k *apikeys.Key, now time.Time) bool {
	v, ok := b.seen.Load(k.ID)
	if !ok || k.BannedUntil.Equal(v.(time.Time)) {
		return false
	}
	b.seen.Delete(k.ID)
	// Lifted when the key is no longer banned though the ban had not ended;
	// a ban that ran out or was replaced by a new one is no lift.
	return k.BannedUntil.IsZero() && v.(time.Time).After(now)
}
