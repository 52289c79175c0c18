package hooks_test

import (
	"testing"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// A restart terminates the app before the command's end terminates it
// again: the whole service, every part started, takes both without a panic
// (the usage history's Close, run twice, closed a closed channel).
func TestTerminateTwice(t *testing.T) {
	apptest.Slow(t)
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free"})
	s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	err := s.App.OnTerminate().Trigger(&core.TerminateEvent{App: s.App, IsRestart: true}, func(e *core.TerminateEvent) error {
		return nil
	})
	if err != nil {
		t.Fatalf("terminate for a restart: %v", err)
	}
	s.Stop(t) // terminates again, as the command's end does
}
