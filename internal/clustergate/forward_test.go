package clustergate

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/cluster"
	"petstore/internal/requestid"
)

const testSecret = "the test cluster's secret, 32 bytes and more"

// peerNode is a node that never talks to etcd, holding secret (none: it
// runs with --cluster-insecure-peers).
func peerNode(name, secret string) *cluster.Node {
	cfg := cluster.Config{Endpoints: []string{"http://127.0.0.1:1"}, Name: "test", NodeName: name,
		AdvertiseURL: "http://10.0.0.1:8090", TTL: 2 * time.Second}
	if secret != "" {
		cfg.Secret = []byte(secret)
	}
	return cluster.New(cfg, slog.New(slog.DiscardHandler), cluster.Options{})
}

// forwarded is a request as a follower's gate sends it to the leader, at
// sent.
func forwarded(follower *cluster.Node, sent time.Time) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://shop.example.org/v1/pets?x=1", strings.NewReader(`{"name":"Rex"}`))
	r.RemoteAddr = "10.0.0.2:40000"
	r.RequestURI = "" // as the follower sends it
	r.Header.Set(ForwardedByHeader, follower.Name())
	r.Header.Set(ForwardedForHeader, "192.0.2.7")
	r.Header.Set(requestid.Header, "chosen-by-the-follower")
	r.Header.Set("X-Forwarded-Host", "shop.example.org")
	r.Header.Set("X-Forwarded-Proto", "https")
	signForward(follower, r, sent)
	return r
}

func TestForwardedRequestsAreBelievedOnlyWhenAuthenticated(t *testing.T) {
	follower, leader := peerNode("b", testSecret), peerNode("a", testSecret)
	now := time.Now()

	f, named, err := VerifyForward(leader, forwarded(follower, now), now)
	if err != nil || !named || f != (Forwarded{By: "b", Client: "192.0.2.7", RequestID: "chosen-by-the-follower"}) {
		t.Fatalf("a request the follower signed: %+v named %v, %v", f, named, err)
	}
	// As the leader receives it, whose server may rewrite its URL before the
	// check (an unclean path, /v1//pets, is routed to /v1's 404).
	received := forwarded(follower, now)
	received.RequestURI, received.URL.Path = received.URL.RequestURI(), "/v1/"
	if _, _, err := VerifyForward(leader, received, now); err != nil {
		t.Errorf("a request whose URL the leader's server rewrote: %v", err)
	}
	if _, named, err := VerifyForward(leader, httptest.NewRequest(http.MethodGet, "/v1/pets", nil), now); named || err != nil {
		t.Errorf("a request that names no forwarding node: named %v, %v", named, err)
	}

	for _, tc := range []struct {
		name   string
		change func(r *http.Request)
		at     time.Time // the leader's clock
		why    string
	}{
		{"another client address", func(r *http.Request) { r.Header.Set(ForwardedForHeader, "198.51.100.1") }, now, "MAC does not verify"},
		{"another request id", func(r *http.Request) { r.Header.Set(requestid.Header, "mine") }, now, "MAC does not verify"},
		{"another forwarding node", func(r *http.Request) { r.Header.Set(ForwardedByHeader, "c") }, now, "MAC does not verify"},
		{"another path", func(r *http.Request) { r.URL.Path = "/v1/keys" }, now, "MAC does not verify"},
		{"another path received", func(r *http.Request) { r.RequestURI = "/v1/keys?x=1" }, now, "MAC does not verify"},
		{"another query", func(r *http.Request) { r.URL.RawQuery = "x=2" }, now, "MAC does not verify"},
		{"another method", func(r *http.Request) { r.Method = http.MethodDelete }, now, "MAC does not verify"},
		{"another host", func(r *http.Request) { r.Host = "evil.example" }, now, "MAC does not verify"},
		{"another scheme", func(r *http.Request) { r.Header.Set("X-Forwarded-Proto", "http") }, now, "MAC does not verify"},
		{"another time", func(r *http.Request) { r.Header.Set(ForwardedAtHeader, strconv.FormatInt(now.Unix()-1, 10)) }, now, "MAC does not verify"},
		{"no MAC", func(r *http.Request) { r.Header.Del(ForwardedAuthHeader) }, now, "no MAC"},
		{"a MAC and nothing else", func(r *http.Request) {
			for _, h := range []string{ForwardedByHeader, ForwardedForHeader, ForwardedAtHeader} {
				r.Header.Del(h)
			}
		}, now, "no time"},
		{"no time", func(r *http.Request) { r.Header.Del(ForwardedAtHeader) }, now, "no time"},
		{"replayed 31 s later", func(*http.Request) {}, now.Add(31 * time.Second), "off this node's clock"},
		{"sent 31 s ahead", func(*http.Request) {}, now.Add(-31 * time.Second), "off this node's clock"},
	} {
		r := forwarded(follower, now)
		tc.change(r)
		_, named, err := VerifyForward(leader, r, tc.at)
		if !named || !errors.Is(err, ErrUnauthenticatedForward) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: named %v, %v; want refused: %s", tc.name, named, err, tc.why)
		}
	}
	if _, _, err := VerifyForward(leader, forwarded(peerNode("b", testSecret+" but another"), now), now); err == nil {
		t.Error("a request signed with another secret is believed")
	}
	if _, _, err := VerifyForward(leader, forwarded(peerNode("b", ""), now), now); err == nil || !strings.Contains(err.Error(), "no MAC") {
		t.Errorf("a request from a node without the secret: %v", err)
	}
	// Without the secret, nothing is verified, as before it.
	if _, named, err := VerifyForward(peerNode("a", ""), forwarded(follower, now), now); named || err != nil {
		t.Errorf("a node without the secret: named %v, %v", named, err)
	}
}
