package clustergate

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Follower serves the gate on --http's listener while the node does not
// lead; once it does, it hands the listener, open, to PocketBase: clients
// keep connecting to the same address, and those waiting in the listen
// queue are served by the leader.
type Follower struct {
	listener *handoffListener
	server   *http.Server
	done     chan struct{}
}

// Serve serves server (the gate, behind the public listener's timeouts) on
// ln, whose connections guard bounds (the public listener's bounds,
// connlimit.Limiter.Wrap), until Handover or Close.
func Serve(ln *net.TCPListener, server *http.Server, guard func(net.Listener) net.Listener) *Follower {
	f := &Follower{listener: &handoffListener{TCPListener: ln}, server: server, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		_ = server.Serve(guard(f.listener))
	}()
	return f
}

// Handover stops the gate taking connections, lets those it took finish
// (for at most 2 s), and returns the listener, open, for PocketBase: the
// connections waiting in its listen queue are PocketBase's to accept.
func (f *Follower) Handover(ctx context.Context) net.Listener {
	f.listener.detach(f.done)
	shutdown, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := f.server.Shutdown(shutdown); err != nil {
		_ = f.server.Close()
	}
	return f.listener.TCPListener
}

// Close closes the gate and its listener, unless handed over.
func (f *Follower) Close() error {
	err := f.server.Close()
	<-f.done
	return err
}

// handoffListener is the listener the gate serves on until the node leads;
// then the gate lets it go, open, for PocketBase.
type handoffListener struct {
	*net.TCPListener
	mu       sync.Mutex
	detached bool
}

func (l *handoffListener) Accept() (net.Conn, error) {
	conn, err := l.TCPListener.Accept()
	l.mu.Lock()
	detached := l.detached
	l.mu.Unlock()
	if detached {
		if conn != nil {
			return conn, nil // taken before the handover: the gate answers it
		}
		return nil, net.ErrClosed
	}
	return conn, err
}

// Close closes the listener while the gate has it; once handed over, it
// leaves it open: PocketBase closes it.
func (l *handoffListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.detached {
		return nil
	}
	return l.TCPListener.Close()
}

// detach ends the gate's Accept and waits until the gate no longer
// accepts (done), then clears the deadline that ended it.
func (l *handoffListener) detach(done <-chan struct{}) {
	l.mu.Lock()
	l.detached = true
	l.mu.Unlock()
	_ = l.SetDeadline(time.Now())
	<-done
	_ = l.SetDeadline(time.Time{})
}
