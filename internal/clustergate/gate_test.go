package clustergate

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"petstore/internal/cluster"
)

// statusNode is a node whose view of the cluster is status.
type statusNode struct{ status cluster.Status }

func (n statusNode) Name() string                 { return "b" }
func (n statusNode) Status() cluster.Status       { return n.status }
func (n statusNode) Authenticated() bool          { return false }
func (n statusNode) MAC(string, ...string) string { return "" }

// A follower's /readyz says when the leader last said that the replica
// lacks its latest commits: a failover would lose them.
func TestReadyzSaysTheReplicaLacksTheLeadersCommits(t *testing.T) {
	leader := &cluster.LeaderInfo{Node: "a", URL: "http://10.0.0.1:8090", Term: 7}
	for _, tc := range []struct {
		unshipped time.Duration
		want      string
	}{
		{0, "This node is a follower; the leader is a at http://10.0.0.1:8090 (term 7)."},
		{9 * time.Second, "This node is a follower; the leader is a at http://10.0.0.1:8090 (term 7). " +
			"The leader last said its commits of the last 9s were not in the replica: a failover would lose them."},
	} {
		node := statusNode{cluster.Status{Role: cluster.Follower, Leader: leader, LeaderUnshipped: tc.unshipped}}
		rec := httptest.NewRecorder()
		New(node, nil, 0, slog.New(slog.DiscardHandler)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		var body struct{ Code, Message string }
		if err := json.NewDecoder(rec.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if rec.Code != http.StatusServiceUnavailable || body.Code != "not_ready" || body.Message != tc.want {
			t.Errorf("unshipped %s: /readyz %d %+v, want 503 not_ready %q", tc.unshipped, rec.Code, body, tc.want)
		}
	}
}
