// Command bench measures /v1 side by side with PocketBase's own records API
// and its /api/health, on one server: the real petstore binary on a loopback
// port with a fresh data directory, 1,000 seeded pets, an enterprise key whose
// quotas never bind and a superuser token for PocketBase's API. The load of
// the single targets comes from wrk (Debian's wrk, a separate process) with a
// fixed number of connections, each sending its next request when the
// previous one is answered; listPets304 is listPets with the page's ETag in
// If-None-Match, every answer a 304 without a body. The mixed targets send what one key's clients do
// (70 % listPets, 20 % getPet, 10 % createPet; mixedReads without the
// creates) over 100 connections in the same way, from this process
// (mixed.go), and healthMixed loads /api/health so, the floor of their p99;
// openLoop sends the mixed requests at a fixed rate, half of mixed's req/s,
// from this process too (openloop.go); mixedRedis does the mixed target on a second
// server on the same data, which counts rate limits in a redis-server the
// benchmark starts. Every server serves metrics (--metrics-addr), but
// listPetsBare's, a third on the same data: listPets over listPetsBare is
// what metrics cost. listPetsTraced runs on a fourth, with OpenTelemetry's
// tracing on (every request sampled, its spans sent over OTLP/HTTP to a sink
// in this process): listPetsTraced over listPets is what tracing costs.
// listPetsUncounted runs on a fifth, built with the tag usage.uncounted,
// whose usage history counts nothing: listPets' CPU per request over
// listPetsUncounted's is what counting each key's requests costs. Targets run one after the other, in rounds, so that
// each target's figures are the median of runs spread over the whole
// benchmark.
//
// It prints req/s, p50 and p99 latency, the server's CPU time per request
// and its RSS after the run for each target, each operation's p99 in the
// mixed targets, the goals (ratios of targets measured in the same run, the
// open loop's p99, the highest RSS after a target) and the number of pets
// stored at the end. It fails (exit 1) on any error status, socket error or
// timeout, and when a server does not stop cleanly on SIGTERM; a goal not
// met is reported, not a failure (the machine's load decides too much of
// it).
//
//	go run ./tools/bench [-conns 64] [-mixed-conns 100] [-duration 3s] [-rounds 3] [-only listPets,pbList] [-profile listPets] [-request-log errors]
//
// -profile builds the binary with the tags pprof and memory.counters
// (package internal/profiling), which serves net/http/pprof and SQLite's
// memory on a loopback port, saves CPU, mutex and block profiles of the
// named targets' first runs under -profile-dir, and at the end prints
// SQLite's memory and saves a heap profile there.
//
// The cluster targets (cluster.go) run on cluster leaders the benchmark
// starts beside the single server, with one etcd member and a file replica:
// createLeader and createSync are createPet on a leader without and with
// --cluster-sync, mixedLeader the mixed load on the first leader while its
// follower's lag is read; they need Debian's etcd.
//
// The createSub target is createPet while a superuser subscribes to pets
// over PocketBase's realtime API; it fails unless the subscriber hears
// every create (realtime.go). The createFlood target is createPet while 100
// guests' realtime streams from one address subscribe to all they may
// (flood.go): its median against createPet's, and the server's RSS growth. The createHook target is createPet while a
// webhook endpoint on loopback subscribes to pet.created (webhook.go).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
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

	"petstore/testkit/realserver"
)

type config struct {
	conns, mixedConns, threads, rounds, pets int
	duration, warmup, openDuration           time.Duration
	only                                     []string
	profile                                  []string
	profileDir                               string
	requestLog                               string
}

