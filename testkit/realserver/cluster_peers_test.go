package realserver_test

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A follower forwards what its own rules decided about a request, signed
// with the cluster's secret, and the leader believes that alone: a
// client's own X-Real-IP, X-Request-Id and forwarding headers never reach
// it through a follower (the issue: with --trusted-proxy-headers
// X-Real-IP, a client's own X-Real-IP passed through a follower), and a
// request naming a forwarding node, sent to the leader itself, is refused.
func TestClusterPeersAreAuthenticated(t *testing.T) {
	c := startCluster(t, 2, "--access-log", "--trusted-proxy-headers", "X-Real-IP")
	key := startLeaderAndFollowers(t, c)
	leader, follower := c.nodes[0], c.nodes[1]
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext,
	}}
	const path = "/v1/pets/123456789012345"

	req, _ := http.NewRequest(http.MethodGet, follower.url()+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Real-IP", "192.0.2.9")
	req.Header.Set("X-Request-Id", "chosen-by-the-client")
	req.Header.Set("Petstore-Forwarded-For", "192.0.2.10")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("Request-Id")
	if resp.StatusCode != http.StatusNotFound || id == "" || id == "chosen-by-the-client" {
		t.Fatalf("GET %s through the follower: %d, Request-Id %q; want the leader's 404 with an id of the follower's", path, resp.StatusCode, id)
	}
	waitUntil(t, 5*time.Second, "the leader logs the request", func() bool { return strings.Contains(leader.output.String(), "path="+path) })
	for line := range strings.SplitSeq(leader.output.String(), "\n") {
		if strings.Contains(line, "path="+path) && (!strings.Contains(line, "client=127.0.0.2 ") || !strings.Contains(line+" ", "requestId="+id+" ")) {
			t.Errorf("the leader's line of a request from 127.0.0.2 through the follower, answered as %s: %s", id, line)
		}
	}

	// Straight to the leader, a request that names a forwarding node: with
	// no MAC, and with one made up.
	for _, auth := range []string{"", "Zm9yZ2Vk"} {
		req, _ := http.NewRequest(http.MethodGet, leader.url()+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Petstore-Forwarded-By", follower.name)
		req.Header.Set("Petstore-Forwarded-For", "192.0.2.9")
		if auth != "" {
			req.Header.Set("Petstore-Forwarded-At", strconv.FormatInt(time.Now().Unix(), 10))
			req.Header.Set("Petstore-Forwarded-Auth", auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		body := string(b)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"not_leader"`) || resp.Header.Get("Request-Id") == "" {
			t.Errorf("a forwarded request with MAC %q straight to the leader: %d %s", auth, resp.StatusCode, body)
		}
	}
	if n := strings.Count(leader.output.String(), "refused a forwarded request that is not authenticated"); n != 1 {
		t.Errorf("the leader logged %d refusals, want 1 (one a minute at most):\n%s", n, leader.output.String())
	}
}
