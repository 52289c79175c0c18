package webhooks

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Client sends one endpoint's deliveries, one request at a time, over one
// HTTP/1.1 connection kept alive between them: no proxy, no redirect
// followed, every address checked before connecting (Targets), every
// attempt bounded by Timeout, connection to answer.
//
// It writes each request and reads its answer in the caller's goroutine,
// with net/http's own Request.Write and ReadResponse. net/http's Transport
// would run two goroutines per connection and hand every request and answer
// between them, which costs about as much CPU again as the exchange itself
// (docs/performance.md); one sender per endpoint, sending one event after
// the other, needs none of its pooling.
type Client struct {
	dial  func(ctx context.Context, network, address string) (net.Conn, error)
	roots *x509.CertPool // nil: the system's

	conn *clientConn // nil: none open
}

type clientConn struct {
	key  string // scheme://host:port
	conn net.Conn
	head *headLimit // between br and conn: bounds what an answer's head reads
	br   *bufio.Reader
	bw   *bufio.Writer
	used time.Time // the end of its last exchange
}

// headLimit reads from a connection, at most left bytes while an answer's
// head (its status line and headers, informational answers included) is
// read: net/http's ReadResponse keeps a header line whole in memory however
// long it is, so an endless one would take the process's memory. Its
// buffered reader reads a little past the head, which counts against the
// limit too.
type headLimit struct {
	conn    net.Conn
	reading bool // an answer's head is being read
	left    int
}

// ErrAnswerHeadTooLong is the error of an answer whose status line and
// headers are longer than answerHeadLimit.
var ErrAnswerHeadTooLong = errors.New("the answer's status line and headers are longer than 64 KiB")

func (h *headLimit) Read(p []byte) (int, error) {
	if !h.reading {
		return h.conn.Read(p)
	}
	if h.left <= 0 {
		return 0, ErrAnswerHeadTooLong
	}
	if len(p) > h.left {
		p = p[:h.left]
	}
	n, err := h.conn.Read(p)
	h.left -= n
	return n, err
}

// The connection's rules.
const (
	// dialTimeout bounds a connection's TCP and TLS handshakes.
	dialTimeout = 5 * time.Second
	// idleTimeout is how long an unused connection is kept.
	idleTimeout = time.Minute
	// answerHeadLimit bounds an answer's status line and headers; the
	// attempt's Timeout bounds the time they take, with the rest.
	answerHeadLimit = 64 << 10
)

// NewClient is a client of deliveries to the targets t allows.
func NewClient(t Targets) *Client {
	return &Client{dial: t.DialContext(&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second})}
}

// Close closes the client's connection.
func (c *Client) Close() {
	if c.conn != nil {
		_ = c.conn.conn.Close()
		c.conn = nil
	}
}

// idle reports whether the client has no connection, or one unused for
// idleTimeout.
func (c *Client) idle(now time.Time) bool {
	return c.conn == nil || now.Sub(c.conn.used) > idleTimeout
}

// Post sends body to target with header (Content-Length and Host added)
// and reads the answer: its status and at most limit bytes of its body.
// err without a status is a failed exchange; with one, a failure to read
// the body. ctx ending ends the exchange. A connection that has served
// before and fails before any answer (the endpoint closed it while it was
// idle) is replaced, and the request sent again, once.
func (c *Client) Post(ctx context.Context, target *url.URL, header http.Header, body string, limit int) (status int, answer []byte, err error) {
	deadline := time.Now().Add(Timeout)
	for try := 0; ; try++ {
		reused := c.conn != nil
		status, answer, err = c.exchange(ctx, target, header, body, limit, deadline)
		if err == nil || status != 0 || !reused || try > 0 || !staleConn(err) || ctx.Err() != nil {
			return status, answer, err
		}
	}
}

// staleConn reports whether err is how a connection closed by its peer
// fails: the write, or the first read, finds it gone.
func staleConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (c *Client) exchange(ctx context.Context, target *url.URL, header http.Header, body string, limit int, deadline time.Time) (int, []byte, error) {
	cc, err := c.connect(ctx, target, deadline)
	if err != nil {
		return 0, nil, err
	}
	keep := false
	defer func() {
		if keep {
			cc.used = time.Now()
		} else {
			c.Close()
		}
	}()
	// ctx's end interrupts any read or write under way.
	defer context.AfterFunc(ctx, func() { _ = cc.conn.SetDeadline(time.Unix(1, 0)) })()
	if err := cc.conn.SetDeadline(deadline); err != nil {
		return 0, nil, err
	}
	req := &http.Request{
		Method: http.MethodPost, URL: target, Host: target.Host, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)),
	}
	if err := req.Write(cc.bw); err != nil {
		return 0, nil, ctxErr(ctx, err)
	}
	if err := cc.bw.Flush(); err != nil {
		return 0, nil, ctxErr(ctx, err)
	}
	resp, err := readHead(cc, req)
	if err != nil {
		return 0, nil, ctxErr(ctx, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return resp.StatusCode, answer, ctxErr(ctx, err)
	}
	// Kept when the answer was read whole and the endpoint keeps it open.
	keep = len(answer) <= limit && !resp.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if len(answer) > limit {
		answer = answer[:limit]
	}
	return resp.StatusCode, answer, nil
}

// readHead reads the final answer's status line and headers, after any
// informational answers, all of them through cc's head limit.
func readHead(cc *clientConn, req *http.Request) (*http.Response, error) {
	cc.head.reading, cc.head.left = true, answerHeadLimit
	defer func() { cc.head.reading = false }()
	resp, err := http.ReadResponse(cc.br, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(cc.br, req) // an informational answer: the final one follows
	}
	return resp, err
}

// ctxErr is ctx's error once it has ended (what interrupted err), else err.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// connect is the client's connection to target's host, dialed (and its TLS
// handshake made, for https) unless it has one, used within idleTimeout.
func (c *Client) connect(ctx context.Context, target *url.URL, deadline time.Time) (*clientConn, error) {
	port := target.Port()
	if port == "" {
		port = "80"
		if target.Scheme == "https" {
			port = "443"
		}
	}
	address := net.JoinHostPort(target.Hostname(), port)
	key := target.Scheme + "://" + address
	if c.conn != nil && (c.conn.key != key || c.idle(time.Now())) {
		c.Close()
	}
	if c.conn != nil {
		return c.conn, nil
	}
	dialCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	conn, err := c.dial(dialCtx, "tcp", address)
	if err != nil {
		return nil, err
	}
	if target.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: target.Hostname(), RootCAs: c.roots})
		hsCtx, cancel := context.WithTimeout(dialCtx, dialTimeout)
		err := tc.HandshakeContext(hsCtx)
		cancel()
		if err != nil {
			_ = conn.Close()
			return nil, err
		}
		conn = tc
	}
	head := &headLimit{conn: conn}
	c.conn = &clientConn{key: key, conn: conn, head: head, br: bufio.NewReader(head), bw: bufio.NewWriter(conn), used: time.Now()}
	return c.conn, nil
}
