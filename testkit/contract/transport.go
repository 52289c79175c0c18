package contract

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
)

// Transport is an http.RoundTripper that checks every exchange the document
// covers (see Check), failing the test that sent it (see ReportTo), or else
// the transport's, on any mismatch. It fails the test with Errorf, so it may
// be used from any goroutine, and returns the response either way, its body
// read and replayable.
type Transport struct {
	t        testing.TB
	contract *Contract
	next     http.RoundTripper
}

// NewTransport returns next (http.DefaultTransport if nil) checking every
// exchange against the document and failing t on any mismatch.
func NewTransport(t testing.TB, next http.RoundTripper) *Transport {
	t.Helper()
	if next == nil {
		next = http.DefaultTransport
	}
	return &Transport{t: t, contract: Load(t), next: next}
}

type reportToKey struct{}

// ReportTo makes contract failures of req fail t: the subtest or fuzz target
// that sent it rather than the test that made the transport (a fuzz target
// must not fail its testing.F).
func ReportTo(req *http.Request, t testing.TB) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), reportToKey{}, t))
}

func (c *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !Covers(req) {
		return c.next.RoundTrip(req)
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))

	if err := c.contract.Check(req, resp, body); err != nil {
		t, ok := req.Context().Value(reportToKey{}).(testing.TB)
		if !ok {
			t = c.t
		}
		t.Error(err)
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the transport below,
// for http.Client.CloseIdleConnections.
func (c *Transport) CloseIdleConnections() {
	if ci, ok := c.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
