package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// target is one request to measure: a method, one or more paths (picked at
// random per request), headers and a body; or, with mix, a mix of requests
// with the same headers (mixed.go).
type target struct {
	name    string
	method  string
	paths   []string
	headers map[string]string
	body    string
	mix     *mix
}

// result is what wrk measured of one target in one run.
type result struct {
	Requests   int64 `json:"requests"`
	DurationUS int64 `json:"duration_us"`
	P50US      int64 `json:"p50_us"`
	P99US      int64 `json:"p99_us"`
	Connect    int64 `json:"connect"`
	Read       int64 `json:"read"`
	Write      int64 `json:"write"`
	Status     int64 `json:"status"` // responses with a status >= 400
	Timeout    int64 `json:"timeout"`

	serverCPU time.Duration       // the server's CPU time during the run
	rss       int64               // the server's RSS right after the run
	rssBefore int64               // the flood's: the server's RSS before it opened
	ops       map[string]opResult // a mixed target's figures per operation
	rate      int                 // the open loop's rate (req/s)
}

func (r result) perSecond() float64 {
	return float64(r.Requests) / (float64(r.DurationUS) / 1e6)
}

func (r result) errors() int64 { return r.Connect + r.Read + r.Write + r.Status + r.Timeout }

// resultMarker starts the line the script's done() prints.
const resultMarker = "petstore-bench-result "

// script is t as a wrk Lua script: wrk sends it from each of its threads,
// and done() prints the summary as one JSON line (latencies in µs).
func script(t target) string {
	var b strings.Builder
	fmt.Fprintf(&b, "wrk.method = %q\n", t.method)
	for k, v := range t.headers {
		fmt.Fprintf(&b, "wrk.headers[%q] = %q\n", k, v)
	}
	if t.body != "" {
		fmt.Fprintf(&b, "wrk.body = %q\n", t.body)
	}
	if len(t.paths) > 1 {
		b.WriteString("local paths = {")
		for _, p := range t.paths {
			fmt.Fprintf(&b, "%q,", p)
		}
		b.WriteString("}\nrequest = function() return wrk.format(nil, paths[math.random(#paths)]) end\n")
	}
	b.WriteString(`done = function(s, latency, requests)
  io.write(string.format('` + resultMarker + `{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\n',
    s.requests, s.duration, latency:percentile(50), latency:percentile(99),
    s.errors.connect, s.errors.read, s.errors.write, s.errors.status, s.errors.timeout))
end
`)
	return b.String()
}

// runWrk runs wrk against baseURL+t.paths[0] for d with conns connections
// and threads threads.
func runWrk(dir, baseURL string, t target, conns, threads int, d time.Duration) (result, error) {
	path := filepath.Join(dir, "wrk-"+strings.ReplaceAll(t.name, " ", "-")+".lua")
	if err := os.WriteFile(path, []byte(script(t)), 0o600); err != nil {
		return result{}, err
	}
	secs := max(1, int(d.Round(time.Second)/time.Second))
	cmd := exec.Command("wrk", "-t", strconv.Itoa(threads), "-c", strconv.Itoa(conns), "-d", strconv.Itoa(secs)+"s",
		"--timeout", "10s", "-s", path, baseURL+t.paths[0])
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("wrk %s: %w: %s%s", t.name, err, out, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), resultMarker); ok {
			var r result
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return result{}, fmt.Errorf("wrk %s: %w in %q", t.name, err, line)
			}
			if r.Requests == 0 || r.DurationUS == 0 {
				return result{}, fmt.Errorf("wrk %s sent no request: %s", t.name, out)
			}
			return r, nil
		}
	}
	return result{}, errors.New("wrk " + t.name + " printed no result: " + string(out))
}
