package chaos

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The workload's clients, each a goroutine: creators send idempotent
// creates, readers getPet of acknowledged pets, pagers pages of the
// newest pets. Each request goes to a node in turn (followers forward).
const (
	creators = 4
	readers  = 2
	pagers   = 1
	// clientTimeout is long enough that a request queued at a paused node
	// is answered when it resumes, the stale reads a fence must prevent.
	clientTimeout = 10 * time.Second
	pageLimit     = 100
)

// create is one Idempotency-Key's create, sent again with its key until a
// 201: invoked at its first attempt, acknowledged (a 201) or not by the
// end.
type create struct {
	client   int
	key      string // the Idempotency-Key, also the pet's name
	invoked  time.Time
	acked    bool
	sent     time.Time // the acknowledged attempt's
	returned time.Time // the 201's
	node     string    // the node the 201 came through
	id       int64
	attempts int
}

// read is a getPet of one pet (page false) or a page of the pets after a
// cursor (page true), answered 200 (or 404 for a getPet).
type read struct {
	client           int
	node             string
	invoked, returns time.Time
	page             bool
	id               int64   // getPet's pet, or the page's cursor: it holds pets after it
	found            bool    // getPet: 200
	ids              []int64 // a page's pets
	last             int64   // a page's last pet when another page follows it; 0: none follows
}

// claim is one /readyz answer of a node naming itself the leader of term.
type claim struct {
	node             string
	term             int64
	invoked, returns time.Time
}

// history is what the clients and the monitor saw, in the order they saw
// it.
type history struct {
	mu      sync.Mutex
	creates []*create
	reads   []read
	claims  []claim
	answers map[string]int // answers that are not 200 or 201, by operation and status ("createPet 503"); 0: no answer
}

func (h *history) count(what string, status int) {
	h.mu.Lock()
	h.answers[fmt.Sprintf("%s %d", what, status)]++
	h.mu.Unlock()
}

// acknowledged are the creates with a 201, oldest first.
func (h *history) acknowledged() []*create {
	h.mu.Lock()
	defer h.mu.Unlock()
	var acks []*create
	for _, c := range h.creates {
		if c.acked {
			acks = append(acks, c)
		}
	}
	return acks
}

// firstAckAfter is the time of the first 201 to an attempt sent after t.
func (h *history) firstAckAfter(t time.Time) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var first time.Time
	for _, c := range h.creates {
		if c.acked && c.sent.After(t) && (first.IsZero() || c.returned.Before(first)) {
			first = c.returned
		}
	}
	return first, !first.IsZero()
}

// workload runs the clients until stop is closed.
type workload struct {
	c    *cluster
	h    *history
	stop chan struct{}
	wg   sync.WaitGroup
	http *http.Client
}

func startWorkload(c *cluster, h *history, seed uint64) *workload {
	w := &workload{c: c, h: h, stop: make(chan struct{}), http: &http.Client{Timeout: clientTimeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	client := 0
	for range creators {
		w.run(client, seed, w.creator)
		client++
	}
	for range readers {
		w.run(client, seed, w.reader)
		client++
	}
	for range pagers {
		w.run(client, seed, w.pager)
		client++
	}
	w.wg.Add(1)
	go w.monitor()
	return w
}

func (w *workload) run(client int, seed uint64, f func(client int, rng *rand.Rand)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f(client, rand.New(rand.NewPCG(seed, uint64(client))))
	}()
}

func (w *workload) halt() {
	close(w.stop)
	w.wg.Wait()
	w.http.CloseIdleConnections()
}

func (w *workload) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// pause waits d, or less when the workload stops.
func (w *workload) pause(d time.Duration) {
	select {
	case <-w.stop:
	case <-time.After(d):
	}
}

// send sends a request to node n and returns its status (0: no answer or a
// body cut short), body and headers.
func (w *workload) send(n *node, method, path string, body []byte, header ...string) (int, []byte, http.Header) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, n.URL()+path, rd)
	if err != nil {
		return 0, nil, nil
	}
	req.Header.Set("Authorization", "Bearer "+w.c.apiKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil
	}
	return resp.StatusCode, data, resp.Header
}

// creator creates pets one after another, each with an Idempotency-Key
// sent again, to the next node, until a 201.
func (w *workload) creator(client int, rng *rand.Rand) {
	for seq := 0; !w.stopped(); seq++ {
		key := fmt.Sprintf("c%d-%d", client, seq)
		body := fmt.Appendf(nil, `{"name":%q,"categoryId":1}`, key)
		c := &create{client: client, key: key, invoked: time.Now()}
		w.h.mu.Lock()
		w.h.creates = append(w.h.creates, c)
		w.h.mu.Unlock()
		for try := 0; !w.stopped(); try++ {
			n := w.c.nodes[(client+seq+try)%len(w.c.nodes)]
			sent := time.Now()
			status, data, _ := w.send(n, http.MethodPost, "/v1/pets", body, "Idempotency-Key", key)
			returned := time.Now()
			var pet struct{ ID int64 }
			if status == http.StatusCreated && json.Unmarshal(data, &pet) == nil {
				w.h.mu.Lock()
				c.acked, c.sent, c.returned, c.node, c.id, c.attempts = true, sent, returned, n.Name, pet.ID, try+1
				w.h.mu.Unlock()
				break
			}
			w.h.count("createPet", status)
			w.pause(time.Duration(10+rng.IntN(20)) * time.Millisecond)
		}
		w.pause(time.Duration(rng.IntN(10)) * time.Millisecond)
	}
}