func main() {
	var cfg config
	var only, profile string
	flag.IntVar(&cfg.conns, "conns", 64, "concurrent connections of the single targets")
	flag.IntVar(&cfg.mixedConns, "mixed-conns", 100, "concurrent connections of the mixed targets")
	flag.IntVar(&cfg.threads, "threads", 2, "wrk threads")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "length of each run (whole seconds)")
	flag.IntVar(&cfg.rounds, "rounds", 3, "runs of each target; figures are their medians")
	flag.DurationVar(&cfg.warmup, "warmup", 0, "an unmeasured run of each target before the first round (0: none)")
	flag.IntVar(&cfg.pets, "pets", 1000, "pets seeded before measuring")
	flag.DurationVar(&cfg.openDuration, "open-duration", 8*time.Second, "length of each run of the open loop")
	flag.StringVar(&only, "only", "", "comma-separated targets to run (default: all): "+strings.Join(targetNames, ","))
	flag.StringVar(&profile, "profile", "", "comma-separated targets whose first run is profiled: CPU, mutex and block (builds with -tags pprof)")
	flag.StringVar(&cfg.profileDir, "profile-dir", ".", "where -profile writes TARGET.pprof, TARGET.mutex.pprof and TARGET.block.pprof")
	flag.StringVar(&cfg.requestLog, "request-log", "bounded", "the servers' --request-log")
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
	if profile != "" {
		cfg.profile = strings.Split(profile, ",")
		for _, name := range cfg.profile {
			if !slices.Contains(targetNames, name) {
				fmt.Fprintf(os.Stderr, "bench: unknown target %q to profile\n", name)
				os.Exit(2)
			}
		}
		// One server serves pprof: the first, or the one of a target with a
		// server of its own.
		alone := slices.Contains(cfg.profile, redisTarget) || slices.Contains(cfg.profile, bareTarget) || slices.Contains(cfg.profile, syncTarget) ||
			slices.Contains(cfg.profile, tracedTarget) || slices.Contains(cfg.profile, uncountedTarget)
		onlyLeader := !slices.ContainsFunc(cfg.profile, func(n string) bool { return n != leaderTarget && n != leaderMixedTarget })
		if len(cfg.profile) > 1 && (alone || slices.ContainsFunc(cfg.profile, isClusterTarget) && !onlyLeader) {
			fmt.Fprintf(os.Stderr, "bench: profile %s, %s or %s alone, and the leader's targets (%s, %s) only together\n",
				redisTarget, bareTarget, syncTarget, leaderTarget, leaderMixedTarget)
			os.Exit(2)
		}
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// The targets, in the order each round runs them.
var targetNames = []string{"health", "listPets", notModifiedTarget, bareTarget, tracedTarget, uncountedTarget, "pbList", "getPet", "pbView", "createPet", leaderTarget, syncTarget,
	realtimeTarget, floodTarget, webhookTarget, "pbCreate", healthMixedTarget, "mixedReads", "mixed", openLoopTarget, leaderMixedTarget, redisTarget}

// The servers run with --metrics-addr, as a self-hoster with Prometheus
// runs them, but for bareTarget's. Each target but these two runs on the
// first server.
const (
	// redisTarget runs on a second server, on the same data directory, that
	// counts rate limits in a Redis the benchmark starts.
	redisTarget = "mixedRedis"
	// bareTarget is listPets on a server, on the same data directory,
	// without --metrics-addr: what the metrics cost.
	bareTarget = "listPetsBare"
	// tracedTarget is listPets on a server, on the same data directory,
	// with tracing on: what tracing costs.
	tracedTarget = "listPetsTraced"
	// uncountedTarget is listPets on a server, on the same data directory,
	// built with the tag usage.uncounted: what counting usage costs.
	uncountedTarget = "listPetsUncounted"
	// notModifiedTarget is listPets revalidated: the same page with its
	// ETag in If-None-Match, answered 304 without a body.
	notModifiedTarget = "listPets304"
	// healthMixedTarget is PocketBase's /api/health loaded as the mixed
	// targets are: the p99 of the same connections on the floor.
	healthMixedTarget = "healthMixed"
)

// ratio is a goal: numerator's req/s over denominator's.
type ratio struct {
	what       string
	num, denom string
	goal       float64
}

var ratios = []ratio{
	{"listPets / PocketBase list", "listPets", "pbList", 2.0},
	{"getPet / PocketBase view", "getPet", "pbView", 2.0},
	{"createPet / PocketBase create", "createPet", "pbCreate", 3.0},
	{"listPets / health", "listPets", "health", 1.0},
	{"listPets / without metrics", "listPets", bareTarget, 0.95},
	{"listPets traced / listPets", tracedTarget, "listPets", 0.55},
}

const (
	superuserEmail    = "bench@example.com"
	superuserPassword = "bench-password-1234"
	// maxMixedCPU is the goal for the mixed target's server CPU per request
	// over the weighted sum of its operations' own (listPets, getPet and
	// createPet in the same run).
	maxMixedCPU = 1.15
	// maxMixedP99 is the goal for the mixed target's p99 over healthMixed's.
	maxMixedP99 = 1.0
	// maxWebhookCPU is the goal for the server's CPU per create with a
	// subscribed webhook endpoint (its delivery included) over createPet's.
	maxWebhookCPU = 1.5
	// maxCountingCPU is the goal for listPets' server CPU per request over
	// listPetsUncounted's: counting each key's requests costs at most 3 %.
	maxCountingCPU = 1.03
	// maxRSSAfterRun is the goal for the server's RSS after every target.
	maxRSSAfterRun = 128 << 20
)

func run(cfg config) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is not installed (Debian: apt-get install wrk): %w", err)
	}
	selected := targetNames
	if cfg.only != nil {
		selected = cfg.only
	}
	withRedis := slices.Contains(selected, redisTarget)
	if withRedis {
		if _, err := exec.LookPath("redis-server"); err != nil {
			return fmt.Errorf("redis-server is not installed (Debian: apt-get install redis-server), and %s needs it: %w", redisTarget, err)
		}
	}
	tmp, err := os.MkdirTemp("", "petstore-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var tags []string
	var pprofAddr string
	if cfg.profile != nil {
		tags = append(tags, "pprof", "memory.counters")
		if pprofAddr, err = freeLoopbackAddr(); err != nil {
			return err
		}
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
	// start runs a server on dir, with metrics unless bare; the profiled
	// target's server serves pprof.
	start := func(dir string, profiled, bare bool, args ...string) (*realserver.Process, error) {
		if profiled {
			os.Setenv("PETSTORE_PPROF", pprofAddr)
			defer os.Unsetenv("PETSTORE_PPROF")
		}
		// The health target's flood is no guest's: it measures PocketBase.
		args = append([]string{"--request-log", cfg.requestLog, "--webhooks-allow-private", "--ratelimit-guest", "1000000000"}, args...)
		if !bare {
			metricsAddr, err := freeLoopbackAddr()
			if err != nil {
				return nil, err
			}
			args = append(args, "--metrics-addr", metricsAddr)
		}
		return realserver.Start(bin, dir, args...)
	}
	profiled := func(name string) bool { return slices.Contains(cfg.profile, name) }
	// The cluster targets' servers start first: their leaders' data
	// directories are copies of dir made before any server writes to it.
	var clusters *benchCluster
	if slices.ContainsFunc(selected, isClusterTarget) {
		startNode := func(nodeDir string, args ...string) (*realserver.Process, error) {
			sync := slices.Contains(args, "--cluster-sync")
			return start(nodeDir, sync && profiled(syncTarget) || !sync && (profiled(leaderTarget) || profiled(leaderMixedTarget)), false, args...)
		}
		if clusters, err = startClusters(bin, tmp, dir, startNode); err != nil {
			return err
		}
		defer clusters.kill()
	}
	p, err := start(dir, cfg.profile != nil && !profiled(redisTarget) && !profiled(bareTarget) && !slices.ContainsFunc(cfg.profile, isClusterTarget), false)
	if err != nil {
		return err
	}
	defer p.Kill()
	servers := []*realserver.Process{p}
	serverOf := func(string) *realserver.Process { return p }
	if slices.Contains(selected, bareTarget) {
		pBare, err := start(dir, profiled(bareTarget), true)
		if err != nil {
			return err
		}
		defer pBare.Kill()
		servers = append(servers, pBare)
		serverOf = func(name string) *realserver.Process {
			if name == bareTarget {
				return pBare
			}
			return p
		}
	}
	// The traced target's server, when it runs: the same data, every
	// request a trace, sent to a sink that drops it.
	if slices.Contains(selected, tracedTarget) {
		sink, err := startTraceSink()
		if err != nil {
			return err
		}
		defer sink.Close()
		os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+sink.Addr)
		pTraced, err := start(dir, profiled(tracedTarget), false)
		os.Unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		if err != nil {
			return err
		}
		defer pTraced.Kill()
		servers = append(servers, pTraced)
		others := serverOf
		serverOf = func(name string) *realserver.Process {
			if name == tracedTarget {
				return pTraced
			}
			return others(name)
		}
	}
	// The uncounted target's server, when it runs: the same data, a binary
	// whose usage history counts nothing.
	if slices.Contains(selected, uncountedTarget) {
		uncountedDir := filepath.Join(tmp, "uncounted")
		if err := os.Mkdir(uncountedDir, 0o700); err != nil {
			return err
		}
		uncountedBin, err := realserver.Build(uncountedDir, append(slices.Clone(tags), "usage.uncounted")...)
		if err != nil {
			return err
		}
		counted := bin
		bin = uncountedBin
		pUncounted, err := start(dir, profiled(uncountedTarget), false)
		bin = counted
		if err != nil {
			return err
		}
		defer pUncounted.Kill()
		servers = append(servers, pUncounted)
		others := serverOf
		serverOf = func(name string) *realserver.Process {
			if name == uncountedTarget {
				return pUncounted
			}
			return others(name)
		}
	}
	// The Redis target's server, when it runs: the same data, its rate-limit
	// counters in Redis.
	var pRedis *realserver.Process
	if withRedis {
		redis, err := startRedis(tmp)
		if err != nil {
			return err
		}
		defer redis.stop()
		if pRedis, err = start(dir, profiled(redisTarget), false, "--ratelimit-redis", "redis://"+redis.addr+"/0"); err != nil {
			return err
		}
		defer pRedis.Kill()
		servers = append(servers, pRedis)
		others := serverOf
		serverOf = func(name string) *realserver.Process {
			if name == redisTarget {
				return pRedis
			}
			return others(name)
		}
	}
	if clusters != nil {
		servers = append(servers, clusters.leader, clusters.syncLeader)
		others := serverOf
		serverOf = func(name string) *realserver.Process {
			switch name {
			case leaderTarget, leaderMixedTarget:
				return clusters.leader
			case syncTarget:
				return clusters.syncLeader
			}
			return others(name)
		}
	}
	time.Sleep(time.Second) // let start-up work settle before reading the idle RSS
	idleRSS, err := p.RSS()
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
	if slices.Contains(selected, notModifiedTarget) {
		// The page has a next one: its tag holds while the creates of other
		// targets append pets.
		t := targets["listPets"]
		if t.headers, err = withListTag(p.URL, t.paths[0], t.headers); err != nil {
			return err
		}
		t.name = notModifiedTarget
		targets[notModifiedTarget] = t
	}
	if clusters != nil {
		// The leader's mixed load reads pets of its own.
		leaderIDs, err := seed(clusters.leader.URL, key, cfg.pets)
		if err != nil {
			return err
		}
		forLeader := newTargets(key, token, leaderIDs)
		for name, from := range map[string]string{leaderTarget: "createPet", syncTarget: "createPet", leaderMixedTarget: "mixed"} {
			t := forLeader[from]
			t.name = name
			targets[name] = t
		}
	}

	fmt.Printf("petstore bench: %d pets, --request-log %s, wrk -t%d -c%d, mixed targets over %d connections, %d round(s) of %v per target, %d CPUs, load average %s\n",
		len(ids), cfg.requestLog, cfg.threads, cfg.conns, cfg.mixedConns, cfg.rounds, cfg.duration, runtime.NumCPU(), loadAverage())
	// measure runs a target; what it returns undoes the target's setup
	// (the webhook endpoint), after its CPU time is read.
	results := map[string][]result{}
	// setUp prepares a target's run before its CPU time is read and its
	// profile starts (the flood's streams, whose subscriptions' parsing is
	// the flood's cost, not the creates'); what it returns undoes it.
	var flooding *flood
	setUp := func(name string) (func(), error) {
		if name != floodTarget {
			return func() {}, nil
		}
		f, err := openFlood(serverOf(name).URL, serverOf(name).RSS)
		flooding = f
		if err != nil {
			return nil, err
		}
		return f.close, nil
	}
	measure := func(name string, d time.Duration) (result, func(), error) {
		t, server := targets[name], serverOf(name)
		noop := func() {}
		if name == openLoopTarget {
			mixed := results["mixed"]
			if mixed == nil {
				return result{}, noop, fmt.Errorf("%s runs at half of mixed's req/s: run mixed before it", name)
			}
			rate := max(1, int(median(mixed, result.perSecond)/2))
			r, err := runOpenLoop(server.URL, *t.mix, t.headers, rate, cfg.mixedConns, cfg.openDuration)
			return r, noop, err
		}
		if t.mix != nil {
			if name == leaderMixedTarget {
				ctx, stop := context.WithCancel(context.Background())
				go clusters.sampleLag(ctx)
				defer stop()
			}
			r, err := runMix(server.URL, *t.mix, t.headers, cfg.mixedConns, d)
			return r, noop, err
		}
		if name == realtimeTarget {
			r, err := measureRealtime(tmp, server.URL, token, t, cfg.conns, cfg.threads, d)
			return r, noop, err
		}
		if name == floodTarget {
			r, err := runWrk(tmp, server.URL, t, cfg.conns, cfg.threads, d)
			r.rssBefore = flooding.rssBefore
			return r, noop, err
		}
		if name == webhookTarget {
			return measureWebhook(tmp, server.URL, token, t, cfg.conns, cfg.threads, d)
		}
		r, err := runWrk(tmp, server.URL, t, cfg.conns, cfg.threads, d)
		return r, noop, err
	}
	if cfg.warmup > 0 {
		for _, name := range selected {
			if name == openLoopTarget {
				continue
			}
			tearDown, err := setUp(name)
			if err != nil {
				return err
			}
			_, undo, err := measure(name, cfg.warmup)
			undo()
			tearDown()
			if err != nil {
				return err
			}
		}
	}
	for round := range cfg.rounds {
		for _, name := range selected {
			server := serverOf(name)
			for _, s := range servers {
				if err := waitIdle(s.PID()); err != nil {
					return err
				}
			}
			tearDown, err := setUp(name)
			if err != nil {
				return err
			}
			var profile func() error
			if profiled(name) && round == 0 {
				d := cfg.duration
				switch name {
				case webhookTarget: // and the deliveries after the run
					d += webhookDrain
				case openLoopTarget:
					d = cfg.openDuration
				}
				profile = startProfiles(pprofAddr, d, filepath.Join(cfg.profileDir, name))
			}
			before, err := cpuTime(server.PID())
			if err != nil {
				return err
			}
			r, undo, err := measure(name, cfg.duration)
			if err != nil {
				undo()
				tearDown()
				return fmt.Errorf("%s: %w\n%s", name, err, server.Output())
			}
			after, err := cpuTime(server.PID())
			undo()
			if err != nil {
				tearDown()
				return err
			}
			r.serverCPU = after - before
			// Read before the set-up is undone: the flood's streams count.
			r.rss, err = server.RSS()
			tearDown()
			if err != nil {
				return err
			}
			if r.errors() > 0 {
				return fmt.Errorf("%s: %d errors (connect %d, read %d, write %d, status >= 400 %d, timeout %d)\n%s",
					name, r.errors(), r.Connect, r.Read, r.Write, r.Status, r.Timeout, server.Output())
			}
			if profile != nil {
				if err := profile(); err != nil {
					return err
				}
			}
			results[name] = append(results[name], r)
		}
	}
	afterRSS, err := p.RSS()
	if err != nil {
		return err
	}
	stored, err := countPets(p.URL, token)
	if err != nil {
		return err
	}

	printResults(selected, results)
	fmt.Printf("server RSS %s idle after start, %s after all targets; %d pets stored\n", megabytes(idleRSS), megabytes(afterRSS), stored)
	if pRedis != nil {
		rss, err := pRedis.RSS()
		if err != nil {
			return err
		}
		fmt.Printf("%-30s %7s\n", "RSS of mixedRedis's server", megabytes(rss))
	}
	if clusters != nil {
		clusters.printLag()
	}
	fmt.Printf("load average at the end: %s\n", loadAverage())
	if cfg.profile != nil {
		if err := saveMemory(pprofAddr, cfg.profileDir); err != nil {
			return err
		}
		for _, name := range cfg.profile {
			fmt.Printf("profiles of %s: %s.pprof (CPU), .mutex.pprof, .block.pprof (go tool pprof -top -cum FILE)\n", name, filepath.Join(cfg.profileDir, name))
		}
	}
	if clusters != nil { // before its leader, which would hand over to it
		if err := clusters.stopFollower(); err != nil {
			return err
		}
	}
	for _, s := range slices.Backward(servers) {
		if err := s.Stop(); err != nil {
			return err
		}
	}
	return nil
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
	// What a client of one key does: mostly lists, some reads of one pet,
	// a few creates.
	list := op{name: "listPets", method: http.MethodGet, paths: []string{"/v1/pets?limit=20"}, want: http.StatusOK}
	get := op{name: "getPet", method: http.MethodGet, paths: v1Get, want: http.StatusOK}
	create := op{name: "createPet", method: http.MethodPost, paths: []string{"/v1/pets"}, body: body, want: http.StatusCreated}
	list.weight, get.weight, create.weight = 70, 20, 10
	mixed := &mix{ops: []op{list, get, create}}
	reads := &mix{ops: []op{list, get}}
	ts := []target{
		{name: "health", method: http.MethodGet, paths: []string{"/api/health"}},
		{name: "listPets", method: http.MethodGet, paths: []string{"/v1/pets?limit=20"}, headers: v1},
		{name: bareTarget, method: http.MethodGet, paths: []string{"/v1/pets?limit=20"}, headers: v1},
		{name: tracedTarget, method: http.MethodGet, paths: []string{"/v1/pets?limit=20"}, headers: v1},
		{name: uncountedTarget, method: http.MethodGet, paths: []string{"/v1/pets?limit=20"}, headers: v1},
		{name: "pbList", method: http.MethodGet, paths: []string{"/api/collections/pets/records?perPage=20&skipTotal=1"}, headers: pb},
		{name: "getPet", method: http.MethodGet, paths: v1Get, headers: v1},
		{name: "pbView", method: http.MethodGet, paths: pbGet, headers: pb},
		{name: "createPet", method: http.MethodPost, paths: []string{"/v1/pets"}, headers: v1JSON, body: body},
		{name: realtimeTarget, method: http.MethodPost, paths: []string{"/v1/pets"}, headers: v1JSON, body: body},
		{name: floodTarget, method: http.MethodPost, paths: []string{"/v1/pets"}, headers: v1JSON, body: body},
		{name: webhookTarget, method: http.MethodPost, paths: []string{"/v1/pets"}, headers: v1JSON, body: body},
		{name: "pbCreate", method: http.MethodPost, paths: []string{"/api/collections/pets/records"}, headers: pbJSON, body: body},
		{name: healthMixedTarget, mix: &mix{ops: []op{{name: "health", weight: 1, method: http.MethodGet, paths: []string{"/api/health"}, want: http.StatusOK}}}},
		{name: "mixedReads", mix: reads, headers: v1},
		{name: "mixed", mix: mixed, headers: v1},
		{name: openLoopTarget, mix: mixed, headers: v1},
		{name: redisTarget, mix: mixed, headers: v1},
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
	for _, name := range names {
		rs := results[name]
		if rs[0].ops == nil {
			continue
		}
		fmt.Printf("%-10s p99 per operation:", name)
		for _, o := range slices.Sorted(maps.Keys(rs[0].ops)) {
			var total int64
			for _, r := range rs {
				total += r.ops[o].requests
			}
			fmt.Printf("  %s %v (%d)", o, us(median(rs, func(r result) float64 { return float64(r.ops[o].p99US) })), total)
		}
		fmt.Println()
	}
	fmt.Println()
	printGoals(medians, results)
}

// mixedWeights are the mixed target's operations, each the target that
// measures it alone, and their share of its requests.
var mixedWeights = []struct {
	target string
	weight float64
}{{"listPets", 0.7}, {"getPet", 0.2}, {"createPet", 0.1}}

// printGoals prints each goal whose targets ran: its figure, its bound and
// whether it is met.
func printGoals(medians map[string]float64, results map[string][]result) {
	goal := func(what, got, bound string, met bool) {
		fmt.Printf("%-46s %10s (goal %s) %s\n", what, got, bound, verdict(met))
	}
	for _, r := range ratios {
		num, okNum := medians[r.num]
		denom, okDenom := medians[r.denom]
		if !okNum || !okDenom {
			continue
		}
		got := num / denom
		goal(r.what+" (req/s)", fmt.Sprintf("%.2fx", got), fmt.Sprintf(">= %.2fx", r.goal), got >= r.goal)
	}
	cpu := func(name string) (float64, bool) {
		rs, ok := results[name]
		if !ok {
			return 0, false
		}
		return median(rs, func(r result) float64 { return float64(r.serverCPU.Microseconds()) / float64(r.Requests) }), true
	}
	if mixed, ok := cpu("mixed"); ok {
		var parts float64
		var terms []string
		for _, w := range mixedWeights {
			c, ok := cpu(w.target)
			if !ok {
				parts = 0
				break
			}
			parts += w.weight * c
			terms = append(terms, fmt.Sprintf("%.0f %% %s %v", w.weight*100, w.target, us(c)))
		}
		if parts > 0 {
			got := mixed / parts
			goal("mixed CPU/req / its weighted parts", fmt.Sprintf("%.2fx", got), fmt.Sprintf("<= %.2fx", maxMixedCPU), got <= maxMixedCPU)
			fmt.Printf("  mixed %v a request; its parts %v (%s)\n", us(mixed), us(parts), strings.Join(terms, ", "))
		}
	}
	if counted, ok := cpu("listPets"); ok {
		if uncounted, ok := cpu(uncountedTarget); ok {
			got := counted / uncounted
			goal("listPets CPU/req / "+uncountedTarget, fmt.Sprintf("%.3fx", got), fmt.Sprintf("<= %.2fx", maxCountingCPU), got <= maxCountingCPU)
			fmt.Printf("  listPets %.1f µs of CPU a request counted, %.1f µs uncounted\n", counted, uncounted)
		}
	}
	p99 := func(name string) (float64, bool) {
		rs, ok := results[name]
		if !ok {
			return 0, false
		}
		return median(rs, func(r result) float64 { return float64(r.P99US) }), true
	}
	p50 := func(name string) (float64, bool) {
		rs, ok := results[name]
		if !ok {
			return 0, false
		}
		return median(rs, func(r result) float64 { return float64(r.P50US) }), true
	}
	if mixed, ok := p99("mixed"); ok {
		if health, ok := p99(healthMixedTarget); ok {
			got := mixed / health
			goal("mixed p99 / healthMixed p99", fmt.Sprintf("%.2fx", got), fmt.Sprintf("<= %.2fx", maxMixedP99), got <= maxMixedP99)
		}
	}
	if rs, ok := results[openLoopTarget]; ok {
		met, worst := 0, time.Duration(0)
		for _, r := range rs {
			worst = max(worst, us(float64(r.P99US)))
			if us(float64(r.P99US)) <= maxOpenLoopP99 {
				met++
			}
		}
		goal(fmt.Sprintf("open loop p99 at %d req/s, rounds within", rs[len(rs)-1].rate), fmt.Sprintf("%d of %d", met, len(rs)),
			fmt.Sprintf("<= %v in every round; worst %v", maxOpenLoopP99, worst), met == len(rs))
	}
	if plain, ok := cpu("createPet"); ok {
		for _, g := range []struct {
			what, target string
			goal         float64 // 0: reported, no goal
		}{
			{"createHook / createPet (CPU per create)", webhookTarget, maxWebhookCPU},
			{"createLeader / createPet (CPU per create)", leaderTarget, maxLeaderCPU},
			{"createSync / createPet (CPU per create)", syncTarget, 0},
		} {
			c, ok := cpu(g.target)
			if !ok {
				continue
			}
			got := c / plain
			if g.goal == 0 {
				fmt.Printf("%-46s %10s (no goal)\n", g.what, fmt.Sprintf("%.2fx", got))
				continue
			}
			goal(g.what, fmt.Sprintf("%.2fx", got), fmt.Sprintf("<= %.2fx", g.goal), got <= g.goal)
		}
	}
	if plain, ok := p50("createPet"); ok {
		if flood, ok := p50(floodTarget); ok {
			got := flood / plain
			goal("createFlood p50 / createPet p50", fmt.Sprintf("%.2fx", got), fmt.Sprintf("<= %.2fx", maxFloodP50), got <= maxFloodP50)
		}
	}
	if rs, ok := results[floodTarget]; ok {
		// The highest: the first flood grows the heap that later ones reuse.
		var growth int64
		for _, r := range rs {
			growth = max(growth, r.rss-r.rssBefore)
		}
		goal("server RSS growth under createFlood, highest", megabytes(growth), "<= "+megabytes(maxFloodRSSGrowth), growth <= maxFloodRSSGrowth)
	}
	var highest int64
	var after string
	for name, rs := range results {
		for _, r := range rs {
			if r.rss > highest {
				highest, after = r.rss, name
			}
		}
	}
	goal("server RSS after every target, highest", megabytes(highest), "<= "+megabytes(maxRSSAfterRun)+"; after "+after, highest <= maxRSSAfterRun)
	if health, ok := cpu("health"); ok {
		fmt.Printf("the machine's speed: %v of server CPU per /api/health request\n", us(health))
	}
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT MET"
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

// withListTag is headers with If-None-Match naming the ETag the server at
// baseURL answers path with now, once the server answers them 304 (wrk
// counts any status below 400 as served: a 200 would pass unseen).
func withListTag(baseURL, path string, headers map[string]string) (map[string]string, error) {
	get := func(headers map[string]string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, baseURL+path, nil)
		if err != nil {
			return nil, err
		}
		for name, value := range headers {
			req.Header.Set(name, value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	resp, err := get(headers)
	if err != nil {
		return nil, err
	}
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || etag == "" {
		return nil, fmt.Errorf("GET %s: %s with ETag %q, want 200 with one", path, resp.Status, etag)
	}
	tagged := maps.Clone(headers)
	tagged["If-None-Match"] = etag
	if resp, err = get(tagged); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusNotModified {
		return nil, fmt.Errorf("GET %s with If-None-Match %s: %s, want 304", path, etag, resp.Status)
	}
	return tagged, nil
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

// profileKinds are the profiles -profile takes of a run: pprof's endpoint
// and the file's suffix. The mutex and block profiles are the contention
// during the run (a delta), sampled as internal/profiling sets.
var profileKinds = []struct{ endpoint, suffix string }{
	{"profile", ".pprof"},
	{"mutex", ".mutex.pprof"},
	{"block", ".block.pprof"},
}

// startProfiles starts the profiles of the next d (less a second, so that
// they end within the run) and returns a function that waits for them and
// saves them to prefix and each kind's suffix.
func startProfiles(addr string, d time.Duration, prefix string) func() error {
	secs := max(1, int(d/time.Second)-1)
	done := make(chan error, len(profileKinds))
	for _, kind := range profileKinds {
		go func() {
			done <- saveProfile(fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", addr, kind.endpoint, secs), d+30*time.Second, prefix+kind.suffix)
		}()
	}
	return func() error {
		var errs []error
		for range profileKinds {
			errs = append(errs, <-done)
		}
		return errors.Join(errs...)
	}
}

func saveProfile(url string, timeout time.Duration, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("pprof: status %d: %s", resp.StatusCode, data)
	}
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	return err
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// countPets is the number of pets stored, from PocketBase's records API.
func countPets(baseURL, token string) (int64, error) {
	req, err := http.NewRequest(http.MethodGet, baseURL+"/api/collections/pets/records?perPage=1&fields=id", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var list struct {
		TotalItems int64 `json:"totalItems"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("counting pets: status %d, %v", resp.StatusCode, err)
	}
	return list.TotalItems, nil
}

// saveMemory prints the profiled server's SQLite memory (/debug/sqlite) and
// saves its Go heap profile in dir, after a garbage collection.
func saveMemory(addr, dir string) error {
	get := func(path string) ([]byte, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: status %d: %s", path, resp.StatusCode, data)
		}
		return data, err
	}
	sqlite, err := get("/debug/sqlite")
	if err != nil {
		return err
	}
	fmt.Printf("SQLite memory of the profiled server (bytes):\n%s", sqlite)
	heap, err := get("/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "heap.pprof")
	if err := os.WriteFile(path, heap, 0o644); err != nil {
		return err
	}
	fmt.Printf("heap profile after the run: %s (go tool pprof -sample_index=inuse_space -top FILE)\n", path)
	return nil
}
