package hooks

import (
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"

	"petstore/internal/apikeys"
	"petstore/limits"
)

// keyLedger keeps the limiter's bans and day counts on the api_keys records,
// where staff see them.
type keyLedger struct{ app core.App }

func (k keyLedger) SaveBan(keyID string, until time.Time) error {
	return apikeys.SaveBan(k.app, keyID, until)
}

func (k keyLedger) SaveDayCount(c limits.DayCount) error {
	count := apikeys.DayCount{ID: c.KeyID, Used: c.Used}
	if !c.Resets.IsZero() {
		var err error
		if count.Resets, err = types.ParseDateTime(c.Resets); err != nil {
			return err
		}
	}
	return apikeys.SaveDayCount(k.app, count)
}

func (k keyLedger) DayCounts() ([]limits.DayCount, error) {
	saved, err := apikeys.DayCounts(k.app)
	if err != nil {
		return nil, err
	}
	counts := make([]limits.DayCount, len(saved))
	for i, c := range saved {
		counts[i] = limits.DayCount{KeyID: c.ID, Used: c.Used, Resets: c.Resets.Time()}
	}
	return counts, nil
}
