// Command loadtest drives mixed listPets/createPet/getPet traffic from many
// concurrent clients against the real petstore binary on a loopback port,
// with a fresh data directory and an enterprise key whose quotas never bind.
// It fails (exit 1) on any 5xx, transport error or unexpected status, or if a
// created pet cannot be read back afterwards, and prints latency percentiles
// and throughput per operation.
//
//	go run ./tools/loadtest [-clients 100] [-duration 20s] [-max-requests 2000000]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"petstore/internal/pets"
	"petstore/testkit/realserver"
)

const (
	opList   = "list"
	opCreate = "create"
	opGet    = "get"
)

func main() {
	clients := flag.Int("clients", 100, "concurrent clients")
	duration := flag.Duration("duration", 20*time.Second, "how long to send traffic")
	maxRequests := flag.Int64("max-requests", 2_000_000, "stop after this many requests, even before -duration")
	flag.Parse()
	if err := run(*clients, *duration, *maxRequests); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(clients int, duration time.Duration, maxRequests int64) error {
	tmp, err := os.MkdirTemp("", "petstore-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := realserver.Build(tmp)
	if err != nil {
		return err
	}
	dir := filepath.Join(tmp, "pb_data")
	key, _, err := realserver.CreateKey(bin, dir, "--plan", "enterprise", "--per-minute", "100000000", "--per-day", "1000000000")
	if err != nil {
		return err
	}
	p, err := realserver.Start(bin, dir)
	if err != nil {
		return err
	}
	defer p.Kill()

	fmt.Printf("%d clients for %v (at most %d requests) against %s\n", clients, duration, maxRequests, p.URL)
	l := &load{p: p, key: key, created: map[int64]pets.Pet{}}
	started := time.Now()
	deadline := started.Add(duration)
	var budget atomic.Int64
	budget.Store(maxRequests)
	var wg sync.WaitGroup
	results := make([]*clientResult, clients)
	for i := range clients {
		results[i] = &clientResult{latencies: map[string][]time.Duration{}, statuses: map[string]int{}}
		rng := rand.New(rand.NewPCG(uint64(started.UnixNano()), uint64(i)))
		wg.Go(func() {
			for time.Now().Before(deadline) && budget.Add(-1) >= 0 {
				l.step(rng, results[i])
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(started)

	total := &clientResult{latencies: map[string][]time.Duration{}, statuses: map[string]int{}}
	for _, r := range results {
		total.merge(r)
	}
	total.print(elapsed)

	lost := l.verifyCreated()
	fmt.Printf("created %d pets, %d not readable afterwards\n", len(l.created), lost)
	stopErr := p.Stop()

	switch {
	case total.failures > 0:
		return fmt.Errorf("%d failed requests (5xx, transport errors or unexpected statuses)", total.failures)
	case lost > 0:
		return fmt.Errorf("%d acknowledged creates lost", lost)
	case stopErr != nil:
		return stopErr
	}
	return nil
}

// load is the shared state of the clients.
type load struct {
	p   *realserver.Process
	key string

	mu      sync.Mutex
	created map[int64]pets.Pet
	ids     []int64
}

type clientResult struct {
	latencies map[string][]time.Duration
	statuses  map[string]int // "op status"
	failures  int
	firstFail string
}

var statuses = []string{"available", "pending", "sold"}

// step sends one request: half lists, 30 % creates, 20 % gets.
func (l *load) step(rng *rand.Rand, res *clientResult) {
	op, path, want := opList, "", http.StatusOK
	var body []byte
	n, id := rng.IntN(10), int64(0)
	if n >= 8 {
		id = l.randomID(rng)
	}
	switch {
	case n < 5:
		path = fmt.Sprintf("/v1/pets?limit=%d", 1+rng.IntN(100))
		if rng.IntN(2) == 0 {
			path += "&status=" + statuses[rng.IntN(len(statuses))]
		}
	case n < 8 || id == 0:
		op, path, want = opCreate, "/v1/pets", http.StatusCreated
		body, _ = json.Marshal(map[string]any{
			"name": fmt.Sprintf("load-%d", rng.Int64()), "categoryId": 1 + rng.Int64N(1000), "status": statuses[rng.IntN(len(statuses))],
		})
	default:
		op, path = opGet, fmt.Sprint("/v1/pets/", id)
	}

	method := http.MethodGet
	if op == opCreate {
		method = http.MethodPost
	}
	t0 := time.Now()
	status, resp, err := l.p.Do(context.Background(), method, path, l.key, body)
	res.latencies[op] = append(res.latencies[op], time.Since(t0))
	res.statuses[fmt.Sprint(op, " ", status)]++
	if err != nil || status != want {
		res.fail(fmt.Sprintf("%s %s: %d %v %s", method, path, status, err, resp))
		return
	}
	if op == opCreate {
		var got pets.Pet
		if err := json.Unmarshal(resp, &got); err != nil || got.ID == 0 {
			res.fail(fmt.Sprintf("create answered %s", resp))
			return
		}
		l.mu.Lock()
		l.created[got.ID] = got
		l.ids = append(l.ids, got.ID)
		l.mu.Unlock()
	}
}

// randomID is a created pet's id, or 0 before the first create.
func (l *load) randomID(rng *rand.Rand) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ids) == 0 {
		return 0
	}
	return l.ids[rng.IntN(len(l.ids))]
}

// verifyCreated reads back every created pet and counts those missing or
// different.
func (l *load) verifyCreated() int {
	ids := make(chan int64)
	var lost atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for id := range ids {
				status, resp, err := l.p.Do(context.Background(), http.MethodGet, fmt.Sprint("/v1/pets/", id), l.key, nil)
				var got pets.Pet
				if err != nil || status != http.StatusOK || json.Unmarshal(resp, &got) != nil || got != l.created[id] {
					fmt.Fprintf(os.Stderr, "pet %d: %d %v %s, created as %+v\n", id, status, err, resp, l.created[id])
					lost.Add(1)
				}
			}
		})
	}
	for id := range l.created {
		ids <- id
	}
	close(ids)
	wg.Wait()
	return int(lost.Load())
}

func (r *clientResult) fail(what string) {
	if r.failures == 0 {
		r.firstFail = what
	}
	r.failures++
}

func (r *clientResult) merge(o *clientResult) {
	for op, ls := range o.latencies {
		r.latencies[op] = append(r.latencies[op], ls...)
	}
	for s, n := range o.statuses {
		r.statuses[s] += n
	}
	if r.failures == 0 && o.failures > 0 {
		r.firstFail = o.firstFail
	}
	r.failures += o.failures
}

func (r *clientResult) print(elapsed time.Duration) {
	fmt.Printf("%-7s %8s %9s %9s %9s %9s %9s\n", "op", "requests", "req/s", "p50", "p90", "p99", "max")
	var all []time.Duration
	for _, op := range []string{opList, opCreate, opGet} {
		ls := r.latencies[op]
		all = append(all, ls...)
		printRow(op, ls, elapsed)
	}
	printRow("all", all, elapsed)
	keys := make([]string, 0, len(r.statuses))
	for s := range r.statuses {
		keys = append(keys, s)
	}
	slices.Sort(keys)
	for _, s := range keys {
		fmt.Printf("  %s: %d\n", s, r.statuses[s])
	}
	if r.failures > 0 {
		fmt.Printf("%d failures; first: %s\n", r.failures, r.firstFail)
	}
}

func printRow(op string, ls []time.Duration, elapsed time.Duration) {
	if len(ls) == 0 {
		fmt.Printf("%-7s %8d\n", op, 0)
		return
	}
	slices.Sort(ls)
	at := func(q float64) time.Duration { return ls[int(q*float64(len(ls)-1))].Round(10 * time.Microsecond) }
	fmt.Printf("%-7s %8d %9.0f %9v %9v %9v %9v\n", op, len(ls), float64(len(ls))/elapsed.Seconds(),
		at(0.50), at(0.90), at(0.99), ls[len(ls)-1].Round(10*time.Microsecond))
}
