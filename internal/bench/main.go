// Command bench measures /v1 side by side with PocketBase's own records API
// and its /api/health, on one server: the real petstore binary on a loopback
// port with a fresh data directory, 1,000 seeded pets, an enterprise key whose
// quotas never bind and a superuser token for PocketBase's API. The load
// comes from wrk (Debian's wrk, a separate process) with a fixed number of
// connections, each sending its next request when the previous one is
// answered. Targets run one after the other, in rounds, so that each target's
// figures are the median of runs spread over the whole benchmark.
//
// It prints req/s, p50 and p99 latency and the server's CPU time per request
// for each target, the ratios the project aims for, and the server's RSS idle
// and after the run. It fails (exit 1) on any error status, socket error or
// timeout, and when the server does not stop cleanly on SIGTERM; missing a
// ratio target is reported, not a failure (the machine's load decides too
// much of it).
//
//	go run ./internal/bench [-conns 64] [-duration 3s] [-rounds 3] [-only listPets,pbList] [-profile listPets] [-request-log errors]
//
// -profile builds the binary with the tag pprof (package internal/profiling),
// which serves net/http/pprof on a loopback port, and saves a CPU
// profile of the named target's first run under -profile-dir.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"petstore/internal/realserver"
)

type config struct {
	conns, threads, rounds, pets int
	duration, warmup             time.Duration
	only                         []string
	profile, profileDir          string
	requestLog                   string
}

