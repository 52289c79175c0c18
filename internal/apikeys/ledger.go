package apikeys

import (
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/limits"
	"petstore/internal/usage"
)

// Ledger is the rate limiter's ledger (limits.Ledger): it keeps the
// limiter's bans on the api_keys records, where staff see them, and reads
// what keys were served each day from their usage history, the one record
// of it: what staff see, what `keys list` shows, and what a day window
// starts from after a restart.
type Ledger struct {
	App     core.App
	History *usage.Recorder
	// Banned, when set, counts each ban saved (the metrics).
	Banned func()
}

// SaveBan keeps keyID banned until then.
func (k Ledger) SaveBan(keyID string, until time.Time) error {
	if k.Banned != nil {
		k.Banned()
	}
	return SaveBan(k.App, keyID, until)
}

// Served is what each key was served on day and, for each customer whose
// keys count in its windows, what those keys were served: the sum the
// customer's day window starts from (as of now's plans and keys).
func (k Ledger) Served(day time.Time) (map[string]int64, error) {
	counts, err := k.History.Today(day)
	if err != nil {
		return nil, err
	}
	served := make(map[string]int64, len(counts))
	for id, c := range counts {
		served[id] = c.Admitted()
	}
	var shared []struct {
		Key      string `db:"id"`
		Customer string `db:"customer"`
	}
	if err := k.App.DB().NewQuery(perCustomerKeysSQL).All(&shared); err != nil {
		return nil, err
	}
	for _, s := range shared {
		if n := served[s.Key]; n > 0 {
			served[limits.CustomerWindows(s.Customer)] += n
		}
	}
	return served, nil
}
