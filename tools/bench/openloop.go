package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// openLoopTarget sends the mixed target's requests at a fixed rate, half of
// the mixed target's median req/s so far in the run, whatever the latency:
// a closed loop's p99 is set by its own throughput, an open loop's is what a
// client meets at a rate the server has room for. The load comes from
// vegeta's attacker (github.com/tsenart/vegeta), which starts more workers
// when the answers lag rather than wait for them, so a slow answer delays no
// later request (no coordinated omission); its Go HTTP client shares the
// machine's CPUs with the server.
const openLoopTarget = "openLoop"

// maxOpenLoopP99 is the goal for the open loop's p99, in every round.
const maxOpenLoopP99 = 5 * time.Millisecond

// runOpenLoop sends m's requests to baseURL with headers at rate a second
// for d, over at most conns connections: a request that finds them all busy
// waits for one, and its wait counts in its latency (the server bounds the
// connections of one address, and the mixed targets use conns).
func runOpenLoop(baseURL string, m mix, headers map[string]string, rate, conns int, d time.Duration) (result, error) {
	header := http.Header{}
	for k, v := range headers {
		header.Set(k, v)
	}
	jsonHeader := header.Clone()
	jsonHeader.Set("Content-Type", "application/json")
	total := 0
	for _, o := range m.ops {
		total += o.weight
	}
	opOf := map[string]int{} // method and URL: the op's index
	for i, o := range m.ops {
		for _, p := range o.paths {
			opOf[o.method+" "+baseURL+p] = i
		}
	}
	// Workers call the targeter concurrently: math/rand/v2's functions are
	// safe for that.
	targeter := func(t *vegeta.Target) error {
		i, pick := 0, rand.IntN(total)
		for pick >= m.ops[i].weight {
			pick -= m.ops[i].weight
			i++
		}
		o := m.ops[i]
		t.Method, t.URL, t.Header, t.Body = o.method, baseURL+o.paths[rand.IntN(len(o.paths))], header, nil
		if o.body != "" {
			t.Header, t.Body = jsonHeader, []byte(o.body)
		}
		return nil
	}
	// The transport's own, so that its connections are closed after the run:
	// kept open, they would count against the server's bound in the next
	// targets.
	transport := &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns}
	defer transport.CloseIdleConnections()
	attacker := vegeta.NewAttacker(vegeta.Client(&http.Client{Transport: transport, Timeout: requestTimeout}))
	latencies := make([][]time.Duration, len(m.ops))
	var r result
	start := time.Now()
	for res := range attacker.Attack(targeter, vegeta.Rate{Freq: rate, Per: time.Second}, d, openLoopTarget) {
		i, ok := opOf[res.Method+" "+res.URL]
		switch {
		case res.Error != "" && res.Code == 0:
			r.Read++
		case !ok || int(res.Code) != m.ops[i].want:
			r.Status++
		default:
			latencies[i] = append(latencies[i], res.Latency)
		}
	}
	elapsed := time.Since(start)
	if r.errors() > 0 {
		return r, nil // the caller reports the errors
	}
	r.DurationUS, r.ops, r.rate = elapsed.Microseconds(), map[string]opResult{}, rate
	var all []time.Duration
	for i, o := range m.ops {
		ls := latencies[i]
		slices.Sort(ls)
		r.ops[o.name] = opResult{requests: int64(len(ls)), p99US: percentile(ls, 99).Microseconds()}
		all = append(all, ls...)
	}
	slices.Sort(all)
	if r.Requests = int64(len(all)); r.Requests == 0 {
		return r, fmt.Errorf("no request was answered in %v", d)
	}
	r.P50US, r.P99US = percentile(all, 50).Microseconds(), percentile(all, 99).Microseconds()
	return r, nil
}
