package cluster_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"petstore/internal/cluster"
	"petstore/testkit/etcdtest"
)

// nodeGoroutines are the goroutines running a method of a cluster Node or
// Data, but the test's own.
func nodeGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if (strings.Contains(g, "petstore/internal/cluster.(*Node)") || strings.Contains(g, "petstore/internal/cluster.(*Data)")) &&
			!strings.Contains(g, "testing.tRunner") {
			found = append(found, g)
		}
	}
	return found
}

// Run returns once every goroutine its sessions started has ended: the
// leader's (its renewals, the guard of its keys, the registration, the
// observer, the watch of the term) and a follower's (its campaign too).
func TestRunEndsEveryGoroutineItStarted(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	nodes := []*testNode{startNode(t, etcd, "a", cluster.Options{}), startNode(t, etcd, "b", cluster.Options{})}
	waitFor(t, 10*time.Second, "a leader", func() bool { return len(leaders(nodes...)) == 1 })
	for _, n := range nodes {
		waitFor(t, 5*time.Second, n.name+" knows the leader", func() bool { return n.Status().Leader != nil })
	}
	if len(nodeGoroutines()) == 0 {
		t.Fatal("no goroutine of a node found while two run: the test reads no stack")
	}
	for _, n := range nodes {
		n.cancel()
		if err := <-n.done; err != nil {
			t.Errorf("%s's Run: %v", n.name, err)
		}
		n.done <- nil // for kill, at the cleanup
	}
	if left := nodeGoroutines(); len(left) != 0 {
		t.Errorf("%d goroutines of the nodes run after both Runs returned:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
