package hooks_test

import (
	"fmt"
	"sync"
	"testing"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/testkit/apptest"
)

// Two instances on one data directory write at once, each in transactions
// that read before they write (a key's plan, then the key and its audit
// record): no write fails with "database is locked", as a transaction that
// began reading would when the other instance committed in between
// (SQLite's SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out).
func TestInstancesWriteAtOnce(t *testing.T) {
	a := apptest.Start(t, "")
	b := apptest.Start(t, a.Dir)
	const each = 60
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for i := range each {
		for _, s := range []*apptest.Server{a, b} {
			wg.Go(func() {
				if _, _, err := apikeys.Create(s.App, apikeys.NewKey{Plan: "free", Name: fmt.Sprint("key ", i)}, audit.CLI); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := a.CountRecords(t, "api_keys"); n != 2*each {
		t.Errorf("%d keys, want %d", n, 2*each)
	}
}
