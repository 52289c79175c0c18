package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// A cluster node whose fence is closed answers nothing from its copy: reads
// go to the gate (elsewhere) as writes do; the health checks stay its own.
func TestFenceTurnsAwayReadsAsWellAsWrites(t *testing.T) {
	var open atomic.Bool
	open.Store(true)
	var turnedAway atomic.Int64
	elsewhere := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		turnedAway.Add(1)
		// As the cluster's gate answers (clustergate): the headers every
		// /v1 answer carries, this node's own.
		h := w.Header()
		h.Set("Retry-After", "1")
		h.Set("X-RateLimit-Limit", "0")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Unix()+1, 10))
		api.WriteError(w, http.StatusServiceUnavailable, api.CodeNotLeader, "This node cannot prove that it leads the cluster now; retry shortly.")
	})
	s := apptest.StartWith(t, apptest.Config{Middleware: api.Fence(open.Load, elsewhere)})
	key := s.NewKey(t, apikeys.NewKey{})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	if r := s.Do(t, http.MethodGet, fmt.Sprint("/v1/pets/", pet.ID), key, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("getPet with the fence open: %d %s", r.StatusCode, r.Body)
	}

	open.Store(false)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, fmt.Sprint("/v1/pets/", pet.ID)},
		{http.MethodGet, "/v1/pets"},
		{http.MethodHead, "/v1/pets"},
		{http.MethodPost, "/v1/pets"},
		{http.MethodGet, "/api/collections/pets/records"},
		{http.MethodGet, "/"},
	} {
		var body any
		if req.method == http.MethodPost {
			body = map[string]any{"name": "Rex", "categoryId": 1}
		}
		before := turnedAway.Load()
		r := s.Do(t, req.method, req.path, key, body)
		if r.StatusCode != http.StatusServiceUnavailable || turnedAway.Load() != before+1 || r.Header.Get("Retry-After") != "1" {
			t.Errorf("%s %s with the fence closed: %d %s, want the gate's 503", req.method, req.path, r.StatusCode, r.Body)
		}
	}
	if r := s.Do(t, http.MethodGet, "/healthz", "", nil); r.StatusCode != http.StatusOK {
		t.Errorf("/healthz with the fence closed: %d %s", r.StatusCode, r.Body)
	}
	before := turnedAway.Load()
	if s.Do(t, http.MethodGet, "/readyz", "", nil); turnedAway.Load() != before {
		t.Error("/readyz went to the gate: the node's own readiness is not said")
	}
}
