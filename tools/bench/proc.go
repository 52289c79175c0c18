package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpuTime is the user plus system CPU time process pid has used so far.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	_, rest, ok := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
	}
	// utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

func megabytes(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }

// waitIdle waits, at most 10 s, until process pid uses less than 5 % of a
// CPU, so that work left over from one target (PocketBase writing the request
// log of 20,000 health checks a second, say) is not measured in the next.
func waitIdle(pid int) error {
	const step = 200 * time.Millisecond
	prev, err := cpuTime(pid)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(step)
		now, err := cpuTime(pid)
		if err != nil {
			return err
		}
		if now-prev < step/20 {
			return nil
		}
		prev = now
	}
	return nil
}

// redisServer is a redis-server the benchmark started.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
}

// startRedis runs redis-server on a free loopback port, without persistence,
// and returns once it answers PING.
func startRedis(dir string) (*redisServer, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &redisServer{addr: addr, cmd: cmd}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ping(addr) {
			return r, nil
		}
	}
	r.stop()
	return nil, fmt.Errorf("redis-server on %s did not answer PING within 30 s", addr)
}

func ping(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	reply := make([]byte, 7)
	n, _ := io.ReadFull(conn, reply)
	return string(reply[:n]) == "+PONG\r\n"
}

// stop ends the redis-server it started, by its process id.
func (r *redisServer) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	_ = r.cmd.Wait()
}

// startTraceSink serves OTLP/HTTP's /v1/traces on a loopback port, reading
// and dropping every export: the traced server's collector.
func startTraceSink() (*http.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Addr: ln.Addr().String(), ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/x-protobuf")
		})}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}
