package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"time"
)

// openLoopTarget sends the mixed target's requests at a fixed rate, half of
// the mixed target's median req/s so far in the run, whatever the latency:
// a closed loop's p99 is set by its own throughput, an open loop's is what a
// client meets at a rate the server has room for. Each request has a time
// it is due, one every 1/rate seconds from the start, and its latency runs
// from then: a request sent late, because the connections were all busy or
// the sender was, counts its delay (no coordinated omission, as in wrk2).
// It sends as the mixed targets do (mixed.go): prepared requests on
// keep-alive connections, a fraction of the CPU of Go's HTTP client, which
// shares the machine's CPUs with the server; and it picks a connection as a
// client's pool does (pool).
const openLoopTarget = "openLoop"

// maxOpenLoopP99 is the goal for the open loop's p99, in every round.
const maxOpenLoopP99 = 5 * time.Millisecond

// due is one request of an open loop and the time it is due.
type due struct {
	at  time.Time
	op  int
	req []byte
}

// runOpenLoop sends m's requests to baseURL with headers at rate a second
// for d, over at most conns connections: a request due while they are all
// busy waits for one, and its wait counts in its latency (the server bounds
// the connections of one address, and the mixed targets use conns).
func runOpenLoop(baseURL string, m mix, headers map[string]string, rate, conns int, d time.Duration) (result, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return result{}, err
	}
	requests, total := m.prepare(u.Host, headers)
	n := int(d.Seconds() * float64(rate))
	if n < 1 {
		return result{}, fmt.Errorf("a rate of %d a second sends nothing in %v", rate, d)
	}
	p := &pool{}
	latencies := make([][][]time.Duration, conns) // [worker][op], merged at the end
	errs := make([]error, conns)
	var wg sync.WaitGroup
	for w := range conns {
		latencies[w] = make([][]time.Duration, len(m.ops))
		next := make(chan due, 1)
		wg.Go(func() {
			c := &client{addr: u.Host}
			defer c.close()
			for q, ok := p.done(next); ok; q, ok = p.done(next) {
				o := m.ops[q.op]
				status, body, err := c.do(q.req)
				if err == nil && status != o.want {
					err = fmt.Errorf("status %d, want %d: %s", status, o.want, body)
				}
				if err != nil {
					errs[w] = fmt.Errorf("%s: %w", o.name, err)
					p.fail()
					return
				}
				latencies[w][q.op] = append(latencies[w][q.op], time.Since(q.at))
			}
		})
	}

	// The schedule: every request due by now is sent, then the sender
	// sleeps until the next one is due.
	interval := time.Second / time.Duration(rate)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	start := time.Now()
	for i := 0; i < n; {
		at := start.Add(time.Duration(i) * interval)
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		for now := time.Now(); i < n && !at.After(now); at = start.Add(time.Duration(i) * interval) {
			op := m.pick(rng, total)
			p.send(due{at: at, op: op, req: requests[op][rng.IntN(len(requests[op]))]})
			i++
		}
	}
	p.close()
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	r, err := m.result(latencies, elapsed)
	r.rate = rate
	return r, err
}

// pool hands each due request to the connection that became idle last, as
// a client's connection pool does (Go's, for one), and keeps the requests
// due while every connection is busy, in order, for the first one done.
type pool struct {
	mu      sync.Mutex
	idle    []chan due // a stack: the last one idle on top
	backlog []due
	closed  bool // nothing more will be sent
}

// send hands q to an idle connection, or keeps it for the next one done.
func (p *pool) send(q due) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		next := p.idle[n-1]
		p.idle = p.idle[:n-1]
		next <- q
		return
	}
	p.backlog = append(p.backlog, q)
}

// done is called by a connection that has answered its request, with its
// channel: it returns the oldest request kept, or waits on next for one
// sent; false when the schedule is over.
func (p *pool) done(next chan due) (due, bool) {
	p.mu.Lock()
	if len(p.backlog) > 0 {
		q := p.backlog[0]
		p.backlog = p.backlog[1:]
		p.mu.Unlock()
		return q, true
	}
	if p.closed {
		p.mu.Unlock()
		return due{}, false
	}
	p.idle = append(p.idle, next)
	p.mu.Unlock()
	q, ok := <-next
	return q, ok
}

// close ends the schedule: the idle connections stop, the busy ones once
// the requests kept are sent.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, next := range p.idle {
		close(next)
	}
	p.idle = nil
}

// fail drops the requests kept: a connection failed, and the run with it.
func (p *pool) fail() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backlog = nil
}