// reader reads acknowledged pets, the newest more often.
func (w *workload) reader(client int, rng *rand.Rand) {
	for i := 0; !w.stopped(); i++ {
		w.h.mu.Lock()
		var id int64
		if acks := w.h.creates; len(acks) > 0 {
			// Half from the newest 50 creates, half from all.
			from := 0
			if rng.IntN(2) == 0 {
				from = max(0, len(acks)-50)
			}
			if c := acks[from+rng.IntN(len(acks)-from)]; c.acked {
				id = c.id
			}
		}
		w.h.mu.Unlock()
		if id == 0 {
			w.pause(10 * time.Millisecond)
			continue
		}
		n := w.c.nodes[(client+i)%len(w.c.nodes)]
		r := read{client: client, node: n.Name, id: id, invoked: time.Now()}
		status, _, _ := w.send(n, http.MethodGet, "/v1/pets/"+strconv.FormatInt(id, 10), nil)
		r.returns = time.Now()
		switch status {
		case http.StatusOK, http.StatusNotFound:
			r.found = status == http.StatusOK
			w.h.mu.Lock()
			w.h.reads = append(w.h.reads, r)
			w.h.mu.Unlock()
		default:
			w.h.count("getPet", status)
		}
		w.pause(time.Duration(5+rng.IntN(10)) * time.Millisecond)
	}
}

// petIDsPerMilli is the pets' ids per Unix millisecond (internal/pets: an
// id is the create's millisecond times 100, plus a count): a cursor made of
// a time starts the listing at the pets created from then on.
const petIDsPerMilli = 100

// pager reads the page of the pets created from the last two seconds on.
func (w *workload) pager(client int, rng *rand.Rand) {
	for i := 0; !w.stopped(); i++ {
		after := time.Now().Add(-2*time.Second).UnixMilli() * petIDsPerMilli
		cursor := base64.RawURLEncoding.EncodeToString([]byte("1:" + strconv.FormatInt(after, 10)))
		n := w.c.nodes[(client+i)%len(w.c.nodes)]
		r := read{client: client, node: n.Name, page: true, id: after, invoked: time.Now()}
		status, data, header := w.send(n, http.MethodGet, fmt.Sprintf("/v1/pets?cursor=%s&limit=%d", cursor, pageLimit), nil)
		r.returns = time.Now()
		var page []struct{ ID int64 }
		if status != http.StatusOK || json.Unmarshal(data, &page) != nil {
			w.h.count("listPets", status)
			w.pause(20 * time.Millisecond)
			continue
		}
		for _, p := range page {
			r.ids = append(r.ids, p.ID)
		}
		if header.Get("Link") != "" && len(r.ids) > 0 {
			r.last = r.ids[len(r.ids)-1]
		}
		w.h.mu.Lock()
		w.h.reads = append(w.h.reads, r)
		w.h.mu.Unlock()
		w.pause(time.Duration(20+rng.IntN(20)) * time.Millisecond)
	}
}

// monitor asks every node's /readyz, directly, every 100 ms, and records
// each answer of a node leading.
func (w *workload) monitor() {
	defer w.wg.Done()
	for !w.stopped() {
		var wg sync.WaitGroup
		for _, n := range w.c.nodes {
			wg.Go(func() {
				invoked := time.Now()
				status, body := n.Get("/readyz")
				returns := time.Now()
				var ready struct {
					Role string
					Term int64
				}
				if status == http.StatusOK && json.Unmarshal([]byte(body), &ready) == nil && ready.Role == "leader" {
					w.h.mu.Lock()
					w.h.claims = append(w.h.claims, claim{node: n.Name, term: ready.Term, invoked: invoked, returns: returns})
					w.h.mu.Unlock()
				}
			})
		}
		wg.Wait()
		w.pause(100 * time.Millisecond)
	}
}

// leader is the node that last claimed the highest term within the last
// second, or nil.
func (h *history) leader(c *cluster) *node {
	h.mu.Lock()
	defer h.mu.Unlock()
	var best *claim
	for i := len(h.claims) - 1; i >= 0; i-- {
		cl := &h.claims[i]
		if time.Since(cl.returns) > time.Second {
			break
		}
		if best == nil || cl.term > best.term {
			best = cl
		}
	}
	if best == nil {
		return nil
	}
	for _, n := range c.nodes {
		if n.Name == best.node {
			return n
		}
	}
	return nil
}

// describe lists the answers counted, for the report.
func (h *history) describe() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var parts []string
	for what, n := range h.answers {
		parts = append(parts, fmt.Sprintf("%s: %d", what, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
