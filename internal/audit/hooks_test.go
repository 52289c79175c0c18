package audit_test

import (
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/testkit/apptest"
)

// The nightly prune removes the audit records older than --audit-retention
// and keeps the others; with 0, it keeps every record.
func TestAuditRetentionPrunes(t *testing.T) {
	for _, c := range []struct {
		retention time.Duration
		kept      int
	}{{24 * time.Hour, 1}, {0, 2}} {
		s := apptest.StartWith(t, apptest.Config{AuditRetention: c.retention})
		old := s.KeyRecord(t, s.NewKey(t, apikeys.NewKey{})).Id
		s.NewKey(t, apikeys.NewKey{})
		twoDaysAgo := time.Now().Add(-48 * time.Hour).UTC().Format("2006-01-02 15:04:05.000Z")
		_, err := s.App.DB().Update(audit.Collection, dbx.Params{audit.CreatedField: twoDaysAgo}, dbx.HashExp{audit.KeyField: old}).Execute()
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		for _, job := range s.App.Cron().Jobs() {
			if job.Id() == "petstoreAuditPrune" {
				job.Run()
				ran = true
			}
		}
		if !ran {
			t.Fatal("no petstoreAuditPrune job")
		}
		if n := s.CountRecords(t, audit.Collection); n != int64(c.kept) {
			t.Errorf("retention %v: %d records kept, want %d", c.retention, n, c.kept)
		}
	}
}