func main() {
	var cfg config
	var only string
	flag.IntVar(&cfg.conns, "conns", 64, "concurrent connections")
	flag.IntVar(&cfg.threads, "threads", 2, "wrk threads")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "length of each run (whole seconds)")
	flag.IntVar(&cfg.rounds, "rounds", 3, "runs of each target; figures are their medians")
	flag.DurationVar(&cfg.warmup, "warmup", 0, "an unmeasured run of each target before the first round (0: none)")
	flag.IntVar(&cfg.pets, "pets", 1000, "pets seeded before measuring")
	flag.StringVar(&only, "only", "", "comma-separated targets to run (default: all): "+strings.Join(targetNames, ","))
	flag.StringVar(&cfg.profile, "profile", "", "save a CPU profile of this target's first run (builds with -tags pprof)")
	flag.StringVar(&cfg.profileDir, "profile-dir", ".", "where -profile writes TARGET.pprof")
	flag.StringVar(&cfg.requestLog, "request-log", "all", "the server's --request-log")
	flag.Parse()
	if only != "" {
		cfg.only = strings.Split(only, ",")
		for _, name := range cfg.only {
			if !slices.Contains(targetNames, name) {
				fmt.Fprintf(os.Stderr, "bench: unknown target %q (targets: %s)\n", name, strings.Join(targetNames, ","))
				os.Exit(2)
			}
		}
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// The targets, in the order each round runs them.
var targetNames = []string{"health", "listPets", "pbList", "getPet", "pbView", "createPet", "pbCreate"}

// ratio is a goal: numerator's req/s over denominator's.
type ratio struct {
	what       string
	num, denom string
	goal       float64
}

var ratios = []ratio{
	{"listPets / PocketBase list", "listPets", "pbList", 2.0},
	{"getPet / PocketBase view", "getPet", "pbView", 2.0},
	{"createPet / PocketBase create", "createPet", "pbCreate", 1.5},
	{"listPets / health", "listPets", "health", 0.5},
}

const (
	superuserEmail    = "bench@example.com"
	superuserPassword = "bench-password-1234"
	maxRSSAfterRun    = 150 << 20
)

func run(cfg config) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is not installed (Debian: apt-get install wrk): %w", err)
	}
	tmp, err := os.MkdirTemp("", "petstore-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var tags []string
	var pprofAddr string
	if cfg.profile != "" {
		tags = append(tags, "pprof", "memory.counters")
		if pprofAddr, err = freeLoopbackAddr(); err != nil {
			return err
		}
		os.Setenv("PETSTORE_PPROF", pprofAddr)
	}
	bin, err := realserver.Build(tmp, tags...)
	if err != nil {
		return err
	}
	dir := filepath.Join(tmp, "pb_data")
	key, _, err := realserver.CreateKey(bin, dir, "--plan", "enterprise", "--per-minute", "1000000000", "--per-day", "1000000000")
	if err != nil {
		return err
	}
	if _, _, err := realserver.Run(bin, dir, "superuser", "upsert", superuserEmail, superuserPassword); err != nil {
		return err
	}
	p, err := realserver.Start(bin, dir, "--request-log", cfg.requestLog)
	if err != nil {
		return err
	}
	defer p.Kill()
	time.Sleep(time.Second) // let start-up work settle before reading the idle RSS
	idleRSS, err := rssBytes(p.PID())
	if err != nil {
		return err
	}

	token, err := superuserToken(p.URL)
	if err != nil {
		return err
	}
	ids, err := seed(p.URL, key, cfg.pets)
	if err != nil {
		return err
	}
	targets := newTargets(key, token, ids)

	fmt.Printf("petstore bench: %d pets, --request-log %s, wrk -t%d -c%d, %d round(s) of %v per target, %d CPUs, load average %s\n",
		len(ids), cfg.requestLog, cfg.threads, cfg.conns, cfg.rounds, cfg.duration, runtime.NumCPU(), loadAverage())
	selected := targetNames
	if cfg.only != nil {
		selected = cfg.only
	}
	if cfg.warmup > 0 {
		for _, name := range selected {
			if _, err := runWrk(tmp, p.URL, targets[name], cfg.conns, cfg.threads, cfg.warmup); err != nil {
				return err
			}
		}
	}
	results := map[string][]result{}
	for round := range cfg.rounds {
		for _, name := range selected {
			var profile func() error
			if name == cfg.profile && round == 0 {
				profile = startProfile(pprofAddr, cfg.duration, filepath.Join(cfg.profileDir, name+".pprof"))
			}
			if err := waitIdle(p.PID()); err != nil {
				return err
			}
			before, err := cpuTime(p.PID())
			if err != nil {
				return err
			}
			r, err := runWrk(tmp, p.URL, targets[name], cfg.conns, cfg.threads, cfg.duration)
			if err != nil {
				return err
			}
			after, err := cpuTime(p.PID())
			if err != nil {
				return err
			}
			r.serverCPU = after - before
			if r.rss, err = rssBytes(p.PID()); err != nil {
				return err
			}
			if r.errors() > 0 {
				return fmt.Errorf("%s: %d errors (connect %d, read %d, write %d, status >= 400 %d, timeout %d)\n%s",
					name, r.errors(), r.Connect, r.Read, r.Write, r.Status, r.Timeout, p.Output())
			}
			if profile != nil {
				if err := profile(); err != nil {
					return err
				}
			}
			results[name] = append(results[name], r)
		}
	}
	afterRSS, err := rssBytes(p.PID())
	if err != nil {
		return err
	}

	printResults(selected, results)
	fmt.Printf("server RSS: %s idle after start, %s after the run (goal <= %s)\n",
		megabytes(idleRSS), megabytes(afterRSS), megabytes(maxRSSAfterRun))
	fmt.Printf("load average at the end: %s\n", loadAverage())
	if cfg.profile != "" {
		fmt.Printf("CPU profile of %s: %s (go tool pprof -top -cum FILE)\n", cfg.profile, filepath.Join(cfg.profileDir, cfg.profile+".pprof"))
	}
	return p.Stop()
}

