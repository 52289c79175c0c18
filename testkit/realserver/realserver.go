// Package realserver builds the petstore binary and runs it as a separate
// process, for what only a real process shows: kill -9, signals, exit
// status, load from outside. Tests that need less use testkit/apptest.
package realserver

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"petstore/testkit/contract"
)

// TestMain builds the binary into *bin once for a test package, runs its
// tests and exits with their status; under -short it runs none.
func TestMain(m *testing.M, bin *string) {
	ExitIfShort()
	dir, err := os.MkdirTemp("", "petstore-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if *bin, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// ExitIfShort ends the TestMain of a package of real-process tests, which
// build and run the binary, under -short (the fast loop), saying so.
func ExitIfShort() {
	flag.Parse()
	if testing.Short() {
		fmt.Println("-short: the tests of the real binary are skipped")
		os.Exit(0)
	}
}

// Build compiles the petstore command into dir, with the given build tags,
// and returns the binary's path.
func Build(dir string, tags ...string) (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	bin := filepath.Join(dir, "petstore")
	// -buildvcs=auto embeds the commit, as a plain go build in a checkout
	// does, even where GOFLAGS turns it off.
	cmd := exec.Command("go", "build", "-buildvcs=auto", "-tags", strings.Join(tags, ","), "-o", bin, ".")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
}

// Run runs `petstore ARGS --dir DIR` and returns what it printed. A
// non-zero exit status is an *exec.ExitError in err's chain.
func Run(bin, dir string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, slices.Concat(args, []string{"--dir", dir})...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("petstore %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), nil
}

// Keys runs `petstore keys ARGS --dir DIR` and returns what it printed.
func Keys(bin, dir string, args ...string) (stdout, stderr string, err error) {
	return Run(bin, dir, append([]string{"keys"}, args...)...)
}

var createdKey = regexp.MustCompile(`\(id ([a-z0-9]{15}), plan [a-z]+\)`)

// CreateKey runs `keys create ARGS` and returns the key and its record id;
// without --name in ARGS, the key is named "test key". It fails unless the key is alone on stdout and stderr names its id and
// plan without showing it.
func CreateKey(bin, dir string, args ...string) (key, id string, err error) {
	if !slices.Contains(args, "--name") {
		args = append(args, "--name", "test key")
	}
	stdout, stderr, err := Keys(bin, dir, append([]string{"create"}, args...)...)
	if err != nil {
		return "", "", err
	}
	key, _, _ = strings.Cut(stdout, "\n")
	m := createdKey.FindStringSubmatch(stderr)
	if key == "" || stdout != key+"\n" || m == nil || strings.Contains(stderr, key) {
		return "", "", fmt.Errorf("keys create printed stdout %q, stderr %q; want the key alone on stdout, its id and plan without it on stderr", stdout, stderr)
	}
	return key, m[1], nil
}

// Process is a running `petstore serve`.
type Process struct {
	URL  string // http://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT

	cmd    *exec.Cmd
	group  bool // cmd leads a process group of its own (StartUnder)
	output *SyncBuffer
	exited chan struct{}
	client *http.Client
}

// Start runs `petstore serve --http 127.0.0.1:PORT --dir DIR ARGS` on a free
// port and returns once it answers.
func Start(bin, dir string, args ...string) (*Process, error) {
	return StartUnder(nil, bin, dir, args...)
}

// StartUnder is Start with serve run by a supervisor: wrap gets serve's
// command line and returns the supervisor's command (`litestream replicate
// -exec ...`), which StartUnder starts as the leader of a new process group,
// so that Kill ends the supervisor and serve together. A nil wrap runs serve
// itself, as Start does.
func StartUnder(wrap func(serve []string) *exec.Cmd, bin, dir string, args ...string) (*Process, error) {
	var lastErr error
	for range 3 { // the free port may be taken between the probe and the start
		p, err := start(wrap, bin, dir, args)
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// bannerEnd begins the last line of serve's banner (hooks/banner.go);
// startedJSON is in the start event that replaces it with --log-format json.
const (
	bannerEnd   = "└─ PocketBase:"
	startedJSON = `"msg":"petstore started"`
)

func start(wrap func(serve []string) *exec.Cmd, bin, dir string, args []string) (*Process, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()

	p := &Process{
		URL:    "http://" + addr,
		Addr:   addr,
		output: &SyncBuffer{},
		exited: make(chan struct{}),
		client: &http.Client{
			Timeout:   time.Minute,
			Transport: &http.Transport{MaxIdleConnsPerHost: 256},
		},
	}
	serve := append([]string{bin, "serve", "--http", addr, "--dir", dir}, args...)
	if wrap == nil {
		p.cmd = exec.Command(serve[0], serve[1:]...)
	} else {
		p.cmd = wrap(serve)
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p.group = true
	}
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()

	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("petstore serve exited at start: %s", p.Output())
		default:
		}
		// Serving, and done printing its banner, which comes once the
		// listener is up and so may follow the first answer.
		if resp, err := p.client.Get(p.URL + "/api/health"); err == nil {
			resp.Body.Close()
			if out := p.Output(); resp.StatusCode == http.StatusOK && (strings.Contains(out, bannerEnd) || strings.Contains(out, startedJSON)) {
				return p, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Kill()
	return nil, fmt.Errorf("petstore serve did not answer within a minute: %s", p.Output())
}

// CheckContract makes Do and Exchange check every /v1 exchange against the
// OpenAPI document, failing t on any mismatch (testkit/contract). Tests turn
// it on; the load test leaves it off, so that its latencies are the server's.
func (p *Process) CheckContract(t testing.TB) {
	t.Helper()
	p.client.Transport = contract.NewTransport(t, p.client.Transport)
}

// Do sends a request; key, when set, as a bearer token, and body, when set,
// as JSON. It returns the status and the whole response body.
func (p *Process) Do(ctx context.Context, method, path, key string, body []byte) (int, []byte, error) {
	resp, data, err := p.Exchange(ctx, method, path, key, body)
	if resp == nil {
		return 0, nil, err
	}
	return resp.StatusCode, data, err
}

// Exchange is Do returning the whole response, for its headers; its Body is
// already read into the returned bytes and closed. header holds more
// request headers, as name-value pairs.
func (p *Process) Exchange(ctx context.Context, method, path, key string, body []byte, header ...string) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.URL+path, rd)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// PID is the process id, for reading its /proc entries.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
// Under a supervisor (StartUnder) it kills the whole process group at once,
// supervisor and serve, as losing the machine would.
func (p *Process) Kill() {
	select {
	case <-p.exited: // its process group id may be another's by now
	default:
		if p.group {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		} else {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	<-p.exited
	p.client.CloseIdleConnections()
}

// Wait waits at most timeout for the process to exit and returns its exit
// status.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.exited:
		p.client.CloseIdleConnections()
		return p.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		return -1, errors.New("petstore did not exit in time")
	}
}

// Stop sends SIGTERM and waits for a clean exit.
func (p *Process) Stop() error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	code, err := p.Wait(time.Minute)
	if err == nil && code != 0 {
		err = fmt.Errorf("petstore exited with status %d: %s", code, p.Output())
	}
	return err
}

// RSS is the process's resident set size in bytes (Linux's VmRSS).
func (p *Process) RSS() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", p.PID())
}

// Output is what the process wrote on stdout and stderr so far.
func (p *Process) Output() string { return p.output.String() }

// SyncBuffer is an output buffer that goroutines share: a process's
// stdout and stderr, a console log that a test reads.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
