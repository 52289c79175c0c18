package idempotency_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// BenchmarkCreatePet measures a whole POST /v1/pets over loopback, one at a
// time, side by side: without an Idempotency-Key, with a new key each time,
// and a replay of one key.
//
//	go test -run '^$' -bench CreatePet -count 5 ./idempotency/
func BenchmarkCreatePet(b *testing.B) {
	s := apptest.Start(b, "")
	key := s.NewKey(b, apikeys.NewKey{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
	client := &http.Client{} // not the harness's, which checks the contract and would be measured too
	send := func(b *testing.B, idemKey string) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/pets", strings.NewReader(`{"name": "Rex", "categoryId": 1}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.Run("no-key", func(b *testing.B) {
		for b.Loop() {
			send(b, "")
		}
	})
	b.Run("new-key", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			send(b, fmt.Sprint("bench-", i))
		}
	})
	b.Run("replay", func(b *testing.B) {
		send(b, "replayed")
		for b.Loop() {
			send(b, "replayed")
		}
	})
}