func newTargets(key, token string, ids []string) map[string]target {
	v1 := map[string]string{"Authorization": "Bearer " + key}
	v1JSON := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
	pb := map[string]string{"Authorization": token}
	pbJSON := map[string]string{"Authorization": token, "Content-Type": "application/json"}
	const body = `{"name":"bench","categoryId":1,"status":"available"}`
	var v1Get, pbGet []string
	for _, id := range ids {
		v1Get = append(v1Get, "/v1/pets/"+id)
		pbGet = append(pbGet, "/api/collections/pets/records/"+id)
	}
	ts := []target{
		{name: "health", method: http.MethodGet, paths: []string{"/api/health"}},
		{name: "listPets", method: http.MethodGet, paths: []string{"/v1/pets?limit=20"}, headers: v1},
		{name: "pbList", method: http.MethodGet, paths: []string{"/api/collections/pets/records?perPage=20&skipTotal=1"}, headers: pb},
		{name: "getPet", method: http.MethodGet, paths: v1Get, headers: v1},
		{name: "pbView", method: http.MethodGet, paths: pbGet, headers: pb},
		{name: "createPet", method: http.MethodPost, paths: []string{"/v1/pets"}, headers: v1JSON, body: body},
		{name: "pbCreate", method: http.MethodPost, paths: []string{"/api/collections/pets/records"}, headers: pbJSON, body: body},
	}
	m := map[string]target{}
	for _, t := range ts {
		m[t.name] = t
	}
	return m
}

func printResults(names []string, results map[string][]result) {
	fmt.Printf("\n%-10s %10s %9s %9s %14s %9s %10s\n", "target", "req/s", "p50", "p99", "server CPU/req", "requests", "RSS after")
	medians := map[string]float64{}
	for _, name := range names {
		rs := results[name]
		rps := median(rs, func(r result) float64 { return r.perSecond() })
		medians[name] = rps
		var total int64
		for _, r := range rs {
			total += r.Requests
		}
		fmt.Printf("%-10s %10.0f %9v %9v %14v %9d %10s\n", name, rps,
			us(median(rs, func(r result) float64 { return float64(r.P50US) })),
			us(median(rs, func(r result) float64 { return float64(r.P99US) })),
			us(median(rs, func(r result) float64 { return float64(r.serverCPU.Microseconds()) / float64(r.Requests) })),
			total, megabytes(rs[len(rs)-1].rss))
	}
	fmt.Println()
	for _, r := range ratios {
		num, okNum := medians[r.num]
		denom, okDenom := medians[r.denom]
		if !okNum || !okDenom {
			continue
		}
		got := num / denom
		verdict := "met"
		if got < r.goal {
			verdict = "BELOW GOAL"
		}
		fmt.Printf("%-30s %5.2fx (goal >= %.1fx) %s\n", r.what, got, r.goal, verdict)
	}
}

func median(rs []result, f func(result) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

func us(v float64) time.Duration {
	return (time.Duration(v * float64(time.Microsecond))).Round(time.Microsecond)
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:3], " ")
}

func superuserToken(baseURL string) (string, error) {
	body, _ := json.Marshal(map[string]string{"identity": superuserEmail, "password": superuserPassword})
	resp, err := http.Post(baseURL+"/api/collections/_superusers/auth-with-password", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var auth struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&auth); err != nil || resp.StatusCode != http.StatusOK || auth.Token == "" {
		return "", fmt.Errorf("superuser sign-in: status %d, %v", resp.StatusCode, err)
	}
	return auth.Token, nil
}

// seed creates n pets through /v1 and returns their ids.
func seed(baseURL, key string, n int) ([]string, error) {
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				ids[i], errs[i] = createPet(baseURL, key, i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func createPet(baseURL, key string, i int) (string, error) {
	statuses := []string{"available", "pending", "sold"}
	body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("pet %d", i), "categoryId": 1 + i%10, "status": statuses[i%3]})
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/pets", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var pet struct {
		ID int64 `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&pet); err != nil || resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("seeding: status %d, %v", resp.StatusCode, err)
	}
	return fmt.Sprint(pet.ID), nil
}

// startProfile starts a CPU profile of the next d (less a second, so that
// it ends within the run) and returns a function that waits for it and
// saves it to path.
func startProfile(addr string, d time.Duration, path string) func() error {
	secs := max(1, int(d/time.Second)-1)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("pprof: status %d: %s", resp.StatusCode, data)
		}
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		done <- err
	}()
	return func() error { return <-done }
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
