package realserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Node is one `petstore serve` of a cluster, on a port and a data directory
// that stay its own across restarts: Start, Kill, Start again. It needs no
// testing.T, so that a tool (tools/chaos) runs nodes as tests do.
type Node struct {
	Name string
	Dir  string // --dir
	Addr string // --http, 127.0.0.1:PORT

	bin  string
	args []string // serve's flags but --http and --dir
	// output holds what every run of the node printed, each run after a
	// line naming it.
	output SyncBuffer
	client *http.Client

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	runs   int
}

// NewNode makes a node of the binary bin named name, listening on addr
// (FreeAddr), with its data in dir and more serve flags args; Start runs
// it.
func NewNode(bin, name, dir, addr string, args ...string) *Node {
	return &Node{Name: name, Dir: dir, Addr: addr, bin: bin, args: args,
		client: &http.Client{Timeout: 2 * time.Second}}
}

// FreeAddr is a loopback address whose port is free now.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// URL is the node's own address, http://127.0.0.1:PORT.
func (n *Node) URL() string { return "http://" + n.Addr }

// Start runs the node, which must not be running, and returns once it
// answers /healthz (within 30 s).
func (n *Node) Start() error {
	n.mu.Lock()
	n.runs++
	fmt.Fprintf(&n.output, "--- %s: run %d ---\n", n.Name, n.runs)
	cmd := exec.Command(n.bin, slices.Concat([]string{"serve", "--http", n.Addr, "--dir", n.Dir}, n.args)...)
	cmd.Stdout, cmd.Stderr = &n.output, &n.output
	// A harness killed before it stops its nodes leaves none behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		return err
	}
	exited := make(chan struct{})
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	go func() { _ = cmd.Wait(); close(exited) }()

	deadline := time.Now().Add(30 * time.Second)
	for {
		if status, _ := n.Get("/healthz"); status == http.StatusOK {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited at start", n.Name)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer /healthz after 30 s", n.Name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Running says whether the node's process runs (paused included).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.exited == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Signal sends sig to the running node.
func (n *Node) Signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return errors.New(n.Name + " never started")
	}
	return n.cmd.Process.Signal(sig)
}

// Kill ends the node with SIGKILL, as a crash would (a paused one too),
// and waits for it to exit; a node that is not running is left as it is.
func (n *Node) Kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
	default:
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// Output is what every run of the node printed so far.
func (n *Node) Output() string { return n.output.String() }

// Get sends GET path to the node itself and returns the status (0: no
// answer within 2 s) and the body.
func (n *Node) Get(path string) (int, string) {
	resp, err := n.client.Get(n.URL() + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Leads says whether the node answers /readyz 200 as the leader.
func (n *Node) Leads() bool {
	status, body := n.Get("/readyz")
	return status == http.StatusOK && strings.Contains(body, `"role":"leader"`)
}

// WriteSecret writes a cluster secret (--cluster-secret-file) into a new
// file of dir, readable by its owner alone, and returns its path.
func WriteSecret(dir string) (string, error) {
	path := dir + "/cluster-secret"
	return path, os.WriteFile(path, []byte("the test cluster's secret, 32 bytes and more\n"), 0o600)
}
