package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/api"
	"petstore/internal/cluster"
	"petstore/internal/clustergate"
	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

// A pause between the fence's check before the commit and the commit's end
// lets the commit land after the lease: the create is committed, and set
// aside with the copy when the node follows, but never acknowledged.
func TestACreateCommittedAfterTheFenceClosedIsNotAcknowledged(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("cluster-sync=%v", sync), func(t *testing.T) {
			s := apptest.Start(t, "")
			p, advance := cluster.LeadingOnAFakeClock(cluster.Config{TTL: testTTL, Sync: sync})
			writer, err := pets.StartWriter(s.App)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(writer.Stop)
			// As the service wires it (hooks): the fence checked inside the
			// transaction, and again once it has committed.
			writer.OnInserted(func(core.App, []pets.Row) error {
				if !p.Node.MayWrite() {
					return api.ErrNotLeader
				}
				return nil
			})
			var pause atomic.Bool
			writer.OnCommitted(func(int, time.Duration) {
				if pause.Load() { // the process stops after COMMIT, for 3 TTLs
					advance(3 * testTTL)
				}
			})
			writer.OnAcknowledge(clustergate.Acknowledge(p))

			if _, err := writer.Create(context.Background(), pets.NewPet{Name: "InTime", CategoryID: 1}); err != nil {
				t.Fatalf("a create committed while the fence held: %v", err)
			}
			pause.Store(true)
			if pet, err := writer.Create(context.Background(), pets.NewPet{Name: "Late", CategoryID: 1}); !errors.Is(err, api.ErrNotLeader) {
				t.Fatalf("a create whose commit ended after the lease: %+v, error %v; want ErrNotLeader, no 201", pet, err)
			}
			if n := s.CountRecords(t, "pets"); n != 2 {
				t.Errorf("%d pets stored, want both: the late one committed, unanswered", n)
			}
			if _, err := writer.Create(context.Background(), pets.NewPet{Name: "Fenced", CategoryID: 1}); !errors.Is(err, api.ErrNotLeader) {
				t.Errorf("a create after the lease: error %v, want ErrNotLeader", err)
			}
		})
	}
}
