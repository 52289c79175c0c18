package chaos

import (
	"io"
	"net"
	"sync"
)

// proxy is a TCP forwarder the harness owns, between a node and what it
// reaches (an etcd member, a peer): Cut makes a partition of it, Heal ends
// the partition. While cut, it drops the connections it carried and holds
// new ones unanswered (a black hole, as a lost network looks, not a refusal).
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where the node connects: 127.0.0.1:PORT.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		cut := p.cut
		p.mu.Unlock()
		if cut {
			continue // held, unanswered, until Heal closes it
		}
		p.wg.Add(1)
		go p.carry(c)
	}
}

func (p *proxy) carry(c net.Conn) {
	defer p.wg.Done()
	defer p.drop(c)
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer p.drop(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

func (p *proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut starts a partition: every connection carried is dropped, and new ones
// are held unanswered.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal ends the partition: the held connections are closed (their dialers
// try again) and new ones are carried.
func (p *proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		return
	}
	p.cut = false
	for c := range p.conns {
		c.Close()
	}
}

// Close stops the proxy and every connection it holds.
func (p *proxy) Close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
