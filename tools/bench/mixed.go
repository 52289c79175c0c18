package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// mix is a mixed target: each request is one of ops, picked at random with
// the ops' weights.
//
// wrk times all requests together, so a mixed target's load comes from this
// process: conns goroutines, each on a keep-alive connection of its own,
// sending its next request when the previous one is answered, as wrk does.
// Like wrk, they write requests prepared in advance and read just enough of
// each response to find its end (net/http's client costs about as much CPU
// per request as the server's /v1 handling, which on two CPUs would take
// the server's share).
type mix struct {
	ops []op
}

// op is one kind of request of a mix.
type op struct {
	name   string
	weight int // out of the mix's total
	method string
	paths  []string // one picked at random per request
	body   string
	want   int // the status every answer must have
}

// opResult is what one kind of request of a mix measured in one run.
type opResult struct {
	requests int64
	p99US    int64
}

// runMix sends m's requests to baseURL with headers over conns connections
// for d, and measures every request's latency.
func runMix(baseURL string, m mix, headers map[string]string, conns int, d time.Duration) (result, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return result{}, err
	}
	requests, total := m.prepare(u.Host, headers)
	latencies := make([][][]time.Duration, conns) // [worker][op], merged at the end
	errs := make([]error, conns)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range conns {
		latencies[w] = make([][]time.Duration, len(m.ops))
		rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(w)))
		wg.Go(func() {
			c := &client{addr: u.Host}
			defer c.close()
			for time.Now().Before(deadline) {
				i := m.pick(rng, total)
				o, req := m.ops[i], requests[i][rng.IntN(len(requests[i]))]
				began := time.Now()
				status, body, err := c.do(req)
				if err == nil && status != o.want {
					err = fmt.Errorf("status %d, want %d: %s", status, o.want, body)
				}
				if err != nil {
					errs[w] = fmt.Errorf("%s: %w", o.name, err)
					return
				}
				latencies[w][i] = append(latencies[w][i], time.Since(began))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	return m.result(latencies, elapsed)
}

// prepare makes m's requests for host with headers, per op and per path,
// and returns them with the ops' total weight.
func (m mix) prepare(host string, headers map[string]string) (requests [][][]byte, total int) {
	requests = make([][][]byte, len(m.ops))
	for i, o := range m.ops {
		total += o.weight
		for _, path := range o.paths {
			requests[i] = append(requests[i], rawRequest(host, o, path, headers))
		}
	}
	return requests, total
}

// pick is the index of an op picked at random with the ops' weights, of
// total weight total.
func (m mix) pick(rng *rand.Rand, total int) int {
	i, pick := 0, rng.IntN(total)
	for pick >= m.ops[i].weight {
		pick -= m.ops[i].weight
		i++
	}
	return i
}

// result is what latencies, [worker][op], measured in elapsed.
func (m mix) result(latencies [][][]time.Duration, elapsed time.Duration) (result, error) {
	var all []time.Duration
	r := result{DurationUS: elapsed.Microseconds(), ops: map[string]opResult{}}
	for i, o := range m.ops {
		var ls []time.Duration
		for w := range latencies {
			ls = append(ls, latencies[w][i]...)
		}
		slices.Sort(ls)
		r.ops[o.name] = opResult{requests: int64(len(ls)), p99US: percentile(ls, 99).Microseconds()}
		all = append(all, ls...)
	}
	slices.Sort(all)
	r.Requests = int64(len(all))
	if r.Requests == 0 {
		return result{}, fmt.Errorf("no request was answered in %v", elapsed.Round(time.Millisecond))
	}
	r.P50US, r.P99US = percentile(all, 50).Microseconds(), percentile(all, 99).Microseconds()
	return r, nil
}

// percentile is the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*p + 99) / 100 // ceil(n·p/100), 1-based
	return sorted[max(rank, 1)-1]
}

// rawRequest is o's request for path as HTTP/1.1 bytes.
func rawRequest(host string, o op, path string, headers map[string]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", o.method, path, host)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range headers {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "%s: %s\r\n", k, headers[k])
	}
	if o.body != "" {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(o.body))
	}
	b.WriteString("\r\n" + o.body)
	return b.Bytes()
}

// client is one keep-alive connection, opened when first needed and again
// after the server closes it.
type client struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
	body []byte
}

// requestTimeout bounds each exchange, as wrk's --timeout does.
const requestTimeout = 10 * time.Second

// do sends req and reads the whole response: its status and body (valid
// until the next call).
func (c *client) do(req []byte) (int, []byte, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, requestTimeout)
		if err != nil {
			return 0, nil, err
		}
		c.conn, c.r = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return 0, nil, err
	}
	if _, err := c.conn.Write(req); err != nil {
		return 0, nil, err
	}
	status, keepAlive, err := c.read()
	if err != nil || !keepAlive {
		c.close()
	}
	return status, c.body, err
}

// read reads one response: a status line, headers, and a body of
// Content-Length bytes or in chunks.
func (c *client) read() (status int, keepAlive bool, err error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	length, chunked, keepAlive := -1, false, true
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, false, fmt.Errorf("malformed Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			keepAlive = !bytes.EqualFold(value, []byte("close"))
		}
	}
	c.body = c.body[:0]
	switch {
	case chunked:
		err = c.readChunks()
	case length >= 0:
		err = c.readBody(length)
	default:
		return 0, false, errors.New("a response without Content-Length or chunks")
	}
	return status, keepAlive, err
}

func (c *client) readBody(n int) error {
	start := len(c.body)
	c.body = slices.Grow(c.body, n)[:start+n]
	_, err := io.ReadFull(c.r, c.body[start:])
	return err
}

func (c *client) readChunks() error {
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 32)
		if err != nil {
			return fmt.Errorf("malformed chunk size %q", line)
		}
		if n > 0 {
			if err := c.readBody(int(n)); err != nil {
				return err
			}
		}
		// The CRLF after the chunk, or after the last chunk (no trailers).
		if _, err := c.r.Discard(2); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

func (c *client) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
