package hooks

import (
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/usage"
	"petstore/limits"
)

// keyLedger keeps the limiter's bans on the api_keys records, where staff see
// them, and reads what keys were served each day from their usage history,
// the one record of it: what staff see, what `keys list` shows, and what a
// day window starts from after a restart.
type keyLedger struct {
	app     core.App
	history *usage.Recorder
	service *Service // counts bans in its metrics
}

var _ limits.Ledger = keyLedger{}

func (k keyLedger) SaveBan(keyID string, until time.Time) error {
	if k.service.bans != nil {
		k.service.bans()
	}
	return apikeys.SaveBan(k.app, keyID, until)
}

func (k keyLedger) Served(day time.Time) (map[string]int64, error) {
	counts, err := k.history.Today(day)
	if err != nil {
		return nil, err
	}
	served := make(map[string]int64, len(counts))
	for id, c := range counts {
		served[id] = c.Served()
	}
	return served, nil
}
